"""Top hits of a query scored a term at a time, the way whoosh scores them.

whoosh finds the best notes for "a few words" by walking a tree of union matchers a document
at a time: several Python method calls per posting per word, and a collector call per note,
which is most of what a search costs. The queries Lore sends are nearly all an OR of terms
and phrases, so here each OR is taken apart: every term's postings are read a block at a time
and scored in one pass with whoosh's own BM25F (`bm25`, the same idf, average length and
per-note lengths), phrases and anything else are scored by their own whoosh matcher, and the
per-note sums are ranked as whoosh's top-N collector ranks them (higher score first, then the
lower document number).

The sums add the same scores whoosh adds, though not always in the same order, so a score
may differ from whoosh's in its last bit or two; rankings only differ if two notes' scores do.
Anything this cannot treat the same way (boosts, coordination, a weighting with a final pass,
a scorer without the length table) returns None, and the caller asks whoosh itself.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

from whoosh.codec.whoosh3 import W3LeafMatcher
from whoosh.matching import FilterMatcher
from whoosh.query import Or, Query, Term
from whoosh.scoring import bm25

Postings = tuple[list[int], list[float]]


def _parts(query: Query) -> list[Query]:
    """The queries an OR tree adds up, left to right; anything else is one part."""
    if (
        isinstance(query, Or)
        and query.boost == 1.0
        and not query.scale
        and not query.minmatch
        and query.subqueries
    ):
        parts: list[Query] = []
        for child in query.subqueries:
            parts.extend(_parts(child))
        return parts
    return [query]


def _matcher_scores(matcher: Any) -> Postings:
    """(docnums, scores) of whatever a matcher matches, read a posting at a time."""
    ids: list[int] = []
    scores: list[float] = []
    while matcher.is_active():
        ids.append(matcher.id())
        scores.append(matcher.score())
        matcher.next()
    return ids, scores


def _term_weights(matcher: Any) -> tuple[list[int], list[float]]:
    """(docnums, weights) of a term's postings, a block at a time where whoosh allows it."""
    ids: list[int] = []
    weights: list[float] = []
    if isinstance(matcher, W3LeafMatcher) and all(
        hasattr(matcher, name) for name in ("_read_ids", "_read_weights", "_next_block", "_i")
    ):
        while matcher.is_active():
            matcher._read_ids()
            matcher._read_weights()
            start = matcher._i
            ids.extend(matcher._ids[start:])
            weights.extend(matcher._weights[start:])
            matcher._next_block()
        return ids, weights
    while matcher.is_active():
        ids.append(matcher.id())
        weights.append(matcher.weight())
        matcher.next()
    return ids, weights


def _term_scores(searcher: Any, term: Term) -> Postings | None:
    """(docnums, scores) of one term in one segment; None if it must be left to whoosh."""
    schema = searcher.schema
    if term.boost != 1.0 or term.minquality or term.fieldname not in schema:
        return None
    fieldname = term.fieldname
    try:
        text = schema[fieldname].to_bytes(term.text)
    except ValueError:
        return [], []
    reader = searcher.reader()
    if (fieldname, text) not in reader:
        return [], []
    scorer = searcher.weighting.scorer(searcher, fieldname, text)
    lengths = getattr(scorer, "lengths", None)
    if not lengths or not all(hasattr(scorer, name) for name in ("idf", "avgfl", "B", "K1")):
        return None
    matcher = reader.postings(fieldname, text)
    deleted: Any = None
    if isinstance(matcher, FilterMatcher):
        if not matcher._exclude:
            return None
        deleted, matcher = matcher._ids, matcher.child
    ids, weights = _term_weights(matcher)
    idf, avgfl, B, K1 = scorer.idf, scorer.avgfl, scorer.B, scorer.K1
    if deleted:
        kept = [
            (docnum, weight)
            for docnum, weight in zip(ids, weights, strict=True)
            if docnum not in deleted
        ]
        ids = [docnum for docnum, _ in kept]
        weights = [weight for _, weight in kept]
    scores = [
        bm25(idf, weight, lengths[docnum], avgfl, B, K1)
        for docnum, weight in zip(ids, weights, strict=True)
    ]
    return ids, scores


def _part_scores(searcher: Any, part: Query, context: Any) -> Postings | None:
    if isinstance(part, Term):
        return _term_scores(searcher, part)
    matcher = part.matcher(searcher, context)
    if not matcher.is_active():
        return [], []
    return _matcher_scores(matcher)


def top_hits(
    searcher: Any,
    query: Query,
    limit: int,
    *,
    allow: Iterable[int] | None = None,
    exclude: Iterable[int] | None = None,
) -> list[tuple[float, int]] | None:
    """The best `limit` (score, docnum) pairs for `query`, best first, as whoosh's
    `searcher.search(query, limit=limit).top_n` lists them; None if whoosh must answer.

    `allow` keeps only those document numbers (whoosh's `filter`); `exclude` drops them
    (whoosh's `mask`).
    """
    weighting = searcher.weighting
    if getattr(weighting, "use_final", False):
        return None
    parts = _parts(query)
    context = searcher.context()
    totals: dict[int, float] = {}
    for leaf, offset in searcher.leaf_searchers():
        for part in parts:
            found = _part_scores(leaf, part, context)
            if found is None:
                return None
            ids, scores = found
            get = totals.get
            if offset:
                for docnum, score in zip(ids, scores, strict=True):
                    docnum += offset
                    totals[docnum] = get(docnum, 0.0) + score
            else:
                for docnum, score in zip(ids, scores, strict=True):
                    totals[docnum] = get(docnum, 0.0) + score
    items: Iterable[tuple[int, float]] = totals.items()
    if allow is not None:
        allowed = allow if isinstance(allow, (set, frozenset)) else set(allow)
        items = [(docnum, score) for docnum, score in items if docnum in allowed]
    if exclude is not None:
        excluded = exclude if isinstance(exclude, (set, frozenset)) else set(exclude)
        items = [(docnum, score) for docnum, score in items if docnum not in excluded]
    best = heapq.nsmallest(limit, items, key=lambda item: (-item[1], item[0]))
    return [(score, docnum) for docnum, score in best]
