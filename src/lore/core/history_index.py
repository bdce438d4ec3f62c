"""A byte-offset index of history.jsonl, so turn k is read without reading the turns before it.

The index is derived state kept in `.lore/history.idx`: one fixed-size entry per record line
(start, end, CRC-32 of the line). It is checked against the history file before use (the
last entry's line must still be where the index says, with the same CRC) and extended by
scanning only the bytes appended since; anything that does not check out is rebuilt from the
history, which stays the only source of truth. A read-only vault keeps the index in memory.
"""

from __future__ import annotations

import contextlib
import os
import sys
import zlib
from array import array
from pathlib import Path

from lore.core.storage import atomic_write_bytes, open_regular
from lore.errors import VaultError

# Each entry is three little-endian uint64: line start, line end, CRC-32 of the line (only the
# last entry's CRC is checked), so the whole file loads with one `array.frombytes`.
_ENTRY_WORDS = 3
_ENTRY_SIZE = 8 * _ENTRY_WORDS
_SCAN_CHUNK = 1 << 20


def _looks_like_record(line: bytes) -> bool:
    """A whole JSON object line; torn and garbage lines are left out of the index."""
    body = line.strip()
    return len(body) >= 2 and body[:1] == b"{" and body[-1:] == b"}" and line.endswith(b"\n")


class HistoryIndex:
    """Offsets of the record lines of one JSONL file, kept in step with the file."""

    def __init__(self, history: Path, index_file: Path | None) -> None:
        self.history = history
        self.index_file = index_file
        self.offsets: array[int] = array("Q")
        self.ends: array[int] = array("Q")
        self._last_crc = 0
        self._covered = 0  # bytes of the history already scanned
        self._persisted = 0  # entries already in the index file
        self._loaded = False

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def persisted(self) -> int:
        """How many entries are already saved in the index file."""
        return self._persisted

    # -- keeping in step ---------------------------------------------------------------------

    def refresh(self) -> None:
        """Catch up with the history file: load, validate, extend or rebuild as needed."""
        if not self._loaded:
            self._load()
            self._loaded = True
        try:
            size = os.path.getsize(self.history)
        except OSError:
            size = 0
        if size < self._covered or not self._last_entry_matches():
            self._reset()
        if size > self._covered:
            self._scan_from(self._covered)

    def persist(self) -> None:
        """Write the entries not yet on disk. The caller holds the vault lock.

        Another process may have saved entries since this one loaded the file, so what is on
        disk is checked first: appended to when it is a prefix of what this process knows,
        rewritten whole when it is not.
        """
        if self.index_file is None or not self.offsets:
            return
        try:
            on_disk = self._entries_on_disk()
            if on_disk == len(self.offsets):
                self._persisted = on_disk
                return
            if on_disk > 0:
                self._append(self._encode(on_disk))
            else:
                atomic_write_bytes(self.index_file, self._encode(0))
        except (OSError, VaultError):
            # A cache that cannot be written is rebuilt next time; the history is intact.
            self.index_file = None
            return
        self._persisted = len(self.offsets)

    @staticmethod
    def extend_file(index_file: Path, history: Path, start: int, line: bytes) -> bool:
        """Add the entry of `line`, just appended to `history` at byte `start`, to a saved
        index without loading it. The caller holds the vault lock.

        Done only when the saved index checks out as a load would (its last line is still
        where it says, with the same CRC) and ends exactly at `start`; False otherwise, and
        the caller loads and refreshes the index instead. A process that asks once then
        pays for one entry, not for reading a million.
        """
        if not _looks_like_record(line):
            return False
        try:
            with open(index_file, "r+b") as handle:
                size = handle.seek(0, os.SEEK_END)
                if size == 0 or size % _ENTRY_SIZE:
                    return False
                handle.seek(size - _ENTRY_SIZE)
                last = array("Q")
                last.frombytes(handle.read(_ENTRY_SIZE))
                if sys.byteorder != "little":
                    last.byteswap()
                last_start, last_end, last_crc = last
                if last_end != start:
                    return False
                with open_regular(history) as reader:
                    reader.seek(last_start)
                    if zlib.crc32(reader.read(last_end - last_start)) != last_crc:
                        return False
                entry = array("Q", [start, start + len(line), zlib.crc32(line)])
                if sys.byteorder != "little":
                    entry.byteswap()
                handle.seek(size)
                handle.write(entry.tobytes())
        except OSError:
            return False
        return True

    def _entries_on_disk(self) -> int:
        """How many saved entries agree with this index; 0 when the file must be rewritten."""
        assert self.index_file is not None
        try:
            size = self.index_file.stat().st_size
        except FileNotFoundError:
            return 0
        count = size // _ENTRY_SIZE
        if size % _ENTRY_SIZE or count == 0 or count > len(self.offsets):
            return 0
        with open(self.index_file, "rb") as handle:
            handle.seek((count - 1) * _ENTRY_SIZE)
            last = array("Q")
            last.frombytes(handle.read(_ENTRY_SIZE))
        if sys.byteorder != "little":
            last.byteswap()
        if (last[0], last[1]) != (self.offsets[count - 1], self.ends[count - 1]):
            return 0
        return count

    def _encode(self, start: int) -> bytes:
        words = array("Q", bytes(_ENTRY_SIZE * (len(self.offsets) - start)))
        words[0::_ENTRY_WORDS] = self.offsets[start:]
        words[1::_ENTRY_WORDS] = self.ends[start:]
        words[-1] = self._last_crc
        if sys.byteorder != "little":
            words.byteswap()
        return words.tobytes()

    def _append(self, data: bytes) -> None:
        assert self.index_file is not None
        fd = os.open(self.index_file, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def _reset(self) -> None:
        self.offsets = array("Q")
        self.ends = array("Q")
        self._covered = 0
        self._persisted = 0
        self._last_crc = 0
        if self.index_file is not None:
            with contextlib.suppress(OSError):
                self.index_file.unlink()

    def _load(self) -> None:
        if self.index_file is None:
            return
        try:
            data = self.index_file.read_bytes()
        except OSError:
            return
        whole = len(data) - len(data) % _ENTRY_SIZE
        if whole == 0:
            return
        words = array("Q")
        words.frombytes(data[:whole])
        if sys.byteorder != "little":
            words.byteswap()
        self.offsets = words[0::_ENTRY_WORDS]
        self.ends = words[1::_ENTRY_WORDS]
        self._last_crc = words[-1]
        self._covered = self.ends[-1]
        # A torn entry from an interrupted append: rewrite the whole file next time.
        self._persisted = len(self.offsets) if whole == len(data) else 0

    def _last_entry_matches(self) -> bool:
        if not self.offsets:
            return True
        line = self.read_line(len(self.offsets) - 1)
        return line is not None and zlib.crc32(line) == self._last_crc

    def _scan_from(self, start: int) -> None:
        try:
            handle = open_regular(self.history)
        except OSError:
            return
        with handle:
            handle.seek(start)
            position = start
            pending = b""
            while True:
                block = handle.read(_SCAN_CHUNK)
                if not block:
                    break
                data = pending + block
                cursor = 0
                while True:
                    newline = data.find(b"\n", cursor)
                    if newline < 0:
                        break
                    line = data[cursor : newline + 1]
                    if _looks_like_record(line):
                        self.offsets.append(position + cursor)
                        self.ends.append(position + newline + 1)
                        self._last_crc = zlib.crc32(line)
                    cursor = newline + 1
                position += cursor
                pending = data[cursor:]
            # A line without its newline may still be being written: rescan it next time.
            self._covered = position

    # -- reading -----------------------------------------------------------------------------

    def read_line(self, position: int) -> bytes | None:
        lines = self.read_lines(position, position + 1)
        return lines[0] if lines else None

    def read_lines(self, start: int, stop: int) -> list[bytes]:
        """The raw record lines at positions [start, stop), read in one contiguous block."""
        start = max(0, start)
        stop = min(stop, len(self.offsets))
        if start >= stop:
            return []
        first = self.offsets[start]
        end = self.ends[stop - 1]
        try:
            with open_regular(self.history) as handle:
                handle.seek(first)
                block = handle.read(end - first)
        except OSError:
            return []
        lines = []
        for position in range(start, stop):
            lines.append(block[self.offsets[position] - first : self.ends[position] - first])
        return lines
