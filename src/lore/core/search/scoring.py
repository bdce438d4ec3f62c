"""BM25F as whoosh computes it, with each segment's field lengths read once, not per posting.

whoosh's BM25F asks the segment for a document's field length at every posting it scores: a
seek and a read of one byte from the lengths column each time, most of the cost of ranking a
common word. Here a segment's whole lengths column is decoded into a list the first time a
query scores that field, and kept for as long as the searcher (the weighting object lives
exactly as long). The arithmetic is whoosh's own `bm25`, so scores are identical.
"""

from __future__ import annotations

from typing import Any

from whoosh.scoring import BM25F, BM25FScorer, bm25
from whoosh.util.numeric import byte_to_length

from lore.core.search import whoosh_private

# The length whoosh reports for each stored length byte; 0 means "no length", read as 1.
_LENGTH_OF_BYTE = [byte_to_length(value) if value else 1 for value in range(256)]


def _length_table(reader: Any, fieldname: str) -> list[int] | None:
    """Every document's length of `fieldname` in one segment, or None if it cannot be read."""
    try:
        # One byte a document; documents past the end have no length.
        raw = whoosh_private.field_length_bytes(reader, fieldname)
    except (AttributeError, OSError, ValueError):
        return None
    if raw is None:
        return None
    lengths = [_LENGTH_OF_BYTE[value] for value in raw]
    lengths.extend([1] * (reader.doc_count_all() - len(lengths)))
    return lengths


class _TableScorer(BM25FScorer):  # type: ignore[misc]
    def __init__(
        self, searcher: Any, fieldname: str, text: bytes, B: float, K1: float, qf: float
    ) -> None:
        super().__init__(searcher, fieldname, text, B, K1, qf=qf)
        self.lengths: list[int] = []

    def score(self, matcher: Any) -> float:
        length = self.lengths[matcher.id()]
        return float(bm25(self.idf, matcher.weight(), length, self.avgfl, self.B, self.K1))


class TableBM25F(BM25F):  # type: ignore[misc]
    """whoosh's BM25F, scoring from per-segment field-length lists. Use one per searcher."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._tables: dict[tuple[int, str], tuple[Any, list[int] | None]] = {}

    def _lengths(self, reader: Any, fieldname: str) -> list[int] | None:
        key = (id(reader), fieldname)
        held = self._tables.get(key)
        if held is None or held[0] is not reader:
            held = (reader, _length_table(reader, fieldname))
            self._tables[key] = held
        return held[1]

    def scorer(self, searcher: Any, fieldname: str, text: bytes, qf: float = 1) -> Any:
        reader = searcher.reader()
        lengths = None
        if searcher.schema[fieldname].scorable:
            lengths = self._lengths(reader, fieldname)
        if lengths is None or len(lengths) < reader.doc_count_all():
            return super().scorer(searcher, fieldname, text, qf=qf)
        B = whoosh_private.field_b(self, fieldname)
        scorer = _TableScorer(searcher, fieldname, text, B, self.K1, qf)
        scorer.lengths = lengths
        return scorer
