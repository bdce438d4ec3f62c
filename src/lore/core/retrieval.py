"""Which notes answer a question: follow-up resolution, then candidates from the index.

The candidates come from the same ranking as `lore search`, asked with the question's salient
words: stopwords left out, the rarest words kept while the search stays affordable. A long
question is one search, not a pasted page of terms. Retrieval also says what each word of
the question is worth (`Retrieval.weights`, its idf in the vault), so the pack can choose the
passages of the candidates that answer (see `lore.core.evidence`).

Only active notes are searched (superseded notes and held or rejected claims, which live in
quarantine/ and never in notes/, cannot be retrieved). Untrusted notes are retrieved but
marked, so the pack and the answer can say so.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import field
from typing import Any

from lore.core.dataclass_lite import dataclass_lite, dataclass_own_init
from lore.core.evidence import idf
from lore.core.passages import content_words, question_words, stem, words
from lore.core.subjects import (
    SubjectSwap,
    TitleLookup,
    names_a_subject,
    only_a_subject,
    swap_subject,
)
from lore.core.turns import Turn
from lore.core.vault import Vault

# Openers that only ever continue the previous turn...
_CONTINUING_OPENERS = ("and", "what about", "how about")
# ...and openers that also start questions of their own ("Why does Io have volcanoes?").
_FOLLOWUP_OPENERS = (
    *_CONTINUING_OPENERS, "but", "so", "also", "then", "why", "how come",
    "same", "more", "else", "again", "ok", "okay",
)  # fmt: skip
_ANAPHORA_TEXT = """it its it's itself that this those these they them their theirs he she him her his
    hers one ones former latter above previous last first second third fourth fifth other
    another there same such"""
ANAPHORA = frozenset(_ANAPHORA_TEXT.split())
# Greetings and thanks lean on nothing earlier, however short.
_SOCIAL_TEXT = """hi hello hey hiya howdy yo thanks thank thx ty cheers bye goodbye morning
    afternoon evening night good great cool nice ok okay please sorry welcome"""
_SOCIAL = frozenset(_SOCIAL_TEXT.split())
FOLLOWING_UP = "(following up on:"
_NESTED = re.compile(r"^(.*?) \(following up on: (.*)\)$", re.DOTALL)
_SHORT_QUESTION_WORDS = 3
# Words a greeting may carry along ("hi there", "thanks a lot").
_FILLER_TEXT = "a an the there lot so much very you all again for it"
_FILLER = frozenset(_FILLER_TEXT.split())
_MAX_CONTEXT_CHARS = 300
_PREVIOUS_CITED_TITLES = 3
_MAX_CONTEXT_TERMS = 8
_MAX_QUESTION_TERMS = 48
_RERANK_EXTRA = 4
# A word borrowed from the earlier question counts this much of its worth.
_BORROWED_WEIGHT = 0.5
# How much a section heading naming the question's subject adds to a note's normalised score.
HEADING_WEIGHT = 0.5
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+)$", re.MULTILINE)
_ORDINALS = {
    "first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4,
    "1st": 0, "2nd": 1, "3rd": 2, "4th": 3, "5th": 4, "last": -1,
}  # fmt: skip
# The index scores every note that holds a query word, about a microsecond each once a word's
# postings are kept with the searcher. Words held by thousands of notes add little to the
# ranking, so the rarest words are kept until this many postings; the rest still weigh in
# choosing passages and answers, just not in the search.
POSTINGS_BUDGET = 2500


@dataclass_own_init
class EvidenceCandidate:
    """A retrieved note, best first; the pack decides how much of it fits."""

    rank: int
    note_id: str
    title: str
    path: str
    trust: str
    score: float
    body: str

    @property
    def untrusted(self) -> bool:
        return self.trust == "untrusted"


@dataclass_lite
class Retrieval:
    """What retrieval made of a question: the question as resolved, the search and its terms,
    the candidate notes best first, and what each word is worth."""

    question: str
    resolved_question: str
    followup: bool
    query: str
    terms: list[str]
    candidates: list[EvidenceCandidate] = field(default_factory=list)
    elapsed_ms: float = 0.0
    # Each word of the question (and, in a follow-up, of the context it borrows) with what it
    # is worth in matching passages: its idf in the vault, borrowed words at half.
    weights: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "resolved_question": self.resolved_question,
            "followup": self.followup,
            "query": self.query,
            "notes": [
                {"rank": c.rank, "id": c.note_id, "title": c.title, "trust": c.trust,
                 "score": round(c.score, 4)}
                for c in self.candidates
            ],
            "elapsed_ms": round(self.elapsed_ms, 2),
        }  # fmt: skip


def is_followup(question: str) -> bool:
    """Whether `question` leans on the previous turn ("why?", "and the second one?").

    A greeting or a thank-you ("hi", "thanks!") does not, however short.
    """
    lowered = " ".join(words(question))
    tokens = lowered.split()
    if not tokens or all(token in _SOCIAL or token in _FILLER for token in tokens):
        return False
    if len(tokens) <= _SHORT_QUESTION_WORDS:
        return True
    if any(lowered == opener or lowered.startswith(opener + " ") for opener in _FOLLOWUP_OPENERS):
        return True
    return any(token in ANAPHORA for token in tokens)


def _stands_alone(question: str, titles: TitleLookup) -> bool:
    """A question that names its own subject and points at nothing earlier, however short or
    however it opens: "What is Titan?", "Describe Pluto", "Why does Io have volcanoes?"
    after a question about Europa. Only an opener and a subject ("and Titan?", "Europa?")
    still asks the earlier question again, about that subject."""
    tokens = words(question)
    lowered = " ".join(tokens)
    if any(token in ANAPHORA for token in tokens):
        return False
    if any(lowered == opener or lowered.startswith(opener + " ") for opener in _CONTINUING_OPENERS):
        return False
    return names_a_subject(question, titles) and not only_a_subject(question, titles)


def _no_titles(phrase: str) -> tuple[str, Sequence[str]] | None:
    return None


def _earlier(previous: Turn) -> str:
    """The previous question as it was resolved, one flat line of bounded length."""
    earlier = " ".join((previous.resolved_question or previous.question).split())
    # A chain of follow-ups stays flat: "c (following up on: b; a)", newest context first.
    nested = _NESTED.match(earlier)
    if nested:
        earlier = f"{nested.group(1)}; {nested.group(2)}"
    if len(earlier) > _MAX_CONTEXT_CHARS:
        earlier = earlier[:_MAX_CONTEXT_CHARS].rsplit(" ", 1)[0] + " …"
    return earlier


def _resolve(
    question: str, previous: Turn | None, titles: TitleLookup
) -> tuple[str, bool, SubjectSwap | None]:
    question = " ".join(question.split())
    if previous is None or not is_followup(question) or _stands_alone(question, titles):
        return question, False, None
    earlier = _earlier(previous)
    # "and what about Europa?" keeps the earlier question and changes its subject; a
    # pronoun ("and its moons?") still points at the earlier subject.
    if not any(word in ANAPHORA for word in words(question)):
        swap = swap_subject(question, earlier, titles)
        if swap is not None:
            return swap.resolved, True, swap
    return f"{question} {FOLLOWING_UP} {earlier})", True, None


def resolve_followup(
    question: str, previous: Turn | None, *, titles: TitleLookup = _no_titles
) -> tuple[str, bool]:
    """(the question as retrieval should read it, whether it was a follow-up).

    `titles` says which phrases are note titles (see `subjects.TitleLookup`); without it a new
    subject is recognised by its capitals alone.
    """
    resolved, followup, _ = _resolve(question, previous, titles)
    return resolved, followup


def _title_lookup(vault: Vault) -> TitleLookup:
    def named(phrase: str) -> tuple[str, Sequence[str]] | None:
        for fields in vault.index.lookup(title_key=phrase):
            tags = [tag for tag in str(fields.get("tags", "")).split(",") if tag]
            return str(fields.get("title", phrase)), tags
        return None

    return named


def _search_query(terms: list[str], context_terms: list[str]) -> str:
    # In a follow-up the question's own words count twice as much as borrowed ones.
    if not context_terms:
        return " ".join(terms)
    return " ".join([f"{term}^2" for term in terms] + context_terms)


def affordable_terms(
    terms: list[str], context_terms: list[str], frequency: dict[str, int]
) -> tuple[list[str], list[str]]:
    """The rarest words that fit POSTINGS_BUDGET, the question's own before borrowed ones.

    The rarest own word is always kept, however common. Words no note holds are left out.
    """
    spent = 0
    chosen: list[set[str]] = []
    for group in (terms, context_terms):
        kept: set[str] = set()
        for term in sorted(
            (t for t in group if frequency.get(t, 0) > 0), key=frequency.__getitem__
        ):
            cost = frequency[term]
            if spent + cost > POSTINGS_BUDGET and (spent or group is context_terms):
                break
            kept.add(term)
            spent += cost
        chosen.append(kept)
    return (
        [term for term in terms if term in chosen[0]],
        [term for term in context_terms if term in chosen[1]],
    )


def _ordinal_referent(vault: Vault, question: str, previous: Turn) -> tuple[str, str] | None:
    """("second", "Saturn") when the question says "the second one" and the previous answer
    cited at least two notes: the notes it cited, in the order it cited them, are the list
    the user is pointing into.
    """
    for word in words(question):
        position = _ORDINALS.get(word)
        if position is None or not previous.cited:
            continue
        if -len(previous.cited) <= position < len(previous.cited):
            for fields in vault.index.lookup(id=previous.cited[position]):
                return word, str(fields.get("title", ""))
    return None


def heading_match(body: str, wanted: set[str]) -> float:
    """The largest share of `wanted` stems that one Markdown heading of `body` holds."""
    if len(wanted) < 2:
        # One word in a heading is too weak a signal to reorder the index's ranking.
        return 0.0
    best = 0.0
    for match in _HEADING.finditer(body):
        held = {stem(word) for word in words(match.group(1))} & wanted
        best = max(best, len(held) / len(wanted))
    return best


def _cited_titles(vault: Vault, previous: Turn) -> list[str]:
    titles = []
    for note_id in previous.cited[:_PREVIOUS_CITED_TITLES]:
        for fields in vault.index.lookup(id=note_id):
            titles.append(str(fields.get("title", "")))
    return titles


def retrieve(
    vault: Vault, question: str, *, previous: Turn | None = None, top_k: int | None = None
) -> Retrieval:
    """Resolve a follow-up against `previous`, then fetch the top-k active notes."""
    started = time.perf_counter()
    limit = top_k if top_k is not None else vault.config.ask.top_k
    resolved, followup, swap = _resolve(question, previous, _title_lookup(vault))
    # The index stems words its own way, so it is given the words; passages and the offline
    # provider match on Lore's stems.
    own_words = question_words(question)
    context_words: list[str] = []
    if swap is not None:
        # The earlier question's intent, without its old subject or the notes cited for it.
        context_words = content_words(swap.resolved)
    elif followup and previous is not None:
        referent = _ordinal_referent(vault, question, previous)
        if referent is not None:
            ordinal, title = referent
            own_words = list(dict.fromkeys([*content_words(title), *own_words]))
            resolved = f"{resolved[:-1]}; the {ordinal} one: {title})"
        context_words = content_words(_earlier(previous))
        for title in _cited_titles(vault, previous):
            context_words.extend(content_words(title))
    # Bare words only: punctuation, quotes and field syntax from a pasted question must not
    # turn into query operators.
    safe = list(dict.fromkeys(t for t in (_bare(word) for word in own_words) if t))
    # A pasted page of text is still one search: its first words are enough to find it.
    safe = safe[:_MAX_QUESTION_TERMS]
    safe_context = [
        t for t in dict.fromkeys(_bare(word) for word in context_words) if t and t not in safe
    ][:_MAX_CONTEXT_TERMS]
    frequency: dict[str, int] = {}
    if safe or safe_context:
        frequency = vault.index.document_frequency([*safe, *safe_context])
        safe, safe_context = affordable_terms(safe, safe_context, frequency)
    query = _search_query(safe, safe_context)
    retrieval = Retrieval(
        question=question,
        resolved_question=resolved,
        followup=followup,
        query=query,
        terms=list(dict.fromkeys(stem(word) for word in own_words + context_words)),
        weights=_weights(vault, own_words, context_words, frequency),
    )
    if query and limit > 0:
        # A few more than asked for, so a note whose section heading names the subject can
        # move up past one that merely mentions it.
        hits = vault.index.search(
            query, limit=limit + _RERANK_EXTRA, status="active", snippets=False, with_body=True
        )
        found: list[tuple[float, EvidenceCandidate]] = []
        best = max((hit.score for hit in hits), default=0.0) or 1.0
        wanted = {stem(word) for word in own_words}
        for hit in hits:
            if hit.status != "active":
                continue
            candidate = EvidenceCandidate(
                rank=0,
                note_id=hit.id,
                title=hit.title,
                path=hit.path,
                trust=hit.trust,
                score=hit.score,
                body=hit.body,
            )
            found.append(
                (hit.score / best + HEADING_WEIGHT * heading_match(hit.body, wanted), candidate)
            )
        found.sort(key=lambda pair: -pair[0])
        for rank, (_, candidate) in enumerate(found[:limit], 1):
            candidate.rank = rank
            retrieval.candidates.append(candidate)
    retrieval.elapsed_ms = (time.perf_counter() - started) * 1000
    return retrieval


def _bare(word: str) -> str:
    return re.sub(r"\W", "", word)


def _weights(
    vault: Vault, own_words: list[str], context_words: list[str], frequency: dict[str, int]
) -> dict[str, float]:
    """What each word is worth in a passage: its idf among the vault's notes. A word the
    search was not asked about (too many words to look up) is looked up here."""
    missing = [
        bare
        for bare in dict.fromkeys(_bare(word) for word in [*own_words, *context_words])
        if bare and bare not in frequency
    ]
    if missing:
        frequency = {**frequency, **vault.index.document_frequency(missing)}
    notes = max(1, vault.index.note_count())
    weights: dict[str, float] = {}
    for word in context_words:
        held = frequency.get(_bare(word), 0)
        if held:
            weights[word] = _BORROWED_WEIGHT * idf(held, notes)
    for word in own_words:
        held = frequency.get(_bare(word), 0)
        if held:
            weights[word] = idf(held, notes)
    return weights
