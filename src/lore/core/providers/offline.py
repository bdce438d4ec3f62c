"""The offline provider: answers with no model at all, extractively, from the evidence.

It reads the nonce-delimited evidence blocks the pack sends, picks the sentences that best
match the question, and strings them together with `[n]` citations. When no sentence shares
a word with the question it says plainly that the vault holds nothing relevant. The same
messages always give the same answer.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

from lore.core.pack import EVIDENCE_PREFIX
from lore.core.passages import question_words, split_sentences, stem, words
from lore.core.providers.base import ChatMessage, Chunk, GenerationOptions, Usage
from lore.core.retrieval import ANAPHORA, FOLLOWING_UP

_BLOCK = re.compile(
    r"<<<NOTE (?P<nonce>[0-9a-f]+) \[(?P<number>\d+)\] (?P<meta>[^\n]*?)>>>\n"
    r"(?P<body>.*?)\n<<<END (?P=nonce)>>>",
    re.DOTALL,
)
_NONCE = re.compile(r"carrying the code ([0-9a-f]+)")
_TRUST = re.compile(r"\btrust=(?P<trust>[\w-]+)")
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
_WIKI_LINK = re.compile(r"\[\[([^\]|\n]+?)(?:\|([^\]\n]+))?\]\]")
MAX_SENTENCE_CHARS = 400
NOTHING_RELEVANT = (
    "The vault holds nothing relevant to this question: no note matches it. "
    "Try other words, or add a source with /ingest."
)


@dataclass
class _Sentence:
    number: int
    position: int
    text: str
    untrusted: bool
    score: float = 0.0


def _is_evidence(message: ChatMessage) -> bool:
    return message.role == "user" and message.content.startswith(EVIDENCE_PREFIX)


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
            number = int(block.group("number"))
            for position, sentence in enumerate(split_sentences(block.group("body"))):
                if sentence.startswith("#"):
                    continue  # a heading names a topic; it answers nothing
                clean = _MARKUP.sub("", sentence).strip()
                if len(clean.split()) < 3 or clean in {"…", "..."}:
                    continue
                if len(clean) > MAX_SENTENCE_CHARS:
                    clean = clean[:MAX_SENTENCE_CHARS].rsplit(" ", 1)[0] + " …"
                sentences.append(_Sentence(number, position, clean, untrusted))
    return sentences


def _score(
    sentences: list[_Sentence], question_terms: list[str], context_terms: list[str]
) -> float:
    """Score each sentence by the rarity (IDF) of the question's words it holds, and return
    the best share of the question's weight any one sentence covers.

    A word no evidence sentence holds weighs the most, so a question about something the
    vault lacks ("the capital of France") is not answered by a sentence that only shares
    its commonest word.
    """
    bags = [{stem(word) for word in words(sentence.text)} for sentence in sentences]
    total = len(sentences)
    weights: dict[str, float] = {}
    for term in {*question_terms, *context_terms}:
        frequency = sum(1 for bag in bags if term in bag)
        weights[term] = math.log(1 + total / frequency) if frequency else math.log(1 + 2 * total)
    wanted = question_terms or context_terms
    on_subject = bool(question_terms and context_terms) and any(
        term in bag for bag in bags for term in question_terms
    )
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
        if not own and on_subject:
            score *= OFF_SUBJECT
        # Long sentences match more words by chance; an untrusted note ranks a little lower.
        score /= 1 + len(bag) / 60
        if sentence.untrusted:
            score *= 0.8
        sentence.score = score
    return best_coverage


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
    context_words = question_words(resolved.replace(FOLLOWING_UP, ";")) if resolved else []
    context_terms = list(dict.fromkeys(stem(w) for w in context_words if w not in pointers))
    sentences = _evidence_sentences(messages)
    if not sentences or not (question_terms or context_terms):
        return NOTHING_RELEVANT
    coverage = _score(sentences, question_terms, context_terms)
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
                await asyncio.sleep(0)
        yield Chunk(usage=Usage(), done=True)

    async def aclose(self) -> None:
        return None
