"""Every use the search fast path makes of whoosh's private attributes, and the probe for them.

The fast path reads what whoosh keeps to itself: a segment's terms and per-document readers,
the byte layout of its column files, a posting block's arrays, a deletion filter's set and
BM25F's per-field B. Those names carry no promise across releases (pyproject bounds
whoosh-reloaded below 2.8 for that reason), so they are reached through this module alone.

`missing_privates` looks each one up on the objects of an opened searcher: a feature probe,
not a version compare. When one is missing, or the fast path raises while it answers a search,
the index answers with whoosh's own public `Searcher.search` instead: slower, never empty.
Both are logged on the `lore.search` logger; with LORE_DEBUG set they raise instead, so a
renamed attribute shows up as a traceback on a developer's machine.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from whoosh.codec import whoosh3
from whoosh.codec.whoosh3 import LENGTHS_COLUMN, W3LeafMatcher
from whoosh.matching import FilterMatcher, NullMatcher
from whoosh.scoring import BM25F, BM25FScorer


def _logger() -> Any:
    # logging is imported only when there is something to say: a search has nothing to log.
    import logging

    return logging.getLogger("lore.search")


# What the fast path reads, by the object that holds it.
_SEGMENT_READER = ("_perdoc", "_terms")
_TERMS_READER = ("_codec", "_postfile")
_BYTES_COLUMN = ("_dbfile", "_lengths", "_offsets", "_basepos")
_LENGTHS_COLUMN = ("_dbfile", "_basepos", "_count")
_BLOCK_METHODS = ("_read_ids", "_read_weights", "_next_block")
_BLOCK_STATE = ("_i", "_ids", "_weights")
_FILTER = ("_ids", "_exclude")
STORED_COLUMNS = ("card", "body_text")
_PROBED_FIELD = "body"


class WhooshInternalsChanged(RuntimeError):
    """A private whoosh attribute the fast path relies on is gone (raised under LORE_DEBUG)."""


def debugging() -> bool:
    return bool(os.environ.get("LORE_DEBUG"))


# -- the probe ---------------------------------------------------------------------------------


def missing_privates(searcher: Any) -> list[str]:
    """The private whoosh names the fast path needs that `searcher`'s objects lack."""
    missing: list[str] = []

    def need(owner: Any, names: tuple[str, ...], label: str) -> None:
        missing.extend(f"{label}.{name}" for name in names if not hasattr(owner, name))

    need(whoosh3, ("_lenfield",), "whoosh.codec.whoosh3")
    need(BM25FScorer, ("_score",), "BM25FScorer")
    need(BM25F(), ("_field_B",), "BM25F")
    need(W3LeafMatcher, _BLOCK_METHODS, "W3LeafMatcher")
    need(FilterMatcher(NullMatcher(), frozenset(), exclude=True), _FILTER, "FilterMatcher")
    readers = [leaf.reader() for leaf, _ in searcher.leaf_searchers()]
    readers = [reader for reader in readers if reader.doc_count_all()]
    if not readers:
        return missing  # no segment on disk yet (whoosh's empty reader): probed again later
    reader = readers[0]
    need(reader, _SEGMENT_READER, "segment reader")
    terms = getattr(reader, "_terms", None)
    if terms is not None:
        need(terms, _TERMS_READER, "terms reader")
    for name in STORED_COLUMNS:
        if reader.has_column(name):
            need(reader.column_reader(name, translate=False), _BYTES_COLUMN, f"{name} column")
    perdoc = getattr(reader, "_perdoc", None)
    lengths_name = getattr(whoosh3, "_lenfield", lambda name: name)(_PROBED_FIELD)
    if perdoc is not None and perdoc.has_column(lengths_name):
        need(perdoc.column_reader(lengths_name, LENGTHS_COLUMN), _LENGTHS_COLUMN, "lengths column")
    matcher = _some_postings(reader)
    if isinstance(matcher, FilterMatcher):
        matcher = matcher.child
    if isinstance(matcher, W3LeafMatcher):
        need(matcher, _BLOCK_STATE, "W3LeafMatcher")
    return missing


def _some_postings(reader: Any) -> Any:
    """A term matcher of one segment, or None for a segment without terms."""
    # A status term is nearly always there, and cheaper to find than the lexicon's first.
    for status in (b"active", b"superseded"):
        if ("status", status) in reader:
            return reader.postings("status", status)
    for text in reader.lexicon(_PROBED_FIELD):
        return reader.postings(_PROBED_FIELD, text)
    return None


def report_missing(missing: list[str]) -> None:
    """Say once per searcher that the fast path is off; raise instead under LORE_DEBUG."""
    message = (
        "whoosh lacks what the search fast path reads (%s): searching with whoosh's own searcher"
    )
    if debugging():
        raise WhooshInternalsChanged(message % ", ".join(missing))
    _logger().warning(message, ", ".join(missing))


def report_failure(error: BaseException) -> None:
    """Log a fast-path failure before whoosh's own searcher answers; re-raise under LORE_DEBUG."""
    if debugging():
        raise error
    _logger().warning(
        "the search fast path failed (%s: %s): searching with whoosh's own searcher",
        type(error).__name__,
        error,
        exc_info=error,
    )


# -- segment readers -------------------------------------------------------------------------


def segment_terms(reader: Any) -> Any:
    """The terms reader of one segment, or None when whoosh keeps it elsewhere."""
    return getattr(reader, "_terms", None)


def replace_segment_terms(reader: Any, terms: Any) -> None:
    reader._terms = terms


def can_open_postings(terms: Any) -> bool:
    return all(hasattr(terms, name) for name in (*_TERMS_READER, "term_info"))


def open_postings(
    terms: Any, info: Any, format_: Any, term: tuple[str, bytes], scorer: Any = None
) -> Any:
    """The postings matcher of a term whose `info` the caller already looked up."""
    return terms._codec.postings_reader(terms._postfile, info, format_, term=term, scorer=scorer)


# -- columns ---------------------------------------------------------------------------------


def bytes_column_layout(column: Any) -> tuple[Any, Any, Any, int]:
    """(open file, lengths, offsets, base position) of a bytes column's values.

    Raises AttributeError for a column whoosh does not keep in a file of its own.
    """
    return column._dbfile.file, column._lengths, column._offsets, column._basepos


def field_length_bytes(reader: Any, fieldname: str) -> Any:
    """One length byte per document of `fieldname` in one segment; None if it has none.

    Raises AttributeError, OSError or ValueError when the column cannot be read this way.
    """
    perdoc = reader._perdoc
    column_name = whoosh3._lenfield(fieldname)
    if not perdoc.has_column(column_name):
        return None
    column = perdoc.column_reader(column_name, LENGTHS_COLUMN)
    try:
        # One read for the whole column instead of a read per document.
        return column._dbfile.get(column._basepos, column._count)
    except AttributeError:
        return column.load()


# -- scoring ---------------------------------------------------------------------------------


def field_b(weighting: Any, fieldname: str) -> float:
    """The B a BM25F weighting uses for `fieldname`."""
    return float(weighting._field_B.get(fieldname, weighting.B))


def length_scorer(scorer: Any) -> Callable[[float, int], float] | None:
    """BM25F's score of (weight, field length) for one term, or None if whoosh hides it."""
    score = getattr(scorer, "_score", None)
    return score if callable(score) else None


# -- postings --------------------------------------------------------------------------------


def read_blocks(matcher: Any) -> tuple[list[int], list[float]] | None:
    """(docnums, weights) of a whoosh 3 term matcher, a block at a time; None for any other."""
    if not isinstance(matcher, W3LeafMatcher) or not all(
        hasattr(matcher, name) for name in (*_BLOCK_METHODS, "_i")
    ):
        return None
    ids: list[int] = []
    weights: list[float] = []
    while matcher.is_active():
        matcher._read_ids()
        matcher._read_weights()
        start = matcher._i
        ids.extend(matcher._ids[start:])
        weights.extend(matcher._weights[start:])
        matcher._next_block()
    return ids, weights


def deletion_filter(matcher: FilterMatcher) -> tuple[Any, Any] | None:
    """(deleted docnums, the unfiltered matcher) of a filter that leaves deletions out; None
    for a filter that keeps only some documents."""
    if not matcher._exclude:
        return None
    return matcher._ids, matcher.child
