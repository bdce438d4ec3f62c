"""Top hits of a query, scored a term at a time: BM25F for words, whoosh's own for the rest.

A word the user types is looked up in the title, the tags and the body. whoosh scores each
field on its own and adds the three, so a word that is only in a note's short title can
outweigh a body full of the question's words: for a long question, the notes whose titles hold
one of its words crowd out the note that answers it. Here the fields of one word are combined
before saturating, as BM25F proper does (Robertson and Zaragoza): each field's frequency,
weighted by its field boost (whoosh keeps it in the posting weights) and normalised by that
field's length, is summed, and the sum saturates once (GROUP_K1), with the idf of the word's
commonest field. A word then adds at most idf × (GROUP_K1 + 1) to a note, wherever the note
holds it. A title still counts for how much of the whole question it names: when the words in
a note's title are a share s of the question's worth, the note gains s³ of that worth, all of
it when the title is the question ("Pluto"), 1/512 when it names one word of eight. A term in
a single field (`tag:x`, `title:x`), a phrase, or anything else is scored as whoosh scores it.

whoosh finds the best notes by walking a tree of union matchers a document at a time: several
Python method calls per posting per word, and a collector call per note. Here each OR is taken
apart: every term's postings are read a block at a time and scored in one pass; phrases and
anything else are scored by their own whoosh matcher, and the per-note sums are ranked as
whoosh's top-N collector ranks them (higher score first, then the lower document number).
What this cannot score (a weighting with a final pass, a scorer without the length table,
a posting filter it cannot read) returns None, and the caller asks whoosh itself.
"""

from __future__ import annotations

import heapq
import re
import weakref
from array import array
from collections.abc import Iterable
from typing import Any, TypeAlias

from whoosh.lang.porter import stem
from whoosh.matching import FilterMatcher
from whoosh.query import Or, Query, Term
from whoosh.scoring import bm25

from lore.core.search import whoosh_private

Postings = tuple[list[int], list[float]]
# BM25F saturates a word's combined frequency once, so it can afford a gentler curve than a
# single field's 1.2: a note holding a word often, or in its title, still counts for more.
GROUP_K1 = 2.0
# The field a note's title is indexed in: a title naming much of the question counts extra,
# its share of the question's worth raised to this power, times the worth it names.
TITLE_FIELD = "title"
TITLE_POWER = 2


class WordGroup:
    """One word looked up in several fields, scored as one BM25F term (times its boost)."""

    def __init__(self, terms: list[Term]) -> None:
        self.terms = terms
        self.boost = float(terms[0].boost)


def _plain_or(query: Query) -> bool:
    return (
        isinstance(query, Or)
        and query.boost == 1.0
        and not query.scale
        and not query.minmatch
        and bool(query.subqueries)
    )


def _flat_parts(query: Query) -> list[Query]:
    """The queries an OR tree adds up, left to right; anything else is one part."""
    if _plain_or(query):
        parts: list[Query] = []
        for child in query.subqueries:
            parts.extend(_flat_parts(child))
        return parts
    return [query]


_NOT_WORD = re.compile(r"\W+")


def _word_key(text: object) -> str:
    """The fields analyse a word their own way ("Planets?" is `planet` in the title and the
    body, `planets?` among the tags); the stem of its letters is the same in all of them."""
    return str(stem(_NOT_WORD.sub("", str(text).lower())))


def _plain_term(part: Query) -> bool:
    return isinstance(part, Term) and not part.minquality


def _parts(query: Query) -> list[Query | WordGroup]:
    """The parts an OR tree adds up, left to right, the fields one word is looked up in
    gathered into one WordGroup. A query lists a word's fields one after another (the
    parser writes title, tags, body for each word), so a group is a run of plain terms in
    distinct fields whose texts are the same word."""
    parts: list[Query | WordGroup] = []
    run: list[Term] = []

    def close() -> None:
        if len(run) > 1:
            parts.append(WordGroup(list(run)))
        else:
            parts.extend(run)
        run.clear()

    for part in _flat_parts(query):
        if not _plain_term(part):
            close()
            parts.append(part)
            continue
        assert isinstance(part, Term)
        if run and (
            part.fieldname in {term.fieldname for term in run}
            or part.boost != run[0].boost
            or _word_key(part.text) != _word_key(run[0].text)
        ):
            close()
        run.append(part)
    close()
    return parts


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
    blocks = whoosh_private.read_blocks(matcher)
    if blocks is not None:
        return blocks
    ids: list[int] = []
    weights: list[float] = []
    while matcher.is_active():
        ids.append(matcher.id())
        weights.append(matcher.weight())
        matcher.next()
    return ids, weights


def _field_bytes(searcher: Any, term: Term) -> bytes | None:
    """The term's text as its field indexes it; None when the field cannot hold it."""
    try:
        return bytes(searcher.schema[term.fieldname].to_bytes(term.text))
    except ValueError:
        return None


def _term_scorer(searcher: Any, term: Term) -> tuple[bytes, Any] | None:
    """(the term's bytes, its scorer) in one segment; (b"", None) when the segment does not
    hold it; None if it must be left to whoosh."""
    schema = searcher.schema
    if term.minquality or term.fieldname not in schema:
        return None
    text = _field_bytes(searcher, term)
    if text is None or (term.fieldname, text) not in searcher.reader():
        return b"", None
    scorer = searcher.weighting.scorer(searcher, term.fieldname, text)
    lengths = getattr(scorer, "lengths", None)
    if not lengths or not all(hasattr(scorer, name) for name in ("idf", "avgfl", "B", "K1")):
        return None
    return text, scorer


def _read_postings(searcher: Any, fieldname: str, text: bytes) -> Postings | None:
    """(docnums, weights) of a term in one segment, deleted documents left out."""
    matcher = searcher.reader().postings(fieldname, text)
    deleted: Any = None
    if isinstance(matcher, FilterMatcher):
        unfiltered = whoosh_private.deletion_filter(matcher)
        if unfiltered is None:
            return None
        deleted, matcher = unfiltered
    ids, weights = _term_weights(matcher)
    if deleted:
        kept = [
            (docnum, weight)
            for docnum, weight in zip(ids, weights, strict=True)
            if docnum not in deleted
        ]
        ids = [docnum for docnum, _ in kept]
        weights = [weight for _, weight in kept]
    return ids, weights


def _term_postings(searcher: Any, term: Term) -> tuple[list[int], list[float], Any] | None:
    """(docnums, weights, scorer) of one term in one segment, deleted documents left out;
    None if it must be left to whoosh. No postings: empty lists and a None scorer."""
    found = _term_scorer(searcher, term)
    if found is None:
        return None
    text, scorer = found
    if scorer is None:
        return [], [], None
    postings = _read_postings(searcher, term.fieldname, text)
    if postings is None:
        return None
    return postings[0], postings[1], scorer


def _term_scores(searcher: Any, term: Term) -> Postings | None:
    """(docnums, scores) of one term in one segment; None if it must be left to whoosh."""
    found = _term_postings(searcher, term)
    if found is None:
        return None
    ids, weights, scorer = found
    if scorer is None:
        return [], []
    lengths, idf, avgfl, B, K1 = scorer.lengths, scorer.idf, scorer.avgfl, scorer.B, scorer.K1
    scores = [
        bm25(idf, weight, lengths[docnum], avgfl, B, K1)
        for docnum, weight in zip(ids, weights, strict=True)
    ]
    if term.boost != 1.0:
        # As whoosh's wrapping matcher does: the boost multiplies the score.
        scores = [score * term.boost for score in scores]
    return ids, scores


def _group_idf(searcher: Any, group: WordGroup) -> float | None:
    """The idf of the word's commonest field, from the whole index; None if no field has it."""
    idfs = []
    for term in group.terms:
        text = _field_bytes(searcher, term)
        if text is not None and searcher.doc_frequency(term.fieldname, text):
            idfs.append(float(searcher.idf(term.fieldname, text)))
    return min(idfs) if idfs else None


# Per segment reader: each (field, term, avgfl, B)'s docnums and length-normalised frequency,
# kept for as long as the reader lives, up to _KEPT_POSTINGS postings. Questions share their
# common words, and the preview asks again at every keystroke.
_Frequencies: TypeAlias = "tuple[array[int], array[float]]"


class _Kept:
    def __init__(self) -> None:
        self.entries: dict[tuple[str, bytes, float, float], _Frequencies] = {}
        self.postings = 0


_kept: weakref.WeakKeyDictionary[Any, _Kept] = weakref.WeakKeyDictionary()
_KEPT_POSTINGS = 1_000_000
_NONE: _Frequencies = (array("i"), array("d"))


def _field_frequencies(searcher: Any, term: Term) -> _Frequencies | None:
    """(docnums, weight / length normalisation) of a term in one segment, kept with the
    segment; None if it must be left to whoosh."""
    found = _term_scorer(searcher, term)
    if found is None:
        return None
    text, scorer = found
    if scorer is None:
        return _NONE
    reader = searcher.reader()
    try:
        kept = _kept.setdefault(reader, _Kept())
    except TypeError:  # a reader that cannot be weakly referenced keeps nothing
        kept = _Kept()
    lengths, avgfl, B = scorer.lengths, scorer.avgfl, scorer.B
    key = (term.fieldname, text, float(avgfl), float(B))
    held = kept.entries.get(key)
    if held is not None:
        return held
    postings = _read_postings(searcher, term.fieldname, text)
    if postings is None:
        return None
    ids, weights = postings
    held = (
        array("i", ids),
        array(
            "d",
            [
                weight / ((1 - B) + B * lengths[docnum] / avgfl)
                for docnum, weight in zip(ids, weights, strict=True)
            ],
        ),
    )
    if kept.postings + len(ids) > _KEPT_POSTINGS:
        kept.entries.clear()
        kept.postings = 0
    kept.entries[key] = held
    kept.postings += len(ids)
    return held


def _group_scores(
    searcher: Any, group: WordGroup, idf: float
) -> tuple[list[int], list[float], Iterable[int]] | None:
    """(docnums, BM25F scores, docnums holding the word in their title) of one word over its
    fields in one segment."""
    combined: dict[int, float] = {}
    titled: Iterable[int] = ()
    for term in group.terms:
        found = _field_frequencies(searcher, term)
        if found is None:
            return None
        ids, frequencies = found
        if not ids:
            continue
        if term.fieldname == TITLE_FIELD:
            titled = ids
        get = combined.get
        for docnum, frequency in zip(ids, frequencies, strict=True):
            combined[docnum] = get(docnum, 0.0) + frequency
    scale = idf * (GROUP_K1 + 1) * group.boost
    return list(combined), [scale * tf / (tf + GROUP_K1) for tf in combined.values()], titled


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
    """The best `limit` (score, docnum) pairs for `query`, best first, listed as whoosh's
    `searcher.search(query, limit=limit).top_n` lists them; None if whoosh must answer.

    `allow` keeps only those document numbers (whoosh's `filter`); `exclude` drops them
    (whoosh's `mask`).
    """
    weighting = searcher.weighting
    if getattr(weighting, "use_final", False):
        return None
    parts = _parts(query)
    # A word's idf is the whole index's, the same in every segment.
    idfs = [_group_idf(searcher, part) if isinstance(part, WordGroup) else None for part in parts]
    # The most each word can add to a note, and the question's whole worth in words.
    word_worth = [
        idf * (GROUP_K1 + 1) * part.boost
        if isinstance(part, WordGroup) and idf is not None
        else 0.0
        for part, idf in zip(parts, idfs, strict=True)
    ]
    all_words = sum(word_worth)
    context = searcher.context()
    totals: dict[int, float] = {}
    in_title: dict[int, float] = {}
    for leaf, offset in searcher.leaf_searchers():
        for part, idf, worth in zip(parts, idfs, word_worth, strict=True):
            if isinstance(part, WordGroup):
                if idf is None:
                    continue
                grouped = _group_scores(leaf, part, idf)
                if grouped is None:
                    return None
                ids, scores, titled = grouped
                for docnum in titled:
                    in_title[docnum + offset] = in_title.get(docnum + offset, 0.0) + worth
            else:
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
    for docnum, named in in_title.items():
        totals[docnum] += named * (named / all_words) ** TITLE_POWER
    items: Iterable[tuple[int, float]] = totals.items()
    if allow is not None:
        allowed = allow if isinstance(allow, (set, frozenset)) else set(allow)
        items = [(docnum, score) for docnum, score in items if docnum in allowed]
    if exclude is not None:
        excluded = exclude if isinstance(exclude, (set, frozenset)) else set(exclude)
        items = [(docnum, score) for docnum, score in items if docnum not in excluded]
    best = heapq.nsmallest(limit, items, key=lambda item: (-item[1], item[0]))
    return [(score, docnum) for docnum, score in best]
