"""One search's term-dictionary lookups, each made once.

To run one query whoosh looks a term up in a segment's term dictionary several times: to test
that it exists, to estimate its size for the matcher tree, to set up its scorer and to open its
postings. Each lookup hashes the key and reads the on-disk table, about 10 µs apiece. While a
search runs, `memo_term_lookups` answers the repeats from the first answer. The memo lives
for that one search and is thrown away after it, so no query is ever answered from an
earlier one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from whoosh.reading import TermNotFound

from lore.core.search import whoosh_private


class _MemoTerms:
    """A segment's terms reader that remembers what it was asked (all else passes through)."""

    def __init__(self, terms: Any) -> None:
        self._terms = terms
        self._infos: dict[tuple[str, bytes], Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._terms, name)

    def _info(self, fieldname: str, text: bytes) -> Any:
        key = (fieldname, text)
        if key in self._infos:
            return self._infos[key]
        try:
            info = self._terms.term_info(fieldname, text)
        except TermNotFound:
            info = None
        self._infos[key] = info
        return info

    def __contains__(self, term: tuple[str, bytes]) -> bool:
        return self._info(*term) is not None

    def term_info(self, fieldname: str, text: bytes) -> Any:
        info = self._info(fieldname, text)
        if info is None:
            raise TermNotFound(f"No term {fieldname}:{text!r}")
        return info

    def doc_frequency(self, fieldname: str, text: bytes) -> int:
        info = self._info(fieldname, text)
        if info is None:
            raise KeyError((fieldname, text))  # what the terms reader raises; callers give 0
        return int(info.doc_frequency())

    def matcher(self, fieldname: str, text: bytes, format_: Any, scorer: Any = None) -> Any:
        info = self.term_info(fieldname, text)
        return whoosh_private.open_postings(self._terms, info, format_, (fieldname, text), scorer)


@contextmanager
def memo_term_lookups(searcher: Any) -> Iterator[None]:
    """While the block runs, each segment of `searcher` looks each term up once.

    The caller must hold the lock that serialises use of `searcher`.
    """
    swapped = []
    for leaf, _ in searcher.leaf_searchers():
        reader = leaf.reader()
        terms = whoosh_private.segment_terms(reader)
        if terms is None or not whoosh_private.can_open_postings(terms):
            continue
        whoosh_private.replace_segment_terms(reader, _MemoTerms(terms))
        swapped.append((reader, terms))
    try:
        yield
    finally:
        for reader, terms in swapped:
            whoosh_private.replace_segment_terms(reader, terms)
