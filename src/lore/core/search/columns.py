"""A search hit's stored bytes, read by document number from memory-mapped column files.

whoosh reads one value of a bytes column with a seek and a read through several layers of
Python, about 13 µs; a search reads two values a hit (its card and, for the snippet, its
body). Mapping each segment's column file once per searcher makes that a slice. A column
whoosh does not keep in a plain file of its own (a compound segment, an in-memory index) is
read the ordinary way.
"""

from __future__ import annotations

import mmap
from bisect import bisect_right
from typing import Any

from lore.core.search import whoosh_private


class _SegmentColumn:
    def __init__(self, reader: Any, name: str, mapped: bool) -> None:
        self._column = reader.column_reader(name, translate=False)
        self._map: mmap.mmap | None = None
        if not mapped:
            return
        try:
            handle, self._lengths, self._offsets, self._base = whoosh_private.bytes_column_layout(
                self._column
            )
            self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (AttributeError, OSError, ValueError):
            self._map = None

    def __getitem__(self, docnum: int) -> bytes:
        if self._map is None:
            return bytes(self._column[docnum])
        length = self._lengths[docnum]
        start = self._base + self._offsets[docnum]
        return self._map[start : start + length]

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None


class StoredColumn:
    """Column `name` of every segment of `searcher`, as one sequence of bytes by docnum.

    With `mapped` False every value is read through whoosh's public column reader.
    """

    def __init__(self, searcher: Any, name: str, *, mapped: bool = True) -> None:
        leaves = searcher.leaf_searchers()
        self._starts = [offset for _, offset in leaves]
        self._segments = [_SegmentColumn(leaf.reader(), name, mapped) for leaf, _ in leaves]

    def __getitem__(self, docnum: int) -> bytes:
        segment = bisect_right(self._starts, docnum) - 1
        return self._segments[segment][docnum - self._starts[segment]]

    def close(self) -> None:
        for segment in self._segments:
            segment.close()
