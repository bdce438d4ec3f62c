"""The offline provider: answers with no model at all, extractively, from the evidence.

It reads the nonce-delimited evidence blocks the pack sends, and only those, picks the
sentences that best match the question, and strings them together with `[n]` citations. A
sentence is read with the title of its note, so "It spins once every four hours" in the note
"Haumea" answers "How fast does Haumea spin?". A word the evidence does not hold at all is
left out of the match when the words it does hold are most of the question ("…Mars and
Titan? banana"); when they are not ("the capital of France" beside a note that names France
once), the answer says plainly that the vault holds nothing relevant. Sentences are quoted
whole, never a cut one. The same messages always give the same answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator, Sequence

from lore.core.dataclass_lite import dataclass_own_init
from lore.core.loop_free import pass_turn
from lore.core.pack import EVIDENCE_PREFIX
from lore.core.passages import (
    continues,
    measure_hints,
    question_words,
    split_sentences,
    stem,
    words,
)
from lore.core.providers.base import ChatMessage, Chunk, GenerationOptions, Usage
from lore.core.retrieval import ANAPHORA, FOLLOWING_UP
from lore.core.subjects import named_subjects

_BLOCK = re.compile(
    r"<<<NOTE (?P<nonce>[0-9a-f]+) \[(?P<number>\d+)\] (?P<meta>[^\n]*?)>>>\n"
    r"(?P<body>.*?)\n<<<END (?P=nonce)>>>",
    re.DOTALL,
)
_NONCE = re.compile(r"carrying the code ([0-9a-f]+)")
_TRUST = re.compile(r"\btrust=(?P<trust>[\w-]+)")
_TITLE = re.compile(r'\btitle="(?P<title>[^"]*)"')
_QUESTION_PREFIX = re.compile(r"^\s*Question:\s*", re.IGNORECASE)
_RESOLVED_LINE = re.compile(r"\n\(Resolved for retrieval as: (?P<resolved>.*)\)\s*$", re.DOTALL)
_MARKUP = re.compile(r"^[#>*\-+\s]+|[*_`]+")
MAX_SENTENCES = 3
# The best sentence must hold at least this share of the question's weight.
MIN_COVERAGE = 0.5
# Further sentences must score at least this share of the best one.
SECONDARY_SHARE = 0.5
# In a follow-up that names what it asks about ("and what about Europa?"), a sentence that
# holds none of the question's own words counts this much: it is about something else.
OFF_SUBJECT = 0.5
# A sentence holding one of the words a "how big" or "how far" answer holds counts this much
# more; one holding the question's words only through its note's title, this much.
HINT_SHARE = 1.0
TITLE_ONLY = 0.8
OPENING = 1.2
_WIKI_LINK = re.compile(r"\[\[([^\]|\n]+?)(?:\|([^\]\n]+))?\]\]")
_FOOTNOTE_MARK = re.compile(r"\s*\[\^src\d+\]")
_NUMBER = re.compile(r"\d")
# Longer sentences are left out rather than cut: a quote ends where its sentence ends.
MAX_SENTENCE_CHARS = 800
# A sentence ending like this was cut to fit the pack; it is not quoted.
_CUT = ("…", "...")
NOTHING_RELEVANT = (
    "The vault holds nothing relevant to this question: no note matches it. "
    "Try other words, or add a source with /ingest."
)


@dataclass_own_init
class _Sentence:
    """A sentence of the evidence, with its note's citation number, the words it and its note's
    title hold, and how well it answers."""

    number: int
    position: int
    text: str
    untrusted: bool
    title_terms: frozenset[str] = frozenset()
    text_terms: frozenset[str] = frozenset()
    opening: bool = False  # the first sentence quoted from its note
    score: float = 0.0


def _is_evidence(message: ChatMessage) -> bool:
    return message.role == "user" and message.content.startswith(EVIDENCE_PREFIX)


def _no_titles(phrase: str) -> None:
    return None


def _question(messages: list[ChatMessage]) -> tuple[str, str]:
    """(the question, the context it was resolved against) from the last user message."""
    for message in reversed(messages):
        if message.role == "user" and not _is_evidence(message):
            text = message.content
            resolved = ""
            match = _RESOLVED_LINE.search(text)
            if match:
                resolved = match.group("resolved")
                text = text[: match.start()]
            return _QUESTION_PREFIX.sub("", text).strip(), resolved
        if message.role == "user":
            break
    return "", ""


def _evidence_sentences(messages: list[ChatMessage]) -> list[_Sentence]:
    """Sentences of the notes in the pack's evidence message, and only there: a block typed
    into a question, or quoted in an earlier answer, is not evidence.
    """
    sentences: list[_Sentence] = []
    for message in messages:
        if not _is_evidence(message):
            continue
        named = _NONCE.search(message.content)
        for block in _BLOCK.finditer(message.content):
            if named is None or block.group("nonce") != named.group(1):
                continue
            trust = _TRUST.search(block.group("meta"))
            untrusted = bool(trust and trust.group("trust") == "untrusted")
            title = _TITLE.search(block.group("meta"))
            title_terms = frozenset(
                stem(word) for word in question_words(title.group("title") if title else "")
            )
            number = int(block.group("number"))
            for position, sentence in enumerate(_whole_sentences(block.group("body"))):
                if sentence.startswith("#"):
                    continue  # a heading names a topic; it answers nothing
                clean = _FOOTNOTE_MARK.sub("", _MARKUP.sub("", sentence)).strip()
                if len(clean.split()) < 3 or clean.endswith(_CUT):
                    continue
                if len(clean) > MAX_SENTENCE_CHARS:
                    continue
                opening = not sentences or sentences[-1].number != number
                text_terms = frozenset(stem(word) for word in words(clean))
                sentences.append(
                    _Sentence(number, position, clean, untrusted, title_terms, text_terms, opening)
                )
    return sentences


def _whole_sentences(body: str) -> list[str]:
    """The sentences of a block, a line that leaves its sentence open joined to the line that
    finishes it ("the limit is approximately" and "d ≈ 2.44 R")."""
    whole: list[str] = []
    for piece in split_sentences(body):
        if whole and not whole[-1].startswith("#") and continues(whole[-1], piece):
            whole[-1] = f"{whole[-1]} {piece}"
        else:
            whole.append(piece)
    return whole


def _score(
    sentences: list[_Sentence],
    question_terms: list[str],
    context_terms: list[str],
    hints: Sequence[str] = (),
    names: Sequence[str] = (),
) -> float:
    """Score each sentence by the rarity (IDF) of the question's words it holds, and return
    the best share of the question's weight any one sentence covers.

    A word no evidence sentence holds weighs the most, so a question about something the
    vault lacks ("the capital of France") is not answered by a sentence that only shares
    its commonest word.
    """
    # A sentence is read with its note's title: "It spins fast" in "Haumea" is about Haumea.
    bags = [sentence.text_terms | sentence.title_terms for sentence in sentences]
    total = len(sentences)
    weights: dict[str, float] = {}
    for term in {*question_terms, *context_terms}:
        frequency = sum(1 for bag in bags if term in bag)
        weights[term] = math.log(1 + total / frequency) if frequency else math.log(1 + 2 * total)
    wanted = question_terms or context_terms
    on_subject = bool(question_terms and context_terms) and any(
        term in bag for bag in bags for term in question_terms
    )
    # A question naming what it is about ("How fast does Haumea spin?"): a sentence naming
    # none of it is about something else, however well it matches the rest.
    named = [name for name in names if any(name in bag for bag in bags)]
    wanted_weight = sum(weights[term] for term in wanted) or 1.0
    best_coverage = 0.0
    for sentence, bag in zip(sentences, bags, strict=True):
        own = sum(weights[term] for term in question_terms if term in bag)
        borrowed = sum(
            0.5 * weights[term]
            for term in context_terms
            if term in bag and term not in question_terms
        )
        best_coverage = max(
            best_coverage, sum(weights[t] for t in wanted if t in bag) / wanted_weight
        )
        score = own + borrowed
        if score and hints:
            # "How big": of the sentences on the subject, one giving a size answers better,
            # and any measure is given in numbers.
            hinted = any(hint in bag for hint in hints) or _NUMBER.search(sentence.text)
            score *= 1 + HINT_SHARE * bool(hinted)
        if (not own and on_subject) or (named and not any(name in bag for name in named)):
            score *= OFF_SUBJECT
        if sentence.opening:
            # A note's opening sentence usually says what its subject is.
            score *= OPENING
        if score and question_terms:
            # A note titled with what the question is about ("What is Titan?" and "Titan";
            # "How many moons does Saturn have?" and "Saturn"): the names it asks about when
            # it names any, else its words.
            if named:
                share = sum(1 for name in named if name in sentence.title_terms) / len(named)
            else:
                titled = sum(weights[t] for t in question_terms if t in sentence.title_terms)
                share = titled / (sum(weights[t] for t in question_terms) or 1.0)
            score *= 1 + share**3
        if score and not any(term in sentence.text_terms for term in wanted):
            # Held only through its note's title ("It orbits…"): a sentence naming its
            # subject reads better first.
            score *= TITLE_ONLY
        # Long sentences match more words by chance; an untrusted note ranks a little lower.
        score /= 1 + len(bag) / 60
        if sentence.untrusted:
            score *= 0.8
        sentence.score = score
    return best_coverage


def _held_words(
    sentences: list[_Sentence], question_terms: list[str], context_terms: list[str]
) -> tuple[list[str], list[str]]:
    """The question's words without those no evidence holds, when the held ones are most of
    the question: a stray word ("banana") does not sink an answer the notes give. When the
    held words are half or less, every word stays, and the missing ones outweigh the rest."""
    held: set[str] = set()
    for sentence in sentences:
        held.update(sentence.text_terms)
        held.update(sentence.title_terms)
    wanted = list(dict.fromkeys([*question_terms, *context_terms]))
    known = [term for term in wanted if term in held]
    if len(known) * 2 <= len(wanted):
        return question_terms, context_terms
    kept_question = [term for term in question_terms if term in held]
    kept_context = [term for term in context_terms if term in held]
    if not kept_question and question_terms:
        # The question's own words are all missing: what is left is only borrowed context.
        return question_terms, context_terms
    return kept_question, kept_context


_FOLLOW_ON = re.compile(r"^(?:It|Its|They|Their|This|These|He|She|His|Her)\b")
# Quoted sentences, follow-ons included, at most.
MAX_QUOTED = MAX_SENTENCES + 1


def _with_follow_ons(picked: list[_Sentence], sentences: list[_Sentence]) -> list[_Sentence]:
    """`picked` with the sentence right after one of them when it carries on about the same
    thing ("Haumea is notable for its rapid spin." "It rotates once every 3.9 hours.")."""
    following = {(s.number, s.position): s for s in sentences}
    chosen = list(picked)
    for sentence in picked:
        if len(chosen) >= MAX_QUOTED:
            break
        after = following.get((sentence.number, sentence.position + 1))
        if (
            after is not None
            and after.score > 0
            and after not in chosen
            and _FOLLOW_ON.match(after.text)
        ):
            chosen.append(after)
    return chosen


def _readable(text: str) -> str:
    """[[Target|label]] and [[Target]] links read as their words."""
    return _WIKI_LINK.sub(lambda match: match.group(2) or match.group(1), text)


def compose_answer(messages: list[ChatMessage]) -> str:
    """The extractive answer for a pack's messages."""
    question, resolved = _question(messages)
    # "the second one", "the other": in a follow-up these point at the context, which names
    # what they mean; they are not words to look for.
    pointers = {word for word in words(question) if word in ANAPHORA} if resolved else set()
    question_terms = list(
        dict.fromkeys(stem(word) for word in question_words(question) if word not in pointers)
    )
    context = resolved.replace(FOLLOWING_UP, ";")
    context_words = question_words(context) if resolved else []
    context_terms = list(dict.fromkeys(stem(w) for w in context_words if w not in pointers))
    if resolved and (pointers or not question_terms):
        # "How big is it?": "it" is what the earlier question named ("Titan"), so those names
        # are what this question asks about, not merely context.
        named = [stem(word) for name in named_subjects(context, _no_titles) for word in words(name)]
        question_terms = list(dict.fromkeys([*question_terms, *named]))
    sentences = _evidence_sentences(messages)
    if not sentences or not (question_terms or context_terms):
        return NOTHING_RELEVANT
    question_terms, context_terms = _held_words(sentences, question_terms, context_terms)
    hints = [stem(word) for word in measure_hints(question)]
    names = [stem(word) for name in named_subjects(question, _no_titles) for word in words(name)]
    coverage = _score(sentences, question_terms, context_terms, hints, names)
    ranked = sorted(
        (sentence for sentence in sentences if sentence.score > 0),
        key=lambda s: (-s.score, s.number, s.position),
    )
    if not ranked or coverage < MIN_COVERAGE:
        return NOTHING_RELEVANT
    best = ranked[0].score
    picked: list[_Sentence] = []
    seen_texts: set[str] = set()
    for sentence in ranked:
        if len(picked) >= MAX_SENTENCES or sentence.score < best * SECONDARY_SHARE:
            break
        key = sentence.text.casefold()
        if key in seen_texts:
            continue
        seen_texts.add(key)
        picked.append(sentence)
    picked = _with_follow_ons(picked, sentences)
    picked.sort(key=lambda s: (s.number, s.position))
    parts = []
    for sentence in picked:
        text = _readable(sentence.text)
        if text[-1] not in ".!?…。！？":
            text += "."
        note = " (from an unverified source)" if sentence.untrusted else ""
        parts.append(f"{text[:-1]}{note}{text[-1]} [{sentence.number}]")
    return "From the notes: " + " ".join(parts)


class OfflineProvider:
    """A provider that needs no model: extractive, deterministic, always available."""

    name = "offline"
    # It never waits on a socket or a timer: an ask with it can run without an event loop.
    needs_event_loop = False

    def __init__(self, model: str = "extractive") -> None:
        self.model = model or "extractive"

    async def stream(
        self, messages: list[ChatMessage], options: GenerationOptions | None = None
    ) -> AsyncIterator[Chunk]:
        answer = compose_answer(messages)
        pieces = re.findall(r"\S+\s*", answer)
        for index, piece in enumerate(pieces):
            yield Chunk(text=piece)
            # Give a consumer the chance to cancel between words, as it could with a model.
            if index % 8 == 7:
                await pass_turn()
        yield Chunk(usage=Usage(), done=True)

    async def aclose(self) -> None:
        return None
