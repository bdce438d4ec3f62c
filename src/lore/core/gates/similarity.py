"""Gate 5, similarity: duplicates merge, close-but-different claims next to trusted notes wait.

No model is needed. Each claim already in the vault is reduced to two bottom-k sketches (the
k smallest hashes of its content words and of its three-word shingles). Candidates come from
buckets keyed by those hashes, so a new claim is compared with a handful of neighbours, never
with every note. When both sets are smaller than k the estimate is the exact Jaccard index.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from hashlib import blake2b

from lore.core.gates.types import TRUST_RANK, Claim

SKETCH_SIZE = 16
# Only the smallest few hashes of a claim key its buckets: claims similar enough to matter
# share most of them, and the buckets stay small enough for a 100,000-claim vault.
BUCKET_KEYS = 8
# A bucket this full belongs to a phrase that is everywhere: it says nothing about closeness.
MAX_BUCKET = 100
_WORD = re.compile(r"\w+")
_FOOTNOTE = re.compile(r"\s*\[\^\d+\]")
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "not",
        "no",
        "der",
        "die",
        "das",
        "und",
        "ist",
        "le",
        "la",
        "les",
        "et",
        "est",
        "el",
        "los",
        "las",
        "y",
        "es",
        "il",
        "di",
        "che",
    ]
)


def _sketch(values: set[int]) -> tuple[int, ...]:
    return tuple(sorted(values)[:SKETCH_SIZE])


def words_of(text: str) -> list[str]:
    return _WORD.findall(_FOOTNOTE.sub("", text).casefold())


# Python salts its hash of a string anew in every process, so sketches made with it, and the
# merges they decide, would differ from one run of the same ingest to the next. Words are
# hashed with blake2b instead, each once while it stays among the commonest.
_MAX_WORD_HASHES = 1 << 17
_word_hashes: dict[str, int] = {}
_MASK = (1 << 64) - 1
_ODD = 0x9E3779B97F4A7C15


def _word_hash(word: str) -> int:
    found = _word_hashes.get(word)
    if found is None:
        if len(_word_hashes) >= _MAX_WORD_HASHES:
            _word_hashes.clear()
        found = _word_hashes[word] = int.from_bytes(
            blake2b(word.encode("utf-8"), digest_size=8).digest(), "little", signed=True
        )
    return found


def _shingle_hash(first: int, second: int, third: int) -> int:
    """Three words' hashes mixed into one (a multiply-and-shift mix, as splitmix64 does),
    signed 64-bit as the sketches are stored."""
    mixed = (((first * _ODD + second) & _MASK) * _ODD + third) & _MASK
    mixed ^= mixed >> 29
    mixed = (mixed * 0xBF58476D1CE4E5B9) & _MASK
    return mixed - ((mixed >> 63) << 64)


def sketches(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    words = words_of(text)
    hashes = [_word_hash(word) for word in words]
    content = {found for word, found in zip(words, hashes, strict=True) if word not in STOP_WORDS}
    if len(words) < 3:
        shingles = {_word_hash(" ".join(words))} if words else set()
    else:
        shingles = set(map(_shingle_hash, hashes, hashes[1:], hashes[2:]))
    return _sketch(content), _sketch(shingles)


def estimate(a: Sequence[int], b: Sequence[int]) -> float:
    """Bottom-k estimate of the Jaccard index of the two sets the sketches came from."""
    if not a or not b:
        return 0.0
    set_a, set_b = set(a), set(b)
    union = sorted(set_a | set_b)[:SKETCH_SIZE]
    shared = sum(1 for value in union if value in set_a and value in set_b)
    return shared / len(union)


@dataclass(slots=True)
class _Entry:
    """The sketches of one filed claim, with the note it is in and that note's trust."""

    path: str
    trust: str
    # Kept only for trusted claims, the ones a held claim is shown beside.
    text: str
    words: array[int]
    shingles: array[int]


@dataclass
class Match:
    """A filed claim near a new one, with how alike their words and their shingles are."""

    path: str
    trust: str
    text: str
    word_similarity: float
    shingle_similarity: float


class SimilarityIndex:
    """Sketches of the active claims in the vault, added to as claims are filed."""

    def __init__(self) -> None:
        self._entries: list[_Entry | None] = []
        # The claims by each of their first sketch values: most values are one claim's, and
        # hold its number alone rather than a list of one (a third of what an ingest of the
        # Python documentation kept in memory by its end).
        self._word_buckets: dict[int, int | list[int]] = {}
        self._shingle_buckets: dict[int, int | list[int]] = {}
        self._by_path: dict[str, list[int]] = {}
        # Sketches computed by nearest() for claims not yet added: each is computed once.
        self._sketched: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}

    def __len__(self) -> int:
        return sum(1 for entry in self._entries if entry is not None)

    def _sketches(self, text: str, *, keep: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
        found = self._sketched.pop(text, None) if not keep else self._sketched.get(text)
        if found is None:
            found = sketches(text)
            if keep:
                if len(self._sketched) > 10_000:
                    self._sketched.clear()
                self._sketched[text] = found
        return found

    def add(self, text: str, path: str, trust: str) -> None:
        words, shingles = self._sketches(text, keep=False)
        if not words and not shingles:
            return
        number = len(self._entries)
        self._entries.append(
            _Entry(
                path,
                trust,
                text if trust == "trusted" else "",
                array("q", words),
                array("q", shingles),
            )
        )
        if trust == "trusted":
            self._add_words(number)
        _file_under(self._shingle_buckets, shingles[:BUCKET_KEYS], number)
        self._by_path.setdefault(path, []).append(number)

    def _add_words(self, number: int) -> None:
        # Closeness by shared words only matters next to trusted notes (the trust and
        # contradiction checks), so only their words are bucketed; duplicates are found by
        # shingles, which are bucketed for every claim.
        entry = self._entries[number]
        if entry is not None:
            _file_under(self._word_buckets, entry.words[:BUCKET_KEYS], number)

    def remove_path(self, path: str) -> None:
        for number in self._by_path.pop(path, []):
            self._entries[number] = None

    def set_trust(self, path: str, trust: str) -> None:
        for number in self._by_path.get(path, []):
            entry = self._entries[number]
            if entry is not None:
                if trust == "trusted" and entry.trust != "trusted":
                    self._add_words(number)
                entry.trust = trust

    def nearest(self, text: str, limit: int = 5) -> list[Match]:
        words, shingles = self._sketches(text, keep=True)
        hits: Counter[int] = Counter()
        for buckets, values in ((self._word_buckets, words), (self._shingle_buckets, shingles)):
            for value in values[:BUCKET_KEYS]:
                bucket = buckets.get(value)
                if isinstance(bucket, int):
                    hits[bucket] += 1
                elif bucket and len(bucket) <= MAX_BUCKET:
                    hits.update(bucket)
        matches = []
        for number, count in hits.most_common(limit * 2):
            entry = self._entries[number]
            if entry is None or (count < 2 and len(words) > 2):
                continue
            matches.append(
                Match(
                    path=entry.path,
                    trust=entry.trust,
                    text=entry.text,
                    word_similarity=estimate(words, entry.words),
                    shingle_similarity=estimate(shingles, entry.shingles),
                )
            )
        matches.sort(key=lambda m: (m.shingle_similarity, m.word_similarity), reverse=True)
        return matches[:limit]


def _file_under(buckets: dict[int, int | list[int]], values: Iterable[int], number: int) -> None:
    for value in values:
        found = buckets.get(value)
        if found is None:
            buckets[value] = number
        elif isinstance(found, int):
            buckets[value] = [found, number]
        else:
            found.append(number)


@dataclass
class SimilarityOutcome:
    """What the similarity gate decided for a claim, why, and the filed claim it turned on."""

    decision: str  # "admit", "merge" or "hold"
    reasons: list[str]
    match: Match | None = None


def check(
    claim: Claim, index: SimilarityIndex, duplicate_threshold: float, contradiction_threshold: float
) -> SimilarityOutcome:
    matches = index.nearest(claim.text, limit=5)
    for match in matches:
        if match.shingle_similarity >= duplicate_threshold:
            return SimilarityOutcome(
                "merge",
                [
                    f"near-duplicate of {match.path} ({match.shingle_similarity:.0%} shingles shared)"
                ],
                match,
            )
    for match in sorted(matches, key=lambda m: m.word_similarity, reverse=True):
        if (
            match.trust == "trusted"
            and TRUST_RANK[claim.trust] < TRUST_RANK["trusted"]
            and match.word_similarity >= contradiction_threshold
        ):
            return SimilarityOutcome(
                "hold",
                [
                    f"possible contradiction with trusted note {match.path} "
                    f"({match.word_similarity:.0%} of words shared, wording differs)"
                ],
                match,
            )
    return SimilarityOutcome("admit", [])
