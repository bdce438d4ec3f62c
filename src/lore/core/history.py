"""Every turn ever asked, in `history.jsonl`: appended once per turn, never rewritten.

Reads are shaped for a long history. `tail(n)` reads backwards from the end, so loading the
last turns costs the same at a thousand turns or a million. `count()` and `read_range()` page
through the whole history by a byte-offset index (see history_index.py), and `search()` and
`get()` stream from the newest turn back, stopping as soon as they have what was asked for;
`search_page()` also stops after a read budget and can be cancelled, for search as you type.
Torn and garbage lines are skipped everywhere; `lore doctor` reports them.

This module is the only one that opens `history.jsonl`: other readers ask the store for
turns, raw lines or byte offsets (a test checks it).
"""

from __future__ import annotations

import itertools
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from lore.core.dataclass_lite import dataclass_lite
from lore.core.history_index import HistoryIndex
from lore.core.json_decode import decode_json
from lore.core.storage import (
    JsonlReport,
    append_raw,
    encode_record,
    iter_records,
    open_regular,
    read_tail_records,
)
from lore.core.turns import Turn
from lore.core.vault import Vault
from lore.errors import UsageError, VaultError

_BACKWARD_CHUNK = 256 * 1024
# Read back from an offset this much at a time to find the start of the line ending there.
_LINE_PROBE = 64 * 1024
# How much of the history one bounded search reads (about 60,000 turns of 1 KB, a tenth
# of a second here) before it stops and says how far back it got.
SEARCH_BUDGET_BYTES = 64 * 1024 * 1024
# Unpersisted index entries worth taking the vault lock to save.
_PERSIST_AFTER = 256


class TurnNotFound(UsageError):
    """No turn in the history has the id the user gave."""

    # A missing item is a failure (1), as for a note, not bad usage (2): see README.
    exit_code = 1


class AmbiguousTurn(UsageError):
    """More than one turn starts with the id the user gave."""

    exit_code = 1


def iter_blocks_backwards(
    path: Path, stop_offset: int = 0, end_offset: int | None = None
) -> Iterator[tuple[int, bytes]]:
    """(offset, block) of whole lines, from the end of `path` (or from `end_offset`, which
    must be where a line starts) back to `stop_offset`."""
    try:
        handle = open_regular(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise VaultError(f"cannot read {path}: {exc.strerror or exc}") from None
    with handle:
        position = handle.seek(0, os.SEEK_END)
        if end_offset is not None:
            position = min(position, end_offset)
        carry = b""
        while position > stop_offset:
            step = min(_BACKWARD_CHUNK, position - stop_offset)
            position -= step
            handle.seek(position)
            data = handle.read(step) + carry
            if position == stop_offset:
                carry = b""
                yield position, data
                break
            # The first piece may be the end of a line that started in the block before.
            newline = data.find(b"\n", 0, len(data) - 1)
            if newline < 0:
                carry = data
                continue
            carry = data[: newline + 1]
            yield position + newline + 1, data[newline + 1 :]
        if carry:
            yield position, carry


def iter_lines_backwards(path: Path, stop_offset: int = 0) -> Iterator[tuple[int, bytes]]:
    """(offset, line) for each line of `path` from the last to the one starting at `stop_offset`.

    A last line without its newline is still yielded; callers parse and skip what is torn.
    """
    for offset, block in iter_blocks_backwards(path, stop_offset):
        yield from _lines_backwards(offset, block)


def _lines_backwards(offset: int, block: bytes) -> Iterator[tuple[int, bytes]]:
    end = len(block)
    while end > 0:
        start = block.rfind(b"\n", 0, end - 1) + 1
        line = block[start:end]
        if line.strip():
            yield offset + start, line
        end = start


def decode_turn(line: bytes) -> Turn | None:
    try:
        value = decode_json(line)
    except (ValueError, UnicodeDecodeError):
        return None
    return Turn.from_record(value) if isinstance(value, dict) else None


# What JSON does not store byte for byte (control characters, quotes, backslashes) and what
# `bytes.lower` does not fold (anything not ASCII).
_UNSTORED_AS_IS = re.compile(r'[^\x20-\x7e]|["\\]')
# ASCII letters that some other character casefolds to ("ß" to "ss", "ﬁ" to "fi", the Kelvin
# sign to "k"). A term with letters beyond ASCII is cut at these too; see TurnMatcher.
CASEFOLD_TARGETS = frozenset("afhijklnstwy")
_ESCAPED_IN_JSON = re.compile(r'[\x00-\x1f"\\]')
_UNSTORED_OR_FOLDED_TO = re.compile(r'[^\x20-\x7e]|["\\' + "".join(sorted(CASEFOLD_TARGETS)) + "]")


def _raw_pieces(word: str) -> list[str]:
    """Runs of a query word, casefolded, that a line holding the word holds too, lower-cased.

    A plain ASCII term is kept whole, as it always was (a text with "ß" is then not found by
    "ss"). Any other term, "grösse", is tested by its runs of plain letters that no other
    character folds to ("gr", "e"): its text may hold "Größe", so "ss" is not a test of it.
    """
    if word.isascii() and not _UNSTORED_AS_IS.search(word):
        return [word.lower()]
    return [piece for piece in _UNSTORED_OR_FOLDED_TO.split(word.casefold()) if piece]


class TurnMatcher:
    """Every word of a query, case-insensitively, in a turn's question or answer."""

    def __init__(self, query: str) -> None:
        self.terms = [term.casefold() for term in query.split()]
        # A cheap test on lower-cased raw bytes first, with the runs of each term that are
        # stored as they are, longest (most telling) first. "Ünïcode" is tested by "code".
        pieces = {piece.encode("ascii") for word in query.split() for piece in _raw_pieces(word)}
        self._raw_terms = sorted(pieces, key=len, reverse=True)
        # Words the raw test only half checks, tested whole on a line's casefolded text
        # before it is parsed. JSON stores them as they are, unless they hold what it escapes.
        self._line_terms = [
            word.casefold()
            for word in query.split()
            if _raw_pieces(word) != [word.lower()] and not _ESCAPED_IN_JSON.search(word)
        ]

    def __bool__(self) -> bool:
        return bool(self.terms)

    def may_match(self, raw: bytes) -> bool:
        """False only when `raw` (a line, or a block of lines) cannot hold a match."""
        lowered = raw.lower()
        return all(term in lowered for term in self._raw_terms)

    def line_may_match(self, line: bytes) -> bool:
        """`may_match` for one line, closer: a word with accents is looked for whole."""
        return self.may_match(line) and self._line_terms_in(line)

    def _line_terms_in(self, line: bytes) -> bool:
        if not self._line_terms:
            return True
        text = line.decode("utf-8", "replace").casefold()
        return all(term in text for term in self._line_terms)

    def lines_that_may_match(self, offset: int, block: bytes) -> Iterator[tuple[int, bytes]]:
        """(offset, line) of the lines of `block` (read at `offset`) that may match, last first.

        Only lines holding the most telling raw term are looked at, found by searching the
        lower-cased block for it: a common word costs a search, not a test of every line.
        """
        lowered = block.lower()
        if not all(term in lowered for term in self._raw_terms):
            return
        if not self._raw_terms:
            for start, line in _lines_backwards(offset, block):
                if self._line_terms_in(line):
                    yield start, line
            return
        first, rest = self._raw_terms[0], self._raw_terms[1:]
        end = len(lowered)
        while True:
            found = lowered.rfind(first, 0, end)
            if found < 0:
                return
            start = lowered.rfind(b"\n", 0, found) + 1
            stop = lowered.find(b"\n", found)
            stop = len(lowered) if stop < 0 else stop + 1
            candidate = lowered[start:stop]
            if all(term in candidate for term in rest):
                line = block[start:stop]
                if self._line_terms_in(line):
                    yield offset + start, line
            end = start

    def matches(self, turn: Turn) -> bool:
        text = f"{turn.question}\n{turn.resolved_question}\n{turn.answer}".casefold()
        return all(term in text for term in self.terms)


@dataclass_lite
class HistorySearchPage:
    """What one bounded search found, newest first, and where it stopped."""

    hits: list[Turn]
    scanned_bytes: int
    # Where a further search of older turns starts (pass it as `before`); 0 once the whole
    # history was read back to its first turn.
    resume_before: int
    cancelled: bool = False

    @property
    def complete(self) -> bool:
        """Whether every turn older than `before` was searched."""
        return self.resume_before == 0 and not self.cancelled


class HistoryStore:
    """The history of one vault. Safe to share between threads of one process."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.path = vault.layout.history
        self._index: HistoryIndex | None = None
        self._index_guard = threading.Lock()

    # -- writing -----------------------------------------------------------------------------

    def append(self, turn: Turn) -> Turn:
        """Record one finished turn: a single write and fsync, under the vault lock."""
        self.vault.ensure_writable()
        line = encode_record(turn.to_record())
        with self.vault.lock():
            start = self.size()
            append_raw(self.path, line)
            with self._index_guard:
                index = self._index
                if index is None and self._index_file_exists():
                    saved = self.vault.layout.state / "history.idx"
                    if HistoryIndex.extend_file(saved, self.path, start, line):
                        return turn
                if index is not None or self._index_file_exists():
                    index = self._open_index()
                    index.refresh()
                    index.persist()
        return turn

    # -- reading from the end ----------------------------------------------------------------

    def tail(self, n: int) -> list[Turn]:
        """The last `n` turns, oldest first, read backwards from the end of the file."""
        turns = []
        for record in read_tail_records(self.path, n):
            turn = Turn.from_record(record)
            if turn is not None:
                turns.append(turn)
        return turns

    def last(self) -> Turn | None:
        turns = self.tail(1)
        return turns[0] if turns else None

    def iter_backwards(self, stop_offset: int = 0) -> Iterator[tuple[int, Turn]]:
        """(offset, turn) from the newest turn back to the one starting at `stop_offset`."""
        for offset, line in iter_lines_backwards(self.path, stop_offset):
            turn = decode_turn(line)
            if turn is not None:
                yield offset, turn

    def search(self, query: str, limit: int = 50) -> list[Turn]:
        """Turns whose question or answer holds every word of `query`, newest first."""
        if limit <= 0:
            return []
        return list(itertools.islice(self.iter_search(query), limit))

    def iter_search(
        self, query: str, *, cancelled: Callable[[], bool] | None = None
    ) -> Iterator[Turn]:
        """`search` as a stream, so a caller can show hits as they come and stop at will.

        Blocks of the file that cannot hold every word are skipped without parsing a line.
        `cancelled` is asked once per block; the stream ends as soon as it says yes, so a
        search the user has typed past stops reading.
        """
        matcher = TurnMatcher(query)
        if not matcher:
            return
        for offset, block in iter_blocks_backwards(self.path):
            if cancelled is not None and cancelled():
                return
            for _, line in matcher.lines_that_may_match(offset, block):
                turn = decode_turn(line)
                if turn is not None and matcher.matches(turn):
                    yield turn

    def search_page(
        self,
        query: str,
        *,
        limit: int = 50,
        budget_bytes: int = SEARCH_BUDGET_BYTES,
        before: int | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> HistorySearchPage:
        """A bounded `search`: up to `limit` hits, newest first, reading at most about
        `budget_bytes` of the history back from byte `before` (the end by default).

        It stops at whichever comes first: `limit` hits, the budget (at least one block is
        always read), `cancelled()` saying yes (asked once per block), or the start of the
        file. The page says where it stopped, so "search older turns" passes `resume_before`
        back as `before` and no turn is read twice or skipped.
        """
        end = self.size() if before is None else min(before, self.size())
        matcher = TurnMatcher(query)
        page = HistorySearchPage(hits=[], scanned_bytes=0, resume_before=end)
        if not matcher or limit <= 0:
            page.resume_before = 0 if not matcher else end
            return page
        for offset, block in iter_blocks_backwards(self.path, end_offset=end):
            if cancelled is not None and cancelled():
                page.cancelled = True
                return page
            page.scanned_bytes += len(block)
            page.resume_before = offset
            for line_offset, line in matcher.lines_that_may_match(offset, block):
                turn = decode_turn(line)
                if turn is not None and matcher.matches(turn):
                    page.hits.append(turn)
                    if len(page.hits) >= limit:
                        page.resume_before = line_offset
                        return page
            if page.scanned_bytes >= budget_bytes:
                return page
        page.resume_before = 0
        return page

    def get(self, turn_id: str) -> Turn:
        """The turn with this id, or the only one whose id starts with it."""
        wanted = turn_id.strip()
        if not wanted or not wanted.isprintable():
            raise UsageError("name a turn by its id (see: lore history)")
        found = self._bisect(wanted)
        if found is not None:
            return found
        needle = wanted.encode("utf-8")
        candidates: dict[str, Turn] = {}
        for _, line in iter_lines_backwards(self.path):
            if needle not in line:
                continue
            turn = decode_turn(line)
            if turn is None or not turn.id.startswith(wanted):
                continue
            if turn.id == wanted:
                return turn
            candidates.setdefault(turn.id, turn)
        if len(candidates) == 1:
            return next(iter(candidates.values()))
        if candidates:
            shown = ", ".join(sorted(candidates)[:5])
            raise AmbiguousTurn(f"{len(candidates)} turns start with {wanted!r}: {shown}")
        raise TurnNotFound(f"no turn with id {wanted!r} in the history (see: lore history)")

    def _bisect(self, wanted: str) -> Turn | None:
        """The turn with exactly this id, found in about 20 reads by the offset index.

        Ids are time-ordered and turns are appended in time order, so the history is sorted
        by id, nearly: two processes may finish asks out of order. A miss here is not an
        answer; `get` then scans. Used only when the index is already saved, since building
        it reads the whole file anyway.
        """
        if self._index is None and not self._index_file_exists():
            return None
        index = self._fresh_index()
        with self._index_guard:
            low, high = 0, len(index)
            while low < high:
                middle = (low + high) // 2
                turn = decode_turn(index.read_line(middle) or b"")
                if turn is None:
                    return None
                if turn.id < wanted:
                    low = middle + 1
                else:
                    high = middle
            for line in index.read_lines(max(0, low - 2), low + 3):
                turn = decode_turn(line)
                if turn is not None and turn.id == wanted:
                    return turn
        return None

    # -- reading from the start --------------------------------------------------------------

    def iter_turns(self) -> Iterator[Turn]:
        """Every turn, oldest first, streamed; garbage lines skipped."""
        for record in iter_records(self.path):
            turn = Turn.from_record(record)
            if turn is not None:
                yield turn

    def check(self) -> JsonlReport:
        """Read every line and report the ones that are not records (for `lore doctor`)."""
        report = JsonlReport()
        for _ in iter_records(self.path, report):
            pass
        return report

    # -- raw lines by byte offset ------------------------------------------------------------
    # For readers that need a field or two of many records (compaction, the memory status,
    # the watermark): bytes they parse themselves, and offsets they can save and seek back to.

    def signature(self) -> tuple[int, int, int] | None:
        """(size, mtime_ns, inode) of the file, None when there is none: a cheap change test."""
        try:
            info = os.stat(self.path)
        except OSError:
            return None
        return (info.st_size, info.st_mtime_ns, info.st_ino)

    def size(self) -> int:
        """Bytes in the file (0 when there is none): the offset just past the last line."""
        found = self.signature()
        return found[0] if found is not None else 0

    def iter_lines_backwards(self, stop_offset: int = 0) -> Iterator[tuple[int, bytes]]:
        """(offset, line) from the last line back to the one starting at `stop_offset`.

        A last line without its newline is still yielded; callers parse and skip what is torn.
        """
        return iter_lines_backwards(self.path, stop_offset)

    def iter_lines_from(self, start: int = 0) -> Iterator[tuple[int, bytes]]:
        """(offset, line) from the line starting at byte `start` to the last, oldest first.

        Each line keeps its newline, so `offset + len(line)` is where the next one starts; a
        torn last line comes without one.
        """
        try:
            handle = open_regular(self.path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise VaultError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        with handle:
            handle.seek(start)
            position = start
            for line in handle:
                yield position, line
                position += len(line)

    def turn_ending_at(self, offset: int) -> Turn | None:
        """The turn whose line ends just before byte `offset`, None when no turn does."""
        if offset <= 0:
            return None
        try:
            with open_regular(self.path) as handle:
                if handle.seek(0, os.SEEK_END) < offset:
                    return None
                start = offset
                tail = b""
                while start > 0:
                    step = min(_LINE_PROBE, start)
                    start -= step
                    handle.seek(start)
                    tail = handle.read(step) + tail
                    newline = tail.rfind(b"\n", 0, len(tail) - 1)
                    if newline >= 0:
                        return decode_turn(tail[newline + 1 :])
                return decode_turn(tail)
        except OSError:
            return None

    def end_of_turn(self, turn_id: str) -> int | None:
        """The byte offset just after the line of turn `turn_id`, scanning from the start."""
        needle = turn_id.encode("utf-8")
        try:
            for offset, line in self.iter_lines_from(0):
                if needle in line:
                    turn = decode_turn(line)
                    if turn is not None and turn.id == turn_id:
                        return offset + len(line)
        except (OSError, VaultError):
            return None
        return None

    # -- paging by position ------------------------------------------------------------------

    def count(self) -> int:
        """How many records the history holds; cheap once the offset index exists."""
        return len(self._fresh_index())

    def read_range(self, start: int, stop: int | None) -> list[Turn]:
        """Turns at positions [start, stop), oldest first (0 is the first turn ever asked).

        Negative positions count from the end, as in a slice. Only the lines asked for are
        read. A record line that is not a turn is left out, so a page may come back short.
        """
        turns = []
        for line in self.read_lines(start, stop):
            turn = decode_turn(line)
            if turn is not None:
                turns.append(turn)
        return turns

    def read_lines(self, start: int, stop: int | None) -> list[bytes]:
        """The raw record lines at positions [start, stop), as `read_range` reads them.

        For a reader that keeps many pages: bytes are nothing for the garbage collector to
        walk, where each decoded turn is about ten objects. `decode_turn` makes the turn.
        """
        index = self._fresh_index()
        with self._index_guard:
            index.refresh()
            total = len(index)
            start, stop, _ = slice(start, stop).indices(total)
            return index.read_lines(start, stop)

    def _index_file(self) -> Path | None:
        state = self.vault.layout.state
        try:
            state.mkdir(exist_ok=True)
        except OSError:
            return None
        if not os.access(state, os.W_OK):
            return None
        return state / "history.idx"

    def _index_file_exists(self) -> bool:
        return (self.vault.layout.state / "history.idx").exists()

    def _open_index(self) -> HistoryIndex:
        if self._index is None:
            self._index = HistoryIndex(self.path, self._index_file())
        return self._index

    def _fresh_index(self) -> HistoryIndex:
        """The index caught up with the file, and saved when enough of it is new."""
        with self._index_guard:
            index = self._open_index()
            index.refresh()
            unsaved = index.index_file is not None and len(index) - index.persisted
        if unsaved and unsaved >= _PERSIST_AFTER:
            # The vault lock is always taken before the guard, never the other way round.
            with self.vault.lock(), self._index_guard:
                index.refresh()
                index.persist()
        return index
