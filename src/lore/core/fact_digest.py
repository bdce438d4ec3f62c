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
from functools import lru_cache
from operator import itemgetter
from typing import NamedTuple

from lore.core.passages import STOPWORDS, words
from lore.core.search.query import stem_word
from lore.core.tokens import estimate_tokens

# A citation, found by the bracket it starts with; the whitespace before it goes with it.
_CITATION = re.compile(r"\[\d+(?:\s*,\s*\d+)*\]")
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
# A history repeats its words: each is stemmed once.
_stem = lru_cache(maxsize=65_536)(stem_word)

_Size = tuple[int, int, int]


def _size(text: str) -> _Size:
    """What `estimate_tokens` counts in `text`: characters, words, characters outside ASCII."""
    characters = len(text)
    outside = 0 if text.isascii() else characters - len(text.encode("ascii", "ignore"))
    return characters, len(text.split()), outside


@dataclass(slots=True)
class _Tally:
    """The estimate of parts joined by one space or newline each, kept as parts are added.

    The estimate of a join depends only on its total characters, words and characters
    outside ASCII, so a greedy choice tries each candidate in constant time instead of
    joining and counting the whole trial again.
    """

    parts: int = 0
    characters: int = 0
    words: int = 0
    outside: int = 0

    def tokens_with(self, size: _Size) -> int:
        characters = self.characters + size[0] + (1 if self.parts else 0)
        words = self.words + size[1]
        # estimate_tokens: max(ceil(characters / 4), ceil(words * 1.3), outside ASCII).
        return max(-(-characters // 4), -(-words * 13 // 10), self.outside + size[2])

    def add(self, size: _Size) -> None:
        self.characters += size[0] + (1 if self.parts else 0)
        self.words += size[1]
        self.outside += size[2]
        self.parts += 1


class _Token(NamedTuple):
    """What a digest asks of one whitespace-separated token, worked out once per token.

    Sentences are lists of these, and what a sentence weighs and measures is summed by
    `map` over the fields below, so no Python code runs per word once it was seen.
    """

    text: str
    characters: int
    outside: int
    # Not a stopword once its edge punctuation is stripped, or one of the words kept.
    telling: bool
    digit: bool
    capital: bool
    # The stems of its words, of those that are not stopwords, and the stem and capital of
    # the token without its edges.
    stems: frozenset[str]
    content_stems: frozenset[str]
    bare_stem: str
    bare_capital: bool


_TEXT, _CHARACTERS, _OUTSIDE, _TELLING, _DIGIT, _CAPITAL, _STEMS, _CONTENT_STEMS = map(
    itemgetter, range(8)
)


@lru_cache(maxsize=32_768)
def _token(text: str) -> _Token:
    # A token of word characters only has no edge punctuation to strip.
    bare = text if text.isalnum() else _EDGE_PUNCTUATION.sub("", text)
    lowered = bare.lower()
    characters, _, outside = _size(text)
    found = words(text)
    stems = frozenset(map(_stem, found))
    content = [word for word in found if word not in STOPWORDS]
    return _Token(
        text=text,
        characters=characters,
        outside=outside,
        telling=lowered not in STOPWORDS or lowered in _KEPT,
        digit=_has_digit(text),
        capital=text[:1].isupper(),
        stems=stems,
        content_stems=stems if len(content) == len(found) else frozenset(map(_stem, content)),
        bare_stem=_stem(lowered),
        bare_capital=bare[:1].isupper(),
    )


# A sentence ends at a line break, or at a full stop, question or exclamation mark followed
# by whitespace: the rule of `lore.core.passages.split_sentences`, which a test holds this to.
# Lines are split first, and a pattern that starts with the mark is found by a fast scan
# where a look-behind is tried at every character.
_SENTENCE_MARK = re.compile(r"([.!?。！？])\s+")


def _sentences(text: str) -> list[str]:
    """`split_sentences(text)`, in a fraction of its time."""
    found = []
    for line in text.split("\n"):
        pieces = _SENTENCE_MARK.split(line)
        # Text, mark, text, mark, …, text: each sentence keeps its mark.
        for index in range(0, len(pieces), 2):
            sentence = (
                pieces[index] + pieces[index + 1] if index + 1 < len(pieces) else pieces[index]
            )
            sentence = sentence.strip()
            if sentence:
                found.append(sentence)
    return found


def _telling_tokens(text: str) -> list[_Token]:
    return list(filter(_TELLING, map(_token, text.split())))


def telegraphic(text: str) -> str:
    """`text` without its stopwords; numbers, names, negations and comparisons stay."""
    return " ".join(map(_TEXT, _telling_tokens(text)))


def _has_digit(token: str) -> bool:
    # Letters are never digits: most tokens are decided without looking at each character.
    return not token.isalpha() and any(map(str.isdigit, token))


def _fact_weight(sentence: str, question_terms: set[str]) -> float:
    """How much a sentence states: what the question asked about most, then numbers, then
    names."""
    return _tokens_weight(list(map(_token, sentence.split())), question_terms)


def _tokens_weight(tokens: list[_Token], question_terms: set[str]) -> float:
    numbers = sum(map(_DIGIT, tokens))
    names = sum(map(_CAPITAL, tokens[1:]))
    shared = (
        len(question_terms.intersection(set().union(*map(_STEMS, tokens)))) if question_terms else 0
    )
    return 3.0 * shared + 2.0 * numbers + names


def _joined_size(tokens: list[_Token]) -> _Size:
    """The `_size` of the tokens joined by single spaces."""
    return (
        sum(map(_CHARACTERS, tokens)) + len(tokens) - 1,
        len(tokens),
        sum(map(_OUTSIDE, tokens)),
    )


def _without_citations(text: str) -> str:
    """`text` without its citation marks ("[2]", "[1, 3]") and one whitespace before each."""
    if "[" not in text:
        return text
    kept = []
    last = 0
    for found in _CITATION.finditer(text):
        start = found.start()
        if start > last and text[start - 1].isspace():
            start -= 1
        kept.append(text[last:start])
        last = found.end()
    kept.append(text[last:])
    return "".join(kept)


def _fits(text: str, limit: int) -> str:
    """The longest prefix of whole words of `text` within `limit` tokens ("" if none)."""
    if estimate_tokens(text) <= limit:
        return text
    kept: list[str] = []
    tally = _Tally()
    for token in map(_token, text.split()):
        size = (token.characters, 1, token.outside)
        if tally.tokens_with(size) > limit:
            break
        tally.add(size)
        kept.append(token.text)
    return " ".join(kept)


def _densest_words(tokens: list[_Token], limit: int, question_terms: set[str]) -> str:
    """The words of a sentence that say most (numbers, the question's words, names), in
    their order, within `limit` tokens."""

    def telling(position: int) -> tuple[int, int]:
        token = tokens[position]
        if token.digit:
            return -3, position
        if token.bare_stem in question_terms:
            return -2, position
        return (-1 if token.bare_capital else 0), position

    kept: list[int] = []
    # The `_Tally` of the kept words, written out: this loop runs for most digests.
    characters = -1
    outside = 0
    for position in sorted(range(len(tokens)), key=telling):
        token = tokens[position]
        after = characters + 1 + token.characters
        count = len(kept) + 1
        if max(-(-after // 4), -(-count * 13 // 10), outside + token.outside) <= limit:
            characters = after
            outside += token.outside
            kept.append(position)
    return " ".join(tokens[i].text for i in sorted(kept))


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
    lead = _LEAD.match(answer)
    answer = _without_citations(answer[lead.end() :] if lead else answer)
    answer = answer.replace(_UNVERIFIED, "")
    # Each sentence as its telling tokens: only the sentences chosen are ever joined.
    sentences = [tokens for tokens in map(_telling_tokens, _sentences(answer)) if tokens]
    # The stems of the question's words that are not stopwords, gathered word by word.
    wanted: set[str] = set().union(*map(_CONTENT_STEMS, map(_token, question.split())))
    ranked = sorted(
        range(len(sentences)),
        key=lambda index: (-_tokens_weight(sentences[index], wanted), index),
    )
    chosen: list[int] = []
    tally = _Tally()
    for index in ranked:
        size = _joined_size(sentences[index])
        if tally.tokens_with(size) <= room:
            tally.add(size)
            chosen.append(index)
        elif not chosen:
            # Not even the richest sentence fits whole: its most telling words, then.
            cut = _densest_words(sentences[index], room, wanted)
            if cut:
                return _joined(asked, cut, notes)
            break
    facts = " ".join(" ".join(map(_TEXT, sentences[i])) for i in sorted(chosen))
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
    tally = _Tally()
    for line in order:
        size = _size(line.text)
        if tally.tokens_with(size) <= max_tokens:
            tally.add(size)
            chosen.append(line)
        elif not chosen:
            cut = _fits(line.text, max_tokens)
            if cut:
                chosen = [_Line(line.part, line.position, cut)]
                tally.add(_size(cut))
    return "\n".join(item.text for item in sorted(chosen))
