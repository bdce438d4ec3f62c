"""Words, sentences and passages: the small text matching shared by retrieval and the
offline provider.

Matching is deliberately simple and language-neutral: Unicode words, lowercased, with a light
suffix strip so that "planets" finds "planet". It ranks passages of notes the index already
chose; it is not a second search engine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from lore.core.tokens import estimate_tokens, truncate_to_tokens

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n+")
_LONG_PARAGRAPH_CHARS = 700
GAP = "\n…\n"

# Kept as text so the list reads as prose; split once at import.
_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves tell show give explain
    describe please know one also us let say said many much may might must shall
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A light, language-neutral suffix strip: enough to match plurals and simple tenses."""
    if len(word) > 5 and word.endswith("ies"):
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def content_words(text: str) -> list[str]:
    """Lowercased words of `text` without stopwords or single characters, in order, unique."""
    seen: dict[str, None] = {}
    for word in words(text):
        if word in STOPWORDS or (len(word) < 2 and word.isascii()):
            continue
        seen.setdefault(word, None)
    return list(seen)


# "How long", "how many", "how big": after "how" these words ask for a measure, they are not
# what the question is about.
_MEASURE_TEXT = "long many much big far old often large small tall heavy hot cold fast deep wide"
_MEASURE_WORDS = frozenset(_MEASURE_TEXT.split())


def question_words(question: str) -> list[str]:
    """`content_words` of a question, without the measure word of "how long", "how big"…"""
    found = words(question)
    measures = {
        found[index + 1]
        for index, word in enumerate(found[:-1])
        if word == "how" and found[index + 1] in _MEASURE_WORDS
    }
    return [word for word in content_words(question) if word not in measures]


def content_terms(text: str) -> list[str]:
    """The stems of `content_words(text)`, in order, unique."""
    return list(dict.fromkeys(stem(word) for word in content_words(text)))


def split_sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]


@dataclass
class Passage:
    position: int
    text: str
    tokens: int


def split_passages(body: str) -> list[Passage]:
    """Paragraphs of `body`, long ones split into runs of sentences of a readable size."""
    passages: list[Passage] = []
    for paragraph in _PARAGRAPH_BREAK.split(body):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if len(paragraph) <= _LONG_PARAGRAPH_CHARS:
            pieces = [paragraph]
        else:
            pieces = []
            current = ""
            for sentence in split_sentences(paragraph):
                if current and len(current) + len(sentence) > _LONG_PARAGRAPH_CHARS:
                    pieces.append(current)
                    current = ""
                current = f"{current} {sentence}".strip()
            if current:
                pieces.append(current)
        for piece in pieces:
            passages.append(Passage(len(passages), piece, estimate_tokens(piece)))
    return passages


def overlap_score(text: str, terms: Iterable[str]) -> float:
    """How many distinct `terms` appear in `text`, with a little credit for repeats."""
    wanted = set(terms)
    if not wanted:
        return 0.0
    found: dict[str, int] = {}
    for word in words(text):
        key = stem(word)
        if key in wanted:
            found[key] = found.get(key, 0) + 1
    return len(found) + 0.1 * sum(min(count, 5) - 1 for count in found.values())


def excerpt(body: str, terms: list[str], max_tokens: int) -> tuple[str, bool]:
    """The passages of `body` that best match `terms`, in their original order, within
    `max_tokens`. Returns (text, trimmed); "" when nothing fits.
    """
    body = body.strip()
    if max_tokens <= 0 or not body:
        return "", bool(body)
    if estimate_tokens(body) <= max_tokens:
        return body, False
    passages = split_passages(body)
    # The opening passage usually says what the note is about, so it gets a small head start.
    ranked = sorted(
        passages,
        key=lambda p: (
            -(overlap_score(p.text, terms) + (0.5 if p.position == 0 else 0)),
            p.position,
        ),
    )
    chosen: list[Passage] = []
    gap_tokens = estimate_tokens(GAP)
    used = 0
    for passage in ranked:
        cost = passage.tokens + (gap_tokens if chosen else 0)
        if used + cost <= max_tokens:
            chosen.append(passage)
            used += cost
    if not chosen:
        best = ranked[0].text if ranked else body
        return truncate_to_tokens(best, max_tokens), True
    chosen.sort(key=lambda p: p.position)
    parts: list[str] = []
    previous = -1
    for passage in chosen:
        if parts and passage.position != previous + 1:
            parts.append("…")
        parts.append(passage.text)
        previous = passage.position
    text = "\n\n".join(parts)
    if estimate_tokens(text) > max_tokens:
        text = truncate_to_tokens(text, max_tokens)
    return text, True
