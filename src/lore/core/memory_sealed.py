"""Sealed parts of the memory archive: runs of its covered entries, each in a file of its own.

Entries are only ever added to the archive, never changed, so once a run of them is written
it can stay as it is. `memory.json` lists the sealed parts in order, then holds the other
entries itself; a compaction writes its new entries there and seals them into a new part
once they pass `SEAL_BYTES`. So a compaction in a vault with a long past rewrites (and
commits to the vault's git history) a few hundred KB, not the whole archive: 100,000
compacted turns made every later compaction write 15.6 MB again.

Only entries that another entry covers are sealed, so the frontier (what a compaction
summarises further) is always in `memory.json`, and no entry there is covered by a sealed
one: a compaction reads memory.json alone, with the count of each level in each part for
the ids it gives new entries. Entries are read back with the sealed ones first; each
level keeps its order, as the older entries of a level are covered before the newer.

A part is JSON Lines, one entry a line, named `sealed/NNNNNN.jsonl` under the memory folder
and numbered from 1 in order. `memory.json` records each part's entry count, size and
count by level, and a part that does not match them is reported as damaged, never read as
fewer entries. Parts are written atomically before the `memory.json` that names them, so a
crash in between leaves an unnamed part that the next compaction writes again.
"""

from __future__ import annotations

import os
import re
import stat
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from lore.core.dataclass_lite import dataclass_lite
from lore.core.json_decode import decode_json
from lore.core.storage import NotRegularFile, atomic_write_many, read_regular_bytes
from lore.core.utf8_safe import utf8_json, writable_json

# A run of new entries is sealed once its lines pass this many bytes: what a compaction
# rewrites of memory.json at most, beside its own entries.
SEAL_BYTES = 256 << 10
SEALED_FOLDER = "sealed"
_PART_NAME = re.compile(r"sealed/(\d{6})\.jsonl")

Entry = TypeVar("Entry")
_Stamp = tuple[int, int, int]


class SealedPartDamaged(ValueError):
    """A sealed part that is missing, or not the entries `memory.json` says it holds."""


# An archive lists a few dozen parts at most, and every ask imports this module.
@dataclass_lite
class SealedPart:
    """One sealed part as `memory.json` lists it: its file under the memory folder, how many
    entries it holds, its size in bytes, and how many entries of each level it holds."""

    file: str
    entries: int
    bytes: int
    # By level, as text (JSON's keys). None in a part written before it was counted: then a
    # compaction reads the whole archive.
    levels: dict[str, int] | None = None

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"file": self.file, "entries": self.entries, "bytes": self.bytes}
        if self.levels is not None:
            record["levels"] = self.levels
        return record


def part_name(number: int) -> str:
    return f"{SEALED_FOLDER}/{number:06d}.jsonl"


# Parts read in this process, by path, while the file is unchanged: a sealed part never
# changes, so a long-running app reads each once however often the archive is replaced.
_read_parts: dict[Path, tuple[_Stamp, list[Any]]] = {}
_read_guard = threading.Lock()


def read_parts(
    folder: Path, parts: list[SealedPart], entry_of: Callable[[Any], Entry]
) -> list[Entry]:
    """The entries of `parts`, in order, each line made an entry by `entry_of` (which raises
    ValueError for a line that is not one); `SealedPartDamaged` names the first part that
    is missing or not what `memory.json` says."""
    entries: list[Entry] = []
    for number, part in enumerate(parts, 1):
        entries.extend(_read_part(_part_path(folder, number, part), part, entry_of))
    return entries


def _part_path(folder: Path, number: int, part: SealedPart) -> Path:
    """Where part `number` is, refused unless memory.json names it as Lore does: never a
    path out of the sealed folder."""
    if part.file != part_name(number):
        raise SealedPartDamaged(f"memory.json names {part.file!r} as sealed part {number}")
    return folder / part.file


def _read_part(path: Path, part: SealedPart, entry_of: Callable[[Any], Entry]) -> list[Entry]:
    try:
        info = os.stat(path)
        stamp = (info.st_ino, info.st_mtime_ns, info.st_size)
        with _read_guard:
            known = _read_parts.get(path)
        if known is not None and known[0] == stamp:
            return known[1]
        data = read_regular_bytes(path, part.bytes)
    except NotRegularFile:
        raise SealedPartDamaged(f"{path} is not a regular file") from None
    except FileNotFoundError:
        raise SealedPartDamaged(f"{path} is missing") from None
    except OSError as exc:
        raise SealedPartDamaged(f"{path} cannot be read ({exc.strerror})") from None
    if len(data) != part.bytes or not data.endswith(b"\n"):
        raise SealedPartDamaged(f"{path} is not the {part.bytes:,} bytes memory.json names")
    try:
        # JSON writes a line break inside a string as "\\n": each one here ends an entry,
        # and the part reads as one array in one call.
        records = decode_json(b"[" + data[:-1].replace(b"\n", b",") + b"]")
        entries = list(map(entry_of, records))
    except ValueError as exc:
        raise SealedPartDamaged(f"{path} is damaged ({type(exc).__name__})") from None
    if len(entries) != part.entries:
        raise SealedPartDamaged(f"{path} holds {len(entries)} entries, not {part.entries}")
    with _read_guard:
        _read_parts[path] = (stamp, entries)
    return entries


def check_parts(folder: Path, parts: list[SealedPart]) -> None:
    """That each of `parts` is where `memory.json` says, a regular file of its size, without
    reading it; `SealedPartDamaged` if one is not."""
    for number, part in enumerate(parts, 1):
        path = _part_path(folder, number, part)
        try:
            info = os.stat(path)
        except FileNotFoundError:
            raise SealedPartDamaged(f"{path} is missing") from None
        except OSError as exc:
            raise SealedPartDamaged(f"{path} cannot be read ({exc.strerror})") from None
        if not stat.S_ISREG(info.st_mode):
            raise SealedPartDamaged(f"{path} is not a regular file")
        if info.st_size != part.bytes:
            raise SealedPartDamaged(f"{path} is not the {part.bytes:,} bytes memory.json names")


# An entry not yet sealed, as `seal` takes it: its line of JSON, its level, and whether
# another entry covers it.
Candidate = tuple[str, int, bool]


def seal(folder: Path, parts: list[SealedPart], candidates: Iterable[Candidate]) -> list[str]:
    """Seal the covered ones of the entries not yet sealed (`candidates`, oldest first) into
    parts after `parts`, a run of at least `SEAL_BYTES` at a time, and add those parts to
    `parts`.

    Returns the lines of the entries left, in their order, for `memory.json` to hold: those
    no entry covers, and the covered ones short of a whole run. The caller holds the vault
    lock, and writes the `memory.json` that names the new parts once this returns."""
    files: list[tuple[Path, bytes]] = []
    # (position among the candidates, line) of each entry left.
    left: list[tuple[int, str]] = []
    run: list[tuple[int, bytes, int]] = []
    run_bytes = 0
    for position, (line, level, covered) in enumerate(candidates):
        if not covered:
            left.append((position, writable_json(line)))
            continue
        data = utf8_json(line + "\n")
        run.append((position, data, level))
        run_bytes += len(data)
        if run_bytes >= SEAL_BYTES:
            name = part_name(len(parts) + 1)
            files.append((folder / name, b"".join(data for _, data, _ in run)))
            levels = Counter(str(level) for _, _, level in run)
            parts.append(
                SealedPart(file=name, entries=len(run), bytes=run_bytes, levels=dict(levels))
            )
            run, run_bytes = [], 0
    if files:
        # The history a long backlog was just read from may still be in the disk's cache,
        # unwritten (an import, a copy): a sync of the whole disk would wait for it too.
        atomic_write_many(files, sync_each=True)
    left.extend((position, data[:-1].decode("utf-8")) for position, data, _ in run)
    left.sort()
    return [line for _, line in left]


def remove_unnamed(folder: Path, parts: list[SealedPart]) -> None:
    """Remove the part files the archive just written does not name: those a crash left,
    written before an archive that would have named them and was not written. Every part
    an earlier archive named, this one names too."""
    named = {part.file for part in parts}
    try:
        found = os.listdir(folder / SEALED_FOLDER)
    except OSError:
        return
    for name in found:
        relative = f"{SEALED_FOLDER}/{name}"
        if _PART_NAME.fullmatch(relative) and relative not in named:
            try:
                os.unlink(folder / relative)
            except OSError:
                pass  # left for the next compaction: it is never read
