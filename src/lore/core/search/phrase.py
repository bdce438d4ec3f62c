"""A "quoted phrase" query that finds and scores its notes in one pass over the postings.

whoosh matches a phrase through a tree of span, intersection and term matchers, calling
several methods per posting of every word: a phrase of two common words cost a search tens of
milliseconds. `AdjacentPhrase` walks the rarest word's postings, skips the other words' lists
to those notes, keeps the notes where the words stand next to each other, and hands whoosh a
plain list of (note, score). The scores are the ones whoosh's phrase matcher gives: the sum of
each word's term score, added in the same order.
"""

from __future__ import annotations

from typing import Any

from whoosh import matching
from whoosh.query import Phrase, Query

from lore.core.search import whoosh_private


def _tree_sum(values: list[float]) -> float:
    """Sum `values` in the order whoosh's binary tree of intersection matchers adds them."""
    if len(values) == 1:
        return values[0]
    half = len(values) // 2
    return _tree_sum(values[:half]) + _tree_sum(values[half:])


def _scorer_for(scorer: Any) -> Any:
    """A function (docnum, weight) -> score equal to `scorer.score` on a posting, or None."""
    score = whoosh_private.length_scorer(scorer)
    if score is None:
        return None
    lengths = getattr(scorer, "lengths", None)
    if lengths is not None:
        return lambda docnum, weight: score(weight, lengths[docnum])
    if hasattr(scorer, "dfl"):
        return lambda docnum, weight: score(weight, scorer.dfl(docnum))
    return None


class AdjacentPhrase(Phrase):  # type: ignore[misc]
    """whoosh's `Phrase` for words that must stand next to each other (slop 1), made faster."""

    def matcher(self, searcher: Any, context: Any = None) -> Any:
        fieldname = self.fieldname
        if (
            self.slop != 1
            or self.boost != 1.0
            or len(self.words) < 2
            or not searcher.is_atomic()
            or fieldname not in searcher.schema
        ):
            return super().matcher(searcher, context)
        field = searcher.schema[fieldname]
        if not field.format or not field.format.supports("positions"):
            return super().matcher(searcher, context)
        reader = searcher.reader()
        # As whoosh's term matchers do: an unscored context still scores with the searcher's.
        weighting = (context.weighting if context is not None else None) or searcher.weighting
        words: list[bytes] = []
        for word in self.words:
            try:
                text = field.to_bytes(word)
            except ValueError:
                return matching.NullMatcher()
            if (fieldname, text) not in reader:
                return matching.NullMatcher()
            words.append(text)
        scorers = [_scorer_for(weighting.scorer(searcher, fieldname, text)) for text in words]
        if any(scorer is None for scorer in scorers):
            return super().matcher(searcher, context)

        # Rarest word first: its notes are the only candidates; each further list is skipped
        # forward to them, so most postings of a common word are never read one by one.
        order = sorted(range(len(words)), key=lambda i: reader.doc_frequency(fieldname, words[i]))
        found: list[dict[int, tuple[float, bytes]]] = [{} for _ in words]
        candidates: list[int] | None = None
        for position in order:
            postings = reader.postings(fieldname, words[position])
            held = found[position]
            if candidates is None:
                while postings.is_active():
                    held[postings.id()] = (postings.weight(), postings.value())
                    postings.next()
            else:
                for docnum in candidates:
                    if not postings.is_active():
                        break
                    postings.skip_to(docnum)
                    if postings.is_active() and postings.id() == docnum:
                        held[docnum] = (postings.weight(), postings.value())
            candidates = sorted(held)
            if not candidates:
                return matching.NullMatcher()

        decode = field.format.decoder("positions")
        ids: list[int] = []
        scores: list[float] = []
        for docnum in candidates or []:
            starts = set(decode(found[0][docnum][1]))
            for offset in range(1, len(words)):
                following = decode(found[offset][docnum][1])
                starts &= {place - offset for place in following}
                if not starts:
                    break
            if starts:
                ids.append(docnum)
                scores.append(
                    _tree_sum(
                        [
                            scorer(docnum, found[index][docnum][0])
                            for index, scorer in enumerate(scorers)
                        ]
                    )
                )
        if not ids:
            return matching.NullMatcher()
        return matching.ListMatcher(ids, weights=scores)


def whoosh_phrases(query: Query) -> Query:
    """A copy of `query` with each AdjacentPhrase made whoosh's own Phrase again."""

    def plain(node: Query) -> Query:
        if isinstance(node, AdjacentPhrase):
            return Phrase(
                node.fieldname,
                list(node.words),
                slop=node.slop,
                boost=node.boost,
                char_ranges=node.char_ranges,
            )
        return node

    return query.accept(plain)
