"""Gate 5, similarity: duplicates merge, close-but-different claims next to trusted notes wait.

No model is needed. Each claim already in the vault is reduced to two bottom-k sketches (the
k smallest hashes of its content words and of its three-word shingles). Candidates come from
buckets keyed by those hashes, so a new claim is compared with a handful of neighbours, never
with every note. When both sets are smaller than k the estimate is the exact Jaccard index.
"""

from __future__ import annotations

import re
import sqlite3
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from hashlib import blake2b
from itertools import chain, repeat
from pathlib import Path

from lore.core.dataclass_lite import dataclass_own_init
from lore.core.gates.similarity_spill import SpilledClaims
from lore.core.gates.types import TRUST_RANK, Claim
from lore.errors import VaultError

SKETCH_SIZE = 16
# Only the smallest few hashes of a claim key its buckets: claims similar enough to matter
# share most of them, and the buckets stay small enough for a 100,000-claim vault.
BUCKET_KEYS = 8
# A bucket this full belongs to a phrase that is everywhere: it says nothing about closeness.
MAX_BUCKET = 100
# Past this many claims in memory (about 340 bytes each), an index given a scratch folder
# moves them into a store there (see `lore.core.gates.similarity_spill`), keeping 13 bytes
# of each: about 34 MB at most, however large the corpus an ingest files. The 10,000 notes
# of `bench/index_bench.py` hold 60,000 claims, so most vaults never spill.
MEMORY_CLAIMS = 100_000
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


@dataclass_own_init
class Match:
    """A filed claim near a new one, with how alike their words and their shingles are."""

    path: str
    trust: str
    text: str
    word_similarity: float
    shingle_similarity: float


# A claim's trust as one byte, and the byte of a claim whose note was removed. A trust
# Lore does not know counts as untrusted, as a note's front matter naming one is read.
_TRUSTS = tuple(TRUST_RANK)
_TRUST_CODE = {name: code for code, name in enumerate(_TRUSTS)}
_UNTRUSTED = _TRUST_CODE["untrusted"]
_REMOVED = 255
# The newest bucket entries wait in a dict until there are this many, or a sixteenth as
# many as are merged already, and are then merged into the sorted arrays: a merge copies
# the arrays, so they are merged into less often as they grow.
MERGE_AT = 4_096


class _Buckets:
    """The claims filed under each sketch value, in the order they were filed.

    Most are in two arrays sorted by value (12 bytes an entry), the newest in a dict until
    enough of them wait to be merged in. A dict of them all took about 90 bytes an entry,
    with the objects of its keys and values: half of all the index held, and an ingest of
    the Python documentation makes 250,000 entries."""

    def __init__(self) -> None:
        self._values = array("q")
        self._claims = array("i")
        self._recent: dict[int, int | list[int]] = {}
        self._waiting = 0

    def __len__(self) -> int:
        return len(self._values) + self._waiting

    def file(self, values: Iterable[int], number: int) -> None:
        recent = self._recent
        for value in values:
            found = recent.get(value)
            if found is None:
                recent[value] = number
            elif isinstance(found, int):
                recent[value] = [found, number]
            else:
                found.append(number)
            self._waiting += 1
        if self._waiting >= max(MERGE_AT, len(self._values) // 16):
            self._merge()

    def entries(self, kind: int) -> Iterator[tuple[int, int, int]]:
        """Every entry as (kind, value, claim number), each value's in the order filed."""
        self._merge()
        return zip(repeat(kind), self._values, self._claims)

    def claims(self, value: int) -> int | list[int] | None:
        """The claims filed under `value`: one claim's number, a list, or None."""
        values = self._values
        start = bisect_left(values, value)
        stop = start
        if stop < len(values) and values[stop] == value:
            stop += 1
            # A phrase that is everywhere has thousands: found by halves, not one by one.
            if stop < len(values) and values[stop] == value:
                stop = bisect_right(values, value, stop)
        recent = self._recent.get(value)
        if start == stop:
            return recent
        if recent is None and stop == start + 1:
            return self._claims[start]
        held = self._claims[start:stop].tolist()
        if recent is not None:
            held.extend([recent] if isinstance(recent, int) else recent)
        return held

    def _merge(self) -> None:
        """The waiting entries into the arrays, each after those filed under its value
        before it: one pass of copying, a step of Python for each value merged."""
        old_values, old_claims = self._values, self._claims
        values, claims = array("q"), array("i")
        done = 0
        for value in sorted(self._recent):
            found = self._recent[value]
            at = bisect_right(old_values, value, done)
            values.extend(old_values[done:at])
            claims.extend(old_claims[done:at])
            done = at
            if isinstance(found, int):
                values.append(value)
                claims.append(found)
            else:
                values.extend([value] * len(found))
                claims.extend(found)
        values.extend(old_values[done:])
        claims.extend(old_claims[done:])
        self._values, self._claims = values, claims
        self._recent = {}
        self._waiting = 0


class SimilarityIndex:
    """Sketches of the active claims in the vault, added to as claims are filed.

    Each claim is a number: its sketches are runs of two arrays, its trust a byte, its note
    a reference to the path string the catalog holds anyway. A claim took 870 bytes as an
    object with two arrays of its own and dict entries in the buckets, and takes 340 so:
    the index grows less with every document an ingest files, and a long-lived process
    keeps less for the vault it has open.

    Given a `scratch` folder, it moves its claims past `MEMORY_CLAIMS` into a store there,
    the oldest first, and finds the same neighbours in the same order as if it had not."""

    def __init__(self, scratch: Path | None = None) -> None:
        self.scratch = scratch
        # Claims numbered below this are in the store, all but their trust and note.
        self._spilled = 0
        self._store: SpilledClaims | None = None
        # Why the store can no longer be trusted, once a move into it failed part way.
        self._failure: VaultError | None = None
        # Bucket values of each kind with more than MAX_BUCKET claims in the store: never
        # looked up there again, as a bucket only grows.
        self._overfull: tuple[set[int], set[int]] = (set(), set())
        self._paths: list[str] = []
        self._trust = bytearray()
        # Kept only for trusted claims, the ones a held claim is shown beside.
        self._texts: dict[int, str] = {}
        # Claim n's sketches are values[starts[m]:starts[m + 1]] of each, m = n - spilled.
        self._words = array("q")
        self._word_starts = array("q", [0])
        self._shingles = array("q")
        self._shingle_starts = array("q", [0])
        # Claims by their first sketch values. Closeness by shared words only matters next
        # to trusted notes (the trust and contradiction checks), so only their words are
        # filed; duplicates are found by shingles, which are filed for every claim.
        self._word_buckets = _Buckets()
        self._shingle_buckets = _Buckets()
        self._by_path: dict[str, array[int]] = {}
        # Sketches computed by nearest() for claims not yet added: each is computed once.
        self._sketched: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}

    def __len__(self) -> int:
        return len(self._trust) - self._trust.count(_REMOVED)

    def _sketches(self, text: str, *, keep: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
        found = self._sketched.pop(text, None) if not keep else self._sketched.get(text)
        if found is None:
            found = sketches(text)
            if keep:
                if len(self._sketched) > 10_000:
                    self._sketched.clear()
                self._sketched[text] = found
        return found

    def add(self, text: str, path: str, trust: str) -> tuple[Sequence[int], Sequence[int]] | None:
        """File the claim `text` of the note at `path`; its sketches, or None for a text
        with no words, which is not filed."""
        words, shingles = self._sketches(text, keep=False)
        if not words and not shingles:
            return None
        self.add_sketched(words, shingles, text, path, trust)
        return words, shingles

    def add_sketched(
        self, words: Sequence[int], shingles: Sequence[int], text: str, path: str, trust: str
    ) -> None:
        """File a claim whose sketches are known (as `sketches(text)` makes them)."""
        number = len(self._trust)
        self._paths.append(path)
        self._trust.append(_TRUST_CODE.get(trust, _UNTRUSTED))
        self._words.extend(words)
        self._word_starts.append(len(self._words))
        self._shingles.extend(shingles)
        self._shingle_starts.append(len(self._shingles))
        if trust == "trusted":
            self._texts[number] = text
            self._word_buckets.file(words[:BUCKET_KEYS], number)
        self._shingle_buckets.file(shingles[:BUCKET_KEYS], number)
        self._by_path.setdefault(path, array("i")).append(number)
        if self.scratch is not None and number + 1 - self._spilled >= MEMORY_CLAIMS:
            self._spill()

    def _spill(self) -> None:
        """Move every claim in memory, and every bucket entry, into the store."""
        if self._failure is not None:
            raise self._failure
        if self._store is None:
            self._store = SpilledClaims.open(self.scratch) if self.scratch is not None else None
            if self._store is None:
                self.scratch = None  # nowhere to put them: all stay in memory
                return
        first, count = self._spilled, len(self._trust) - self._spilled
        claims = (
            (first + at, self._words_at(at), self._shingles_at(at), self._texts.get(first + at))
            for at in range(count)
        )
        entries = chain(self._word_buckets.entries(0), self._shingle_buckets.entries(1))
        try:
            self._store.spill(claims, entries)
        except sqlite3.Error as exc:
            if not self._spilled:
                # A full disk, say, on the first move: the store held nothing else, and all
                # stay in memory.
                self._store, self.scratch = None, None
                return
            # The store may now hold part of these claims, or be damaged, and claims moved
            # before are only there: no neighbour found from now on could be trusted.
            self._failure = self._store_failed("cannot move claims into", exc)
            raise self._failure from None
        self._spilled += count
        self._words, self._word_starts = array("q"), array("q", [0])
        self._shingles, self._shingle_starts = array("q"), array("q", [0])
        self._texts.clear()
        self._word_buckets, self._shingle_buckets = _Buckets(), _Buckets()

    def _store_failed(self, doing: str, exc: sqlite3.Error) -> VaultError:
        where = self._store.folder if self._store is not None else self.scratch
        return VaultError(f"the similarity gate {doing} its scratch file in {where}: {exc}")

    def _usable_store(self) -> SpilledClaims:
        if self._failure is not None:
            raise self._failure
        assert self._store is not None  # only asked for once claims were moved
        return self._store

    def _stored_buckets(self, kind: int, values: Sequence[int]) -> dict[int, list[int]]:
        try:
            return self._usable_store().buckets(kind, values)
        except sqlite3.Error as exc:
            raise self._store_failed("cannot read", exc) from None

    def _words_at(self, at: int) -> array[int]:
        return self._words[self._word_starts[at] : self._word_starts[at + 1]]

    def _shingles_at(self, at: int) -> array[int]:
        return self._shingles[self._shingle_starts[at] : self._shingle_starts[at + 1]]

    def _claims_of(
        self, numbers: Sequence[int]
    ) -> dict[int, tuple[Sequence[int], Sequence[int], str]]:
        """The word and shingle sketches and text of each of the active claims `numbers`."""
        first = self._spilled
        found: dict[int, tuple[Sequence[int], Sequence[int], str]] = {}
        if self._store is not None and any(number < first for number in numbers):
            try:
                stored = self._usable_store().claims(
                    [number for number in numbers if number < first]
                )
            except sqlite3.Error as exc:
                raise self._store_failed("cannot read", exc) from None
            for number, (words, shingles, text) in stored.items():
                found[number] = (words, shingles, text or "")
        for number in numbers:
            if number >= first:
                at = number - first
                found[number] = (
                    self._words_at(at),
                    self._shingles_at(at),
                    self._texts.get(number, ""),
                )
        return found

    def remove_path(self, path: str) -> None:
        for number in self._by_path.pop(path, ()):
            self._trust[number] = _REMOVED
            self._texts.pop(number, None)

    def set_trust(self, path: str, trust: str) -> None:
        code = _TRUST_CODE.get(trust, _UNTRUSTED)
        trusted = _TRUST_CODE["trusted"]
        numbers = [
            number for number in self._by_path.get(path, ()) if self._trust[number] != _REMOVED
        ]
        if code == trusted:
            promoted = [number for number in numbers if self._trust[number] != trusted]
            sketched = self._claims_of(promoted)
            for number in promoted:
                self._word_buckets.file(sketched[number][0][:BUCKET_KEYS], number)
        for number in numbers:
            self._trust[number] = code

    def _bucket(
        self, kind: int, buckets: _Buckets, stored: dict[int, list[int]], value: int
    ) -> int | list[int] | None:
        """The claims filed under `value`, those in the store first, as they were filed."""
        held = buckets.claims(value)
        kept = stored.get(value)
        if kept is None:
            return held
        if len(kept) > MAX_BUCKET:
            self._overfull[kind].add(value)
        if held is None:
            return kept if len(kept) > 1 else kept[0]
        kept.extend([held] if isinstance(held, int) else held)
        return kept

    def nearest(self, text: str, limit: int = 5) -> list[Match]:
        words, shingles = self._sketches(text, keep=True)
        hits: Counter[int] = Counter()
        store = self._store
        for kind, buckets, values in (
            (0, self._word_buckets, words),
            (1, self._shingle_buckets, shingles),
        ):
            keys: Sequence[int] = values[:BUCKET_KEYS]
            stored: dict[int, list[int]] = {}
            if store is not None and store.has(kind):
                # Those the store holds too many claims under are too full with any more.
                overfull = self._overfull[kind]
                keys = [value for value in keys if value not in overfull]
                stored = self._stored_buckets(kind, keys)
            if not len(buckets) and not stored:
                continue
            for value in keys:
                bucket = (
                    self._bucket(kind, buckets, stored, value) if stored else buckets.claims(value)
                )
                if isinstance(bucket, int):
                    hits[bucket] += 1
                elif bucket and len(bucket) <= MAX_BUCKET:
                    hits.update(bucket)
        near = [
            number
            for number, count in hits.most_common(limit * 2)
            if self._trust[number] != _REMOVED and not (count < 2 and len(words) > 2)
        ]
        sketched = self._claims_of(near)
        matches = []
        for number in near:
            their_words, their_shingles, their_text = sketched[number]
            matches.append(
                Match(
                    path=self._paths[number],
                    trust=_TRUSTS[self._trust[number]],
                    text=their_text,
                    word_similarity=estimate(words, their_words),
                    shingle_similarity=estimate(shingles, their_shingles),
                )
            )
        matches.sort(key=lambda m: (m.shingle_similarity, m.word_similarity), reverse=True)
        return matches[:limit]


@dataclass_own_init
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
