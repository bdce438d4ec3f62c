"""The compressed archive of past turns: `memory/memory.json`, fed back into every pack.

Level-1 entries each summarise a run of turns and list their ids; an entry at level k+1
summarises a run of level-k entries and lists theirs. Nothing is ever removed: a turn is
either live (after the watermark, read straight from history.jsonl) or covered by exactly one
level-1 entry, and every entry is covered by at most one entry a level up. The entries no
other entry covers, the frontier, together cover the whole compacted past once.

The state is memory.json, replaced atomically, so a crash leaves the old archive or the new
one; it holds the frontier and the newest entries, and lists the sealed parts that hold the
rest (lore.core.memory_sealed), written once each before the memory.json that names them.
A compaction reads memory.json alone (`MemoryStore.head`); every other reader, every entry.

Entries are plain dataclasses, read back as the turns are (lore.core.record_fields): every ask
reads the archive, and importing pydantic and building its models cost an ask more than the
rest of its start. An archive as Lore writes it is taken as it is; any other is validated by
pydantic, imported only then.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import field
from pathlib import Path
from typing import Any

from lore.core import record_fields as read
from lore.core.dataclass_lite import dataclass_own_init
from lore.core.derived_state import read_saved, save
from lore.core.history import HistoryStore, decode_turn
from lore.core.json_decode import decode_json
from lore.core.memory_sealed import (
    Candidate,
    SealedPart,
    SealedPartDamaged,
    check_parts,
    read_parts,
    remove_unnamed,
    seal,
)
from lore.core.record_fields import ABSENT, RecordError
from lore.core.storage import atomic_write_stream, file_identity, read_regular_bytes, settled
from lore.core.turns import Turn
from lore.core.utf8_safe import writable_json
from lore.core.vault import Vault
from lore.errors import VaultError

# 2: the oldest entries may be in sealed parts (lore.core.memory_sealed) that it lists.
MEMORY_RECORD_VERSION = 2
MEMORY_FILE_NAME = "memory.json"
# Far beyond what memory.json holds since its covered entries are sealed in parts; an
# archive of the first form kept every entry there (15.6 MB for 100,000 turns).
MAX_ARCHIVE_BYTES = 1 << 30
# How far back a conversation's live turns are looked for among everyone's.
CONVERSATION_LOOKBACK = 256

# Parsed archives by file, so every pack in a process does not re-read a large archive.
# An entry is used only while the file's inode, mtime and size are unchanged.
_Stamp = tuple[int, int, int]
_parsed: dict[Path, tuple[_Stamp, MemoryState, str | None]] = {}
_parsed_guard = threading.Lock()


@dataclass_own_init(slots=True, kw_only=True)
class MemoryEntry:
    """One summary in the memory archive: its level, text and token estimate, and the turns or
    entries below it that it covers."""

    id: str
    level: int
    text: str
    # Turn ids at level 1; entry ids of the level below above that.
    covers: list[str]
    tokens: int
    created: str
    # The span of turns the entry stands for, however high its level.
    first_turn: str = ""
    last_turn: str = ""
    turn_count: int = 0
    # Level 1: covered turns that were cancelled or failed, so their text was not summarised.
    excluded: list[str] = field(default_factory=list)

    @classmethod
    def model_construct(cls, **fields: Any) -> MemoryEntry:
        """An entry from fields the caller built and checked (pydantic's name for it)."""
        return cls(**fields)

    def to_record(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "level": self.level,
            "text": self.text,
            "covers": list(self.covers),
            "tokens": self.tokens,
            "created": self.created,
            "first_turn": self.first_turn,
            "last_turn": self.last_turn,
            "turn_count": self.turn_count,
            "excluded": list(self.excluded),
        }

    @classmethod
    def as_written(cls, record: Any) -> MemoryEntry:
        if type(record) is not dict:
            raise read.NotAsWritten
        get = record.get
        return cls(
            id=read.as_written(get("id", ABSENT), str),
            level=read.as_written(get("level", ABSENT), int),
            text=read.as_written(get("text", ABSENT), str),
            covers=read.texts(get("covers", ABSENT)),
            tokens=read.as_written(get("tokens", ABSENT), int),
            created=read.as_written(get("created", ABSENT), str),
            first_turn=read.as_written(get("first_turn", ""), str),
            last_turn=read.as_written(get("last_turn", ""), str),
            turn_count=read.as_written(get("turn_count", 0), int),
            excluded=read.texts(get("excluded", [])),
        )


@dataclass_own_init(slots=True, kw_only=True)
class MemoryState:
    """The memory archive as `memory.json` holds it: the watermark that ends the compacted past,
    and every entry."""

    v: int = MEMORY_RECORD_VERSION
    # The id of the last compacted turn, and the byte offset just after its line.
    watermark: str | None = None
    watermark_offset: int = 0
    updated: str = ""
    # Every entry, each level oldest first: those of the sealed parts, then those
    # memory.json holds; in an archive read as `MemoryStore.head` reads it, only the latter.
    entries: list[MemoryEntry] = field(default_factory=list)
    # The parts entries are sealed in, in order.
    sealed: list[SealedPart] = field(default_factory=list)
    # Whether `entries` holds the sealed parts' entries too. Set by whoever reads or makes
    # the state, never from the file.
    complete: bool = True

    @classmethod
    def model_validate(cls, record: Any) -> MemoryState:
        """The archive `record` holds (keys it does not know are ignored), or `RecordError`."""
        return read.read_record(MemoryState, record, cls._as_written)

    @classmethod
    def _as_written(cls, record: dict[str, Any]) -> MemoryState:
        get = record.get
        entries = get("entries", [])
        if type(entries) is not list:
            raise read.NotAsWritten
        return cls(
            v=read.as_written(get("v", MEMORY_RECORD_VERSION), int),
            watermark=read.optional(get("watermark"), str),
            watermark_offset=read.as_written(get("watermark_offset", 0), int),
            updated=read.as_written(get("updated", ""), str),
            entries=[MemoryEntry.as_written(entry) for entry in entries],
            sealed=[_sealed_part(part) for part in read.as_written(get("sealed", []), list)],
        )

    def sealed_entries(self) -> int:
        return sum(part.entries for part in self.sealed)

    def unsealed(self) -> list[MemoryEntry]:
        """The entries memory.json holds (or will, once saved): those of no sealed part."""
        return self.entries[self.sealed_entries() :] if self.complete else self.entries

    def entry_count(self) -> int:
        return len(self.entries) + (0 if self.complete else self.sealed_entries())

    def level_counts(self) -> dict[int, int]:
        """How many entries each level holds, lowest level first."""
        counts: dict[int, int] = {}
        if not self.complete:
            for part in self.sealed:
                for level, count in (part.levels or {}).items():
                    counts[int(level)] = counts.get(int(level), 0) + count
        for entry in self.entries:
            counts[entry.level] = counts.get(entry.level, 0) + 1
        return dict(sorted(counts.items()))

    def head_record(self) -> dict[str, Any]:
        """Every field but the entries, in the order the file lists them."""
        return {
            "v": self.v,
            "watermark": self.watermark,
            "watermark_offset": self.watermark_offset,
            "updated": self.updated,
        }


def _sealed_part(record: Any) -> SealedPart:
    if type(record) is not dict:
        raise read.NotAsWritten
    get = record.get
    levels = get("levels")
    if levels is not None and not (
        type(levels) is dict
        and all(type(level) is str and type(count) is int for level, count in levels.items())
    ):
        raise read.NotAsWritten
    return SealedPart(
        file=read.as_written(get("file", ABSENT), str),
        entries=read.as_written(get("entries", ABSENT), int),
        bytes=read.as_written(get("bytes", ABSENT), int),
        levels=levels,
    )


def _entry_of(record: Any) -> MemoryEntry:
    """An entry of a sealed part: as written, or through pydantic (RecordError if not one)."""
    return read.read_record(MemoryEntry, record, MemoryEntry.as_written)


def render_state(state: MemoryState) -> str:
    """memory.json: JSON with one entry per line, valid for any reader and still greppable
    by a person, holding the entries its sealed parts do not."""
    return "".join(_rendered(state, _entry_lines(state)))


def _entry_lines(state: MemoryState) -> Iterator[str]:
    """Each entry not in a sealed part as one line of JSON, in order: those of no part
    `state` has now, whatever parts are added while the lines are read; lone surrogates
    escaped, as `seal` writes them."""
    return (writable_json(line) for line, _, _ in _candidates(state))


def _candidates(state: MemoryState) -> Iterator[Candidate]:
    """Each entry of no sealed part, in order, as `seal` takes it: its line of JSON, its
    level, and whether another entry covers it."""
    unsealed = state.unsealed()
    # No sealed entry covers one that is not sealed (lore.core.memory_sealed): whatever
    # covers one of these is among them.
    covered = {child for entry in unsealed if entry.level > 1 for child in entry.covers}
    # `json.dumps` makes an encoder of its own each time it is asked for other than ASCII:
    # one serves every entry of a long archive.
    encode = json.JSONEncoder(ensure_ascii=False).encode
    return ((encode(entry.to_record()), entry.level, entry.id in covered) for entry in unsealed)


def _rendered(state: MemoryState, lines: Iterable[str]) -> Iterator[str]:
    """`render_state` in pieces, an entry at a time: a long archive is written without
    holding its whole text (and each entry's as a dict) in memory at once."""
    head = state.head_record()
    if state.sealed:
        head["sealed"] = [part.to_record() for part in state.sealed]
    head_text = writable_json(json.dumps(head, ensure_ascii=False))[:-1]
    separator = ""
    for line in lines:
        if not separator:
            yield f'{head_text}, "entries": [\n'
        yield separator + line
        separator = ",\n"
    yield "\n]}\n" if separator else f'{head_text}, "entries": []}}\n'


class MemoryStore:
    """The archive of one vault, reloaded whenever another process replaced it."""

    def __init__(self, vault: Vault, history: HistoryStore | None = None) -> None:
        self.vault = vault
        self.path: Path = vault.layout.memory / MEMORY_FILE_NAME
        # Where live turns are read from; the archive itself never opens history.jsonl.
        # Given the ask engine's store, one offset index serves both.
        self.history = history or HistoryStore(vault)
        self.problem: str | None = None
        self._state = MemoryState()
        self._stamp: _Stamp | None = None
        self._guard = threading.Lock()
        self._ranked: tuple[MemoryState, int, list[MemoryEntry]] | None = None
        self._moved_watermark: tuple[MemoryState, int] | None = None
        self.view = PackView(vault.layout.state / PackView.FILE_NAME, vault.layout.lock)

    # -- the state ---------------------------------------------------------------------------

    def state(self) -> MemoryState:
        """The current archive. An unreadable file reads as empty and sets `problem`."""
        with self._guard:
            try:
                info = os.stat(self.path)
                stamp = (info.st_ino, info.st_mtime_ns, info.st_size)
            except FileNotFoundError:
                self._state, self._stamp, self.problem = MemoryState(), None, None
                return self._state
            except OSError as exc:
                self.problem = f"{self.path} cannot be read ({exc.strerror})"
                self._state, self._stamp = MemoryState(), None
                return self._state
            if stamp != self._stamp:
                with _parsed_guard:
                    cached = _parsed.get(self.path)
                if cached is not None and cached[0] == stamp:
                    _, self._state, self.problem = cached
                else:
                    self._state, self.problem = self._load()
                    with _parsed_guard:
                        _parsed[self.path] = (stamp, self._state, self.problem)
                self._stamp = stamp
            return self._state

    def _load(self) -> tuple[MemoryState, str | None]:
        try:
            state = self._read_head()
            if state.sealed:
                sealed = read_parts(self.path.parent, state.sealed, _entry_of)
                state.entries = [*sealed, *state.entries]
            return state, None
        except SealedPartDamaged as exc:
            return MemoryState(), (
                f"{exc}; restore it from the vault's history, or move memory.json aside to reset"
            )
        except (OSError, ValueError) as exc:
            # Reading as empty keeps asks working from the live history; nothing overwrites
            # the file while it is unreadable (compaction refuses).
            reason = type(exc).__name__ if not isinstance(exc, OSError) else exc.strerror
            if isinstance(exc, RecordError):
                # The name this message has always given an archive pydantic rejects.
                reason = "ValidationError"
            return MemoryState(), f"{self.path} is unreadable ({reason}); move it aside to reset"

    def _read_head(self) -> MemoryState:
        """memory.json as it is, its sealed parts listed but not read."""
        # Read as a regular file only: a named pipe in its place would hang the reader.
        data = read_regular_bytes(self.path, MAX_ARCHIVE_BYTES)
        if len(data) > MAX_ARCHIVE_BYTES:
            raise ValueError(f"larger than {MAX_ARCHIVE_BYTES:,} bytes")
        state = MemoryState.model_validate(decode_json(data))
        state.complete = True
        return state

    def head(self) -> MemoryState:
        """What a compaction needs of the archive, read from memory.json alone: the
        watermark, the frontier with every entry memory.json holds, and the parts (checked
        to be there, whole, but not read), with `complete` False.

        Where there is no part, memory.json is the whole archive, read once. The whole
        archive as `state` reads it where a part does not say how many entries of each
        level it holds, and where memory.json or a part is damaged (then `problem` says
        so)."""
        try:
            head = self._read_head()
            if not head.sealed:
                return head
            if all(part.levels is not None for part in head.sealed):
                check_parts(self.path.parent, head.sealed)
                head.complete = False
                return head
        except FileNotFoundError:
            return MemoryState()
        except (OSError, ValueError):
            pass  # read whole below, which names the problem
        return self.state()

    def save(self, state: MemoryState) -> None:
        """Replace the archive in one atomic step. The caller holds the vault lock.

        `state` keeps the sealed parts of the archive it was planned from, and, if it is
        `complete`, its entries begin with theirs (entries are only ever added): only the
        other entries are written, the covered ones past `SEAL_BYTES` into new sealed parts,
        before memory.json names them."""
        if state.complete and state.sealed_entries() > len(state.entries):
            raise VaultError("the archive to save has fewer entries than its sealed parts")
        folder = self.path.parent
        candidates = _candidates(state)
        state.sealed = list(state.sealed)
        state.v = MEMORY_RECORD_VERSION
        lines = seal(folder, state.sealed, candidates)
        atomic_write_stream(self.path, lambda handle: handle.writelines(_rendered(state, lines)))
        remove_unnamed(folder, state.sealed)
        with self._guard:
            # Read again when next asked for: what was sealed now comes first.
            self._state, self._stamp, self.problem = MemoryState(), None, None

    # -- views -------------------------------------------------------------------------------

    @property
    def watermark(self) -> str | None:
        return self.state().watermark

    def entries(self) -> list[MemoryEntry]:
        return list(self.state().entries)

    def levels(self) -> dict[int, list[MemoryEntry]]:
        """Entries by level, each level oldest first."""
        grouped: dict[int, list[MemoryEntry]] = {}
        for entry in self.state().entries:
            grouped.setdefault(entry.level, []).append(entry)
        return dict(sorted(grouped.items()))

    def frontier(self) -> list[MemoryEntry]:
        """The entries no higher entry covers, oldest first: the whole compacted past, once."""
        return frontier_of(self.state().entries)

    def frontier_tokens(self) -> int:
        return sum(entry.tokens for entry in self.frontier())

    def ranked(self, token_limit: int | None = None) -> list[MemoryEntry]:
        """The entries in the order a pack should take them while its budget lasts.

        First the whole frontier, highest level first (the broadest summary of the oldest
        past), then, level by level downwards, the finer entries under it, newest first.
        Finer entries stop once the list holds `token_limit` tokens (default: four times
        the pack's memory cap): past that no pack could take them, and they only repeat in
        detail what the frontier already says. The order is computed once per archive.
        """
        limit = token_limit if token_limit is not None else 4 * self.vault.config.ask.memory_tokens
        if not self._state_at_hand():
            viewed = self.view.read(self.path, limit)
            if viewed is not None:
                return list(viewed.entries)
        identity = file_identity(self.path)
        state = self.state()
        cached = self._ranked
        if cached is not None and cached[0] is state and cached[1] == limit:
            return list(cached[2])
        entries = state.entries
        by_id = {entry.id: entry for entry in entries}
        ranked = _highest_then_newest(frontier_of(entries))
        total = sum(entry.tokens for entry in ranked)
        seen = {entry.id for entry in ranked}
        layer = ranked
        while layer and total < limit:
            children = [
                by_id[child]
                for entry in layer
                if entry.level > 1
                for child in entry.covers
                if child in by_id and child not in seen
            ]
            layer = []
            for child in _highest_then_newest(children):
                if total + child.tokens > limit:
                    break
                layer.append(child)
                total += child.tokens
            ranked.extend(layer)
            seen.update(entry.id for entry in layer)
        self._ranked = (state, limit, ranked)
        if self.problem is None and file_identity(self.path) == identity:
            self.view.write(identity, limit, state, ranked)
        return list(ranked)

    def _state_at_hand(self) -> bool:
        """Whether this process holds the archive as the file now is: then the view, which
        spares another process reading the whole archive, is not needed."""
        try:
            info = os.stat(self.path)
        except OSError:
            return True  # no archive (empty at once) or an unreadable one (its problem)
        stamp = (info.st_ino, info.st_mtime_ns, info.st_size)
        if stamp == self._stamp:
            return True
        with _parsed_guard:
            cached = _parsed.get(self.path)
        return cached is not None and cached[0] == stamp

    # -- the live window ---------------------------------------------------------------------

    def live_start(self, state: MemoryState | None = None) -> tuple[int, set[str] | None]:
        """Where live turns begin in history.jsonl, and the ids to skip when that is unknown.

        The saved offset is checked against the watermark turn. If history.jsonl was edited
        so that the turn moved, it is found again; if it is gone, every turn no level-1
        entry covers is live, so nothing is lost and nothing counted twice. `state` is the
        archive as the caller read it (`head`, say); by default the current one.
        """
        if state is None and not self._state_at_hand():
            viewed = self.view.read(self.path, None)
            if viewed is not None:
                if viewed.watermark is None:
                    return 0, None
                turn = self.history.turn_ending_at(viewed.watermark_offset)
                if turn is not None and turn.id == viewed.watermark:
                    return viewed.watermark_offset, None
                # The watermark turn moved: it is looked for with the whole archive below.
        if state is None:
            state = self.state()
        if state.watermark is None:
            return 0, None
        saved = state.watermark_offset
        if self._moved_watermark is not None and self._moved_watermark[0] is state:
            saved = self._moved_watermark[1]
        turn = self.history.turn_ending_at(saved)
        if turn is not None and turn.id == state.watermark:
            return saved, None
        found = self.history.end_of_turn(state.watermark)
        if found is not None:
            # Remembered, so an edited history costs one scan, not one per ask.
            self._moved_watermark = (state, found)
            return found, None
        # The turns every level-1 entry covers, sealed ones too.
        whole = state if state.complete else self.state()
        if whole is not state and self.problem:
            raise VaultError(f"{self.problem}; the turns memory covers cannot be told apart")
        covered = {
            turn_id for entry in whole.entries if entry.level == 1 for turn_id in entry.covers
        }
        return 0, covered

    def live_turns(
        self,
        max_turns: int | None = None,
        *,
        only_ok: bool = False,
        conversation: str | None = None,
    ) -> list[Turn]:
        """Turns after the watermark, oldest first; at most the newest `max_turns` of them.

        With `only_ok`, cancelled and failed turns are left out, as a pack wants them. With
        `conversation`, only that conversation's turns are kept, looking back no further than
        CONVERSATION_LOOKBACK turns (past that, a conversation's earlier turns are in memory
        or were long ago).
        """
        start, covered = self.live_start()
        newest_first: list[Turn] = []
        for turn in self._turns_backwards(start, conversation):
            if covered is not None and turn.id in covered:
                continue
            if only_ok and turn.status != "ok":
                continue
            if conversation is not None and turn.conversation != conversation:
                continue
            newest_first.append(turn)
            if max_turns is not None and len(newest_first) >= max_turns:
                break
        newest_first.reverse()
        return newest_first

    def _turns_backwards(self, start: int, conversation: str | None) -> Iterator[Turn]:
        if conversation is None:
            for _, every in self.history.iter_backwards(start):
                yield every
            return
        # Another conversation's line is skipped unparsed: only a line naming this one can be.
        marker = conversation.encode("utf-8")
        lines = self.history.iter_lines_backwards(start)
        for seen, (_, line) in enumerate(lines, 1):
            if seen > CONVERSATION_LOOKBACK:
                return
            if marker in line:
                found = decode_turn(line)
                if found is not None:
                    yield found

    def describe(self) -> dict[str, Any]:
        levels = self.levels()
        return {
            "watermark": self.watermark,
            "entries": sum(len(items) for items in levels.values()),
            "levels": {level: len(items) for level, items in levels.items()},
            "frontier_tokens": self.frontier_tokens(),
            "problem": self.problem,
        }


class PackView:
    """What an ask needs of the archive, kept beside it: its watermark and the entries a
    pack takes (`MemoryStore.ranked`), so that an ask in another process reads a few
    entries instead of the whole archive (the 15.6 MB of 100,000 compacted turns took
    about 0.17 s of every ask: 337 ms against 164 ms with the view, bench/history_bench.py).

    Derived data in the state folder, like the settings cache: keyed on the archive file's
    identity (inode, size, modification and change times; Lore replaces the file whole, so
    each archive has its own) and the token limit the entries were ranked for. Saved only
    for an archive that has been still long enough that an edit in place could not keep
    its times, when the vault lock is free at once; a missing, damaged or stale view is a
    miss, and the archive is read as before.
    """

    FILE_NAME = "memory-view.json"
    FORMAT = "lore-memory-view/1"
    # Far more than the entries a pack's limit ranks; a bigger file is not one.
    MAX_BYTES = 4_000_000

    def __init__(self, path: Path, lock: Path) -> None:
        self.path = path
        self.lock = lock
        # The view last read here, with the archive and limit it is of: a pure function of
        # the two, so a long-running process reads the file once.
        self._known: tuple[list[Any], int, MemoryState] | None = None

    def read(self, archive: Path, limit: int | None) -> MemoryState | None:
        """The watermark and ranked entries saved for `archive` as it is now (for `limit`
        tokens, unless None: the watermark alone is wanted), as a state; None if none is."""
        identity = file_identity(archive)
        if identity[1] is None:
            return None
        known = self._known
        if known is not None and known[0] == identity and limit in (None, known[1]):
            return known[2]
        saved = read_saved(self.path, self.MAX_BYTES)
        if saved is None or saved.get("format") != self.FORMAT:
            return None
        if saved.get("archive") != identity:
            return None
        if limit is not None and saved.get("limit") != limit:
            return None
        record = saved.get("state")
        viewed_limit = saved.get("limit")
        if type(record) is not dict or type(viewed_limit) is not int:
            return None
        try:
            viewed = MemoryState._as_written(record)
        except (read.NotAsWritten, RecordError, TypeError, AttributeError):
            return None
        self._known = (identity, viewed_limit, viewed)
        return viewed

    def write(
        self, identity: list[Any], limit: int, state: MemoryState, ranked: list[MemoryEntry]
    ) -> None:
        """Save the view of the archive `identity` names; quietly nothing where the vault
        cannot take it, or the archive changed too recently to be told from an edit."""
        import time

        if identity[1] is None or not settled(identity, time.time_ns()):
            return
        record = state.head_record()
        record["entries"] = [entry.to_record() for entry in ranked]
        save(
            self.path,
            self.lock,
            {"format": self.FORMAT, "archive": identity, "limit": limit, "state": record},
        )


def frontier_of(entries: list[MemoryEntry]) -> list[MemoryEntry]:
    covered = {child for entry in entries if entry.level > 1 for child in entry.covers}
    uncovered = [entry for entry in entries if entry.id not in covered]
    # Higher levels always stand for older turns than the remaining lower ones.
    uncovered.sort(key=lambda e: (-e.level, e.last_turn))
    return uncovered


def _highest_then_newest(entries: list[MemoryEntry]) -> list[MemoryEntry]:
    ordered = sorted(entries, key=lambda e: e.last_turn, reverse=True)
    ordered.sort(key=lambda e: e.level, reverse=True)
    return ordered
