"""Words, sentences and passages: the small text matching shared by retrieval and the
offline provider.

Matching is deliberately simple and language-neutral: Unicode words, lowercased, with a light
suffix strip so that "planets" finds "planet". It ranks passages of notes the index already
chose; it is not a second search engine.
"""

from __future__ import annotations

import re
from functools import lru_cache

from lore.core.dataclass_lite import dataclass_own_init
from lore.core.note_parts import NAVIGATION
from lore.core.tokens import estimate_tokens

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n+")
_LONG_PARAGRAPH_CHARS = 700
# What finishes an open sentence is short: a formula, a value. A long block after a colon
# (a listing, a quotation) is a passage of its own.
_CONTINUATION_CHARS = 200

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


def _measures(found: list[str]) -> list[str]:
    return [
        found[index + 1]
        for index, word in enumerate(found[:-1])
        if word == "how" and found[index + 1] in _MEASURE_WORDS
    ]


def question_words(question: str) -> list[str]:
    """`content_words` of a question, without the measure word of "how long", "how big"…"""
    measures = set(_measures(words(question)))
    return [word for word in content_words(question) if word not in measures]


# What an answer to "how big", "how far"… tends to say. Hints for choosing among passages and
# sentences that are already about the subject, never words to search for.
_MEASURE_HINT_TEXT = {
    "big": "diameter radius size across wide km kilometres miles mass largest smallest",
    "large": "diameter radius size across wide km kilometres miles mass largest",
    "small": "diameter radius size across km kilometres miles smallest",
    "far": "distance km kilometres miles million au light years away from",
    "long": "days hours years minutes period takes lasts length km",
    "old": "years billion million age ago formed",
    "often": "every days hours years period times",
    "fast": "speed km per second hour hours rotates rotation spins every faster fastest",
    "hot": "temperature degrees °c celsius kelvin",
    "cold": "temperature degrees °c celsius kelvin",
    "heavy": "mass kg kilograms tonnes weighs",
    "deep": "depth km kilometres deep",
    "tall": "height km kilometres high",
    "wide": "width km kilometres across wide",
    "many": "number",
    "much": "amount",
}
MEASURE_HINTS = {word: tuple(text.split()) for word, text in _MEASURE_HINT_TEXT.items()}


def measure_hints(question: str) -> list[str]:
    """The words an answer to the question's "how big", "how far"… would likely hold."""
    hints: dict[str, None] = {}
    for measure in _measures(words(question)):
        hints.update(dict.fromkeys(MEASURE_HINTS.get(measure, ())))
    return list(hints)


def content_terms(text: str) -> list[str]:
    """The stems of `content_words(text)`, in order, unique."""
    return list(dict.fromkeys(stem(word) for word in content_words(text)))


def split_sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]


@dataclass_own_init(frozen=True)
class Passage:
    """A paragraph of a note, or a run of sentences from a long one, numbered in note order."""

    position: int
    text: str
    # Where the passage lies in the text it was cut from: text[start:end] holds it.
    start: int = 0
    end: int = 0

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


def split_passages(body: str) -> list[Passage]:
    """Paragraphs of `body`, long ones split into runs of sentences of a readable size."""
    passages: list[Passage] = []
    cursor = 0
    for raw in _PARAGRAPH_BREAK.split(body):
        at = body.find(raw, cursor)
        cursor = at + len(raw)
        paragraph = raw.strip()
        if not paragraph:
            continue
        begin = at + len(raw) - len(raw.lstrip())
        if len(paragraph) <= _LONG_PARAGRAPH_CHARS:
            passages.append(Passage(len(passages), paragraph, begin, begin + len(paragraph)))
            continue
        current: list[str] = []
        length = 0
        piece_start = seen = begin
        for sentence in split_sentences(paragraph):
            found = body.find(sentence, seen)
            if current and length + len(sentence) > _LONG_PARAGRAPH_CHARS:
                passages.append(Passage(len(passages), " ".join(current), piece_start, seen))
                current, length, piece_start = [], 0, found
            current.append(sentence)
            length += len(sentence) + 1
            seen = found + len(sentence)
        if current:
            passages.append(Passage(len(passages), " ".join(current), piece_start, seen))
    return passages


_HEADING_LINE = re.compile(r"^#{1,6}[ \t]")
# What may end a sentence, closing quotes and brackets included.
_ENDS_SENTENCE = re.compile(r"[.!?…。！？][\"'’”)\]]*$")
# A line that starts like a list item, a heading or a quote begins something of its own.
_STARTS_OWN = re.compile(r"^(?:[#>*+\-•]|\d+[.)]\s|[A-ZÀ-ÖØ-ÞΑ-ΩА-Я])")


def continues(previous: str, following: str) -> bool:
    """Whether `following` finishes what `previous` left open: "the limit is approximately"
    then "d ≈ 2.44 R", or a lead-in ending with a colon and what it introduces."""
    previous = previous.rstrip()
    following = following.lstrip()
    if not previous or not following or _ENDS_SENTENCE.search(previous):
        return False
    return previous.endswith(":") or not _STARTS_OWN.match(following)


_FOOTNOTE_DEFINITION = re.compile(r"^\[\^src\d+\]:")


@lru_cache(maxsize=4096)
def note_passages(body: str) -> tuple[Passage, ...]:
    """`split_passages` of a note as evidence: a heading stays with the paragraph under it,
    and what ingestion writes about a note rather than in it (which source each claim came
    from, the links between the parts of a long section) is left out.

    Kept for the notes asked about again (the preview packs at every keystroke)."""
    passages: list[Passage] = []
    heading: Passage | None = None
    for passage in split_passages(body):
        text = passage.text
        if _FOOTNOTE_DEFINITION.match(text) or NAVIGATION.match(text):
            continue
        if _HEADING_LINE.match(text) and "\n" not in text:
            if heading is not None:
                text = f"{heading.text}\n{text}"
                passage = Passage(0, text, heading.start, passage.end)
            heading = passage
            continue
        start = passage.start
        if heading is not None:
            text, start, heading = f"{heading.text}\n{text}", heading.start, None
        passages.append(Passage(len(passages), text, start, passage.end))
    if heading is not None:
        passages.append(Passage(len(passages), heading.text, heading.start, heading.end))
    return tuple(_joined(passages))


def _joined(passages: list[Passage]) -> list[Passage]:
    """Passages with a paragraph that leaves its sentence open joined to the one finishing it."""
    joined: list[Passage] = []
    for passage in passages:
        last = joined[-1] if joined else None
        if (
            last is not None
            and len(passage.text) <= _CONTINUATION_CHARS
            and len(last.text) + len(passage.text) <= _LONG_PARAGRAPH_CHARS
            and continues(last.text, passage.text)
        ):
            text = f"{last.text}\n{passage.text}"
            joined[-1] = Passage(last.position, text, last.start, passage.end)
            continue
        joined.append(Passage(len(joined), passage.text, passage.start, passage.end))
    return joined
