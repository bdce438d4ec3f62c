"""A follow-up that names a new subject: "and what about Europa?" after "Why does Io have
volcanoes?" reads as "Why does Europa have volcanoes?".

A subject is a run of words that is a note's exact title, or is written as a name
(capitalised, and not merely because it starts a sentence). A follow-up made of an opener
("and", "what about", "how about") and a subject keeps the earlier question's intent and
puts the new subject where the old one was. Lowercase words are not a new subject unless a
note bears them as its title: "and craters?" after a question about Io still asks about Io.

The openers are English; titles and capitals are found the same way in any language that
capitalises names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import pairwise

from lore.core.dataclass_lite import dataclass_own_init
from lore.core.passages import STOPWORDS, stem

# (title as written, tags) of the note whose title is exactly the phrase (casefolded), or
# None: no note has that title.
TitleLookup = Callable[[str], tuple[str, Sequence[str]] | None]

_TOKEN = re.compile(r"\w+", re.UNICODE)
# What may sit between two words of one name: "Io's", "Cassini–Huygens", "Great Red Spot".
_JOIN = re.compile(r"[\s'’\-–]*")
_SENTENCE_START = frozenset('.?!:;("“')
_OPENER_TEXT = "and but so also then now or what how about same for regarding"
_OPENERS = frozenset(_OPENER_TEXT.split())
# Only openers, an article, or a closing "then" may stand around the new subject: "What is
# Europa?" is a question of its own, not a follow-up about Europa instead.
_AROUND = _OPENERS | {"the", "a", "an", "ok", "okay", "too", "instead", "though", "please"}
_MAX_SUBJECT_WORDS = 4
_MAX_TITLE_WORDS = 6


@dataclass_own_init(frozen=True)
class _Token:
    """A word of a text, where it lies, and whether it opens a sentence (a capital there proves
    nothing)."""

    index: int
    start: int
    end: int
    text: str
    sentence_start: bool

    @property
    def capitalised(self) -> bool:
        return self.text[:1].isupper()

    @property
    def content(self) -> bool:
        lowered = self.text.lower()
        return lowered not in STOPWORDS and (len(lowered) > 1 or not lowered.isascii())


@dataclass_own_init(frozen=True)
class SubjectSwap:
    """The earlier question with `new` in place of `old`."""

    resolved: str
    new: str
    old: str


@dataclass_own_init(frozen=True)
class _Span:
    """A run of text that may be a subject: a note's title (with that note's tags) or words
    written as a name (`tags` None)."""

    start: int
    end: int
    capitalised: bool
    tags: Sequence[str] | None


def _tokens(text: str) -> list[_Token]:
    tokens = []
    for index, match in enumerate(_TOKEN.finditer(text)):
        before = text[: match.start()].rstrip()
        tokens.append(
            _Token(
                index,
                match.start(),
                match.end(),
                match.group(),
                not before or before[-1] in _SENTENCE_START,
            )
        )
    return tokens


def _joined(text: str, left: _Token, right: _Token) -> bool:
    return _JOIN.fullmatch(text[left.end : right.start]) is not None


def _new_subject(question: str, titles: TitleLookup) -> tuple[str, Sequence[str] | None] | None:
    """(the subject, its note's tags) when `question` is an opener and a subject."""
    tokens = _tokens(question)
    first = 0
    while first < len(tokens) and not tokens[first].content:
        first += 1
    last = len(tokens) - 1
    while last >= first and not tokens[last].content:
        last -= 1
    subject = tokens[first : last + 1]
    if not subject or len(subject) > _MAX_SUBJECT_WORDS:
        return None
    if any(token.text.lower() not in _AROUND for token in tokens[:first] + tokens[last + 1 :]):
        return None
    if any(not _joined(question, a, b) for a, b in pairwise(subject)):
        return None
    opener = any(token.text.lower() in _OPENERS for token in tokens[:first])
    capitalised = all(token.capitalised for token in subject if token.content)
    if not (opener or capitalised):
        return None
    text = question[subject[0].start : subject[-1].end]
    named = titles(text.casefold())
    # "Europa?" is a name; "Craters?" is only capitalised because it opens the question.
    if named is None and not (capitalised and not subject[0].sentence_start):
        return None
    if named is not None and not capitalised:
        text = named[0]  # "europa" is written as its note's title: "Europa"
    if first and tokens[first - 1].text.lower() == "the":
        text = question[tokens[first - 1].start : subject[0].start] + text
    return text, named[1] if named is not None else None


def _old_subjects(text: str, titles: TitleLookup) -> list[_Span]:
    """The runs of `text` that name a note or are written as a name, the widest where they
    overlap."""
    tokens = _tokens(text)
    spans: list[_Span] = []
    for i, left in enumerate(tokens):
        if not left.content:
            continue
        for right in tokens[i : i + _MAX_TITLE_WORDS]:
            if right is not left and not _joined(text, tokens[right.index - 1], right):
                break
            if not right.content:
                continue
            named = titles(text[left.start : right.end].casefold())
            if named is not None:
                words = tokens[left.index : right.index + 1]
                capitalised = all(token.capitalised for token in words if token.content)
                spans.append(_Span(left.start, right.end, capitalised, named[1]))
    run: list[_Token] = []
    for token in tokens:
        name_like = token.capitalised and token.content
        if name_like and run and _joined(text, run[-1], token):
            run.append(token)
            continue
        if run:
            spans.append(_Span(run[0].start, run[-1].end, True, None))
        # A capital that only opens a sentence ("Why", "Tell") names nothing.
        run = [token] if name_like and not token.sentence_start else []
    if run:
        spans.append(_Span(run[0].start, run[-1].end, True, None))
    # Keep the widest of overlapping runs: "Great Red Spot", not "Red".
    spans.sort(key=lambda span: (span.start, -(span.end - span.start), span.tags is None))
    kept: list[_Span] = []
    for span in spans:
        if kept and span.start < kept[-1].end:
            continue
        kept.append(span)
    return kept


def names_a_subject(text: str, titles: TitleLookup) -> bool:
    """Whether `text` names a note or something written as a name ("Io", "Great Red Spot")."""
    return bool(_old_subjects(text, titles))


def only_a_subject(question: str, titles: TitleLookup) -> bool:
    """Whether `question` is an opener and a subject and nothing more ("and Titan?",
    "what about the Moon?", "Europa?"): the shape that asks the earlier question again."""
    return _new_subject(question, titles) is not None


def named_subjects(text: str, titles: TitleLookup) -> list[str]:
    """The note titles and names `text` mentions, in order: what "it" may point back at."""
    return [text[span.start : span.end] for span in _old_subjects(text, titles)]


def _tag_stems(tags: Sequence[str]) -> set[str]:
    return {stem(part) for tag in tags for part in re.split(r"[\W_]+", tag.lower()) if part}


def swap_subject(question: str, earlier: str, titles: TitleLookup) -> SubjectSwap | None:
    """`earlier` with the new subject of `question` in place of its own, or None when
    `question` names no new subject or `earlier` has none to replace.
    """
    found = _new_subject(question, titles)
    if found is None:
        return None
    new, new_tags = found
    earlier_stems = {stem(token.text.lower()) for token in _tokens(earlier)}
    if all(stem(token.text.lower()) in earlier_stems for token in _tokens(new) if token.content):
        return None  # the same subject again: an ordinary follow-up
    spans = _old_subjects(earlier, titles)
    if not spans:
        return None
    wanted = _tag_stems(new_tags or ())
    # Like for like first: a note that shares a tag with the new subject, then a written
    # name, then a title, then the first.
    old = min(
        spans,
        key=lambda span: (
            not (wanted & _tag_stems(span.tags or ())),
            not span.capitalised,
            span.tags is None,
            span.start,
        ),
    )
    rest = earlier[: old.start] + " " + earlier[old.end :]
    # "Which moons of Saturn…" then "and Titan?": Titan is one of the moons asked about,
    # not a planet in Saturn's place; the ordinary follow-up keeps Saturn in view.
    if wanted & {stem(token.text.lower()) for token in _tokens(rest) if token.content}:
        return None
    start = old.start
    before = earlier[:start].rstrip()
    if before.lower().endswith("the") and (len(before) == 3 or not before[-4].isalnum()):
        start = len(before) - 3
    resolved = earlier[:start] + new + earlier[old.end :]
    if not resolved[:1].isupper() and earlier[:1].isupper():
        resolved = resolved[:1].upper() + resolved[1:]
    return SubjectSwap(resolved, new, earlier[old.start : old.end])
