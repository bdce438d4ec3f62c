"""Offline summaries that keep what a turn established: its names, numbers and cited notes.

Without a model to write summaries, a turn is reduced to what a later question could need: the
question's own words, then the answer's sentences richest in facts (numbers, names, the
question's words), written telegraphically (stopwords left out, negations and comparisons
kept), and the titles of the notes the answer cited:

    Mars moons? → Two: Phobos Deimos. (notes: Mars, Phobos and Deimos)

Summaries of summaries keep each part's densest line first, so every stretch of the past is
still named, then as many further lines as fit, in the order they were asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lore.core.passages import STOPWORDS, split_sentences, words
from lore.core.search.query import stem_word
from lore.core.tokens import estimate_tokens

_CITATION = re.compile(r"\s?\[\d+(?:\s*,\s*\d+)*\]")
_LEAD = re.compile(r"^\s*From the notes:\s*", re.IGNORECASE)
_UNVERIFIED = " (from an unverified source)"
_EDGE_PUNCTUATION = re.compile(r"^\W+|\W+$")
# Small words that change what a fact says, kept when the rest are left out.
_KEPT_TEXT = "no not nor never without than more less most least only all none"
_KEPT = frozenset(_KEPT_TEXT.split())
# A turn's question takes at most this share of its digest, its cited notes this much.
_QUESTION_SHARE = 0.35
_NOTES_SHARE = 0.25
_MAX_CITED = 3


def telegraphic(text: str) -> str:
    """`text` without its stopwords; numbers, names, negations and comparisons stay."""
    kept = []
    for token in text.split():
        bare = _EDGE_PUNCTUATION.sub("", token).lower()
        if bare in STOPWORDS and bare not in _KEPT:
            continue
        kept.append(token)
    return " ".join(kept)


def _fact_weight(sentence: str, question_terms: set[str]) -> float:
    """How much a sentence states: what the question asked about most, then numbers, then
    names."""
    tokens = sentence.split()
    numbers = sum(1 for token in tokens if any(ch.isdigit() for ch in token))
    names = sum(1 for token in tokens[1:] if token[:1].isupper())
    shared = len({stem_word(word) for word in words(sentence)} & question_terms)
    return 3.0 * shared + 2.0 * numbers + names


def _fits(text: str, limit: int) -> str:
    """The longest prefix of whole words of `text` within `limit` tokens ("" if none)."""
    if estimate_tokens(text) <= limit:
        return text
    kept: list[str] = []
    for token in text.split():
        if estimate_tokens(" ".join([*kept, token])) > limit:
            break
        kept.append(token)
    return " ".join(kept)


def _densest_words(sentence: str, limit: int, question_terms: set[str]) -> str:
    """The words of `sentence` that say most (numbers, the question's words, names), in
    their order, within `limit` tokens."""
    tokens = sentence.split()

    def telling(position: int) -> tuple[int, int]:
        token = tokens[position]
        bare = _EDGE_PUNCTUATION.sub("", token)
        rank = 3 if any(ch.isdigit() for ch in token) else 0
        if stem_word(bare.lower()) in question_terms:
            rank = max(rank, 2)
        if bare[:1].isupper():
            rank = max(rank, 1)
        return -rank, position

    kept: list[int] = []
    for position in sorted(range(len(tokens)), key=telling):
        trial = sorted([*kept, position])
        if estimate_tokens(" ".join(tokens[i] for i in trial)) <= limit:
            kept = trial
    return " ".join(tokens[i] for i in kept)


def fact_digest(
    question: str,
    answer: str,
    cited: Sequence[str],
    max_tokens: int,
    title_of: Callable[[str], str | None] = lambda note_id: None,
) -> str:
    """One line standing for a turn, within `max_tokens`, keeping its facts."""
    question = " ".join(question.split())
    asked = telegraphic(question) or question
    titles = [title for title in (title_of(note) for note in cited[:_MAX_CITED]) if title]
    notes = ""
    for count in range(len(titles), 0, -1):
        # As many of the cited notes as fit their share, the first cited always tried.
        candidate = f"(notes: {', '.join(titles[:count])})"
        if estimate_tokens(candidate) <= max(max_tokens * _NOTES_SHARE, 6):
            notes = candidate
            break
    asked = _fits(asked, max(1, int(max_tokens * _QUESTION_SHARE)))
    room = max_tokens - estimate_tokens(f"{asked} → {notes}")
    answer = _CITATION.sub("", _LEAD.sub("", answer)).replace(_UNVERIFIED, "")
    sentences = [telegraphic(sentence) for sentence in split_sentences(answer)]
    sentences = [sentence for sentence in sentences if sentence]
    wanted = {stem_word(word) for word in words(question) if word not in STOPWORDS}
    ranked = sorted(
        range(len(sentences)),
        key=lambda index: (-_fact_weight(sentences[index], wanted), index),
    )
    chosen: list[int] = []
    for index in ranked:
        trial = " ".join(sentences[i] for i in sorted([*chosen, index]))
        if estimate_tokens(trial) <= room:
            chosen.append(index)
        elif not chosen:
            # Not even the richest sentence fits whole: its most telling words, then.
            cut = _densest_words(sentences[index], room, wanted)
            if cut:
                return _joined(asked, cut, notes)
            break
    facts = " ".join(sentences[i] for i in sorted(chosen))
    return _joined(asked, facts, notes)


def _joined(asked: str, facts: str, notes: str) -> str:
    parts = [asked]
    if facts:
        parts.extend(["→", facts])
    if notes:
        parts.append(notes)
    return " ".join(parts)


@dataclass(frozen=True, order=True)
class _Line:
    part: int
    position: int
    text: str


def roll_up(texts: Sequence[str], max_tokens: int) -> str:
    """One summary of several, within `max_tokens`: each part's densest line first, then
    further lines by their facts, all in the order they were written."""
    lines = [
        _Line(part, position, line if line.startswith("- ") else f"- {line}")
        for part, text in enumerate(texts)
        for position, line in enumerate(raw.strip() for raw in text.split("\n"))
        if line
    ]
    if not lines:
        return ""
    density = {line: _fact_weight(line.text, set()) for line in lines}
    firsts: dict[int, _Line] = {}
    for line in lines:
        best = firsts.get(line.part)
        if best is None or density[line] > density[best]:
            firsts[line.part] = line
    leads = set(firsts.values())
    order = list(firsts.values()) + sorted(
        (line for line in lines if line not in leads),
        key=lambda line: (-density[line], line.part, line.position),
    )
    chosen: list[_Line] = []
    for line in order:
        trial = sorted([*chosen, line])
        if estimate_tokens("\n".join(item.text for item in trial)) <= max_tokens:
            chosen = trial
        elif not chosen:
            cut = _fits(line.text, max_tokens)
            if cut:
                chosen = [_Line(line.part, line.position, cut)]
    return "\n".join(item.text for item in chosen)
