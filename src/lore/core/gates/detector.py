"""A trained detector of text that tries to instruct the AI that will read it.

Rules catch the wordings someone thought of; the detector catches the style of an attack:
a logistic model over the word n-grams of the text's canonical form, trained on
public attack corpora and on ordinary documentation (`make train-gate`). It ships inside the
package as one small file that records the corpora it was built from and its own hash, so
it works offline and its provenance can be checked.

The score is the model's probability that the text is hostile; the threshold chosen at
training time is raised to `CONFIDENT` at most. Every n-gram present counts once and the sum is divided by the square root
of their number, so a long passage and a short sentence are judged on the same scale.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import re
from functools import lru_cache
from itertools import pairwise
from pathlib import Path
from typing import Any

from lore.core.dataclass_lite import dataclass_own_init
from lore.core.gates.canonical import canonical
from lore.errors import LoreError

FORMAT = "lore-injection-detector/1"
MODEL_PATH = Path(__file__).with_name("injection_model.json.gz")
_TOKEN = re.compile(r"\w+|[^\w\s]")
_ALPHA_WORD = re.compile(r"\b[^\W\d_]\w*")
MASK = "\u2022"
# A passage longer than this is judged in windows: an attack hidden in a long document
# should not be diluted by the document around it.
WINDOW_CHARS = 1_500
# Shorter text carries too little style to judge; the rules still read it.
MIN_CHARS = 80
# The model weighs how a text addresses its reader; only text that also speaks of an AI or
# its prompts can be addressing one. A recipe or a fire drill notice speaks to its reader too.
_AI_CUE = re.compile(
    r"\b(?:ai|a\.i\.|assistant|chatbot|bot|llm|\w*gpt|gemini|claude|copilot|language\s+model"
    r"|prompts?|jailbr\w*|persona|role-?play|in\s+character|unfiltered|uncensored|unrestricted"
    r"|censor\w*|developer\s+mode|system\s+(?:prompt|message))\b"
)
# The model knows the words of English documents; text mostly in other words (another
# language, a table of names or code) is left to the rules, which read eight languages.
MIN_KNOWN_WORDS = 0.5
# The threshold chosen in training keeps false alarms rare on held-back documentation, but
# everyday text that speaks to people (handbooks, policies, recipes) is scarce in the public
# corpora and scores higher than manuals do; below this the detector holds nothing.
CONFIDENT = 0.9


class DetectorError(LoreError):
    """The detector's model file is missing, damaged or of another format."""


def tokens(form: str) -> list[str]:
    return _TOKEN.findall(form)


def features(form: str, vocabulary: frozenset[str]) -> set[str]:
    """The n-grams the model weighs, over canonical text `form`.

    Words outside `vocabulary` (the commonest words of ordinary documents) become one
    placeholder, so the model learns how a text speaks to its reader (who is addressed, what
    is asked, in what order) rather than what it is about: a news story about AI models
    shares topic words with an attack, not the shape of its sentences.
    """
    masked = [token if token in vocabulary else MASK for token in tokens(form)]
    found = {"w:" + token for token in masked}
    found.update(f"b:{a} {b}" for a, b in pairwise(masked))
    found.update(f"t:{a} {b} {c}" for a, b, c in zip(masked, masked[1:], masked[2:], strict=False))
    return found


@dataclass_own_init(frozen=True)
class DetectorFinding:
    """The detector's score for a text that reads as an instruction to an AI, and the words that
    raised it most."""

    score: float
    evidence: list[str]

    def reason(self) -> str:
        shown = ", ".join(repr(term) for term in self.evidence[:4])
        return f"reads like an instruction to an AI (detector score {self.score:.2f}: {shown})"


class InjectionDetector:
    def __init__(
        self,
        weights: dict[str, float],
        bias: float,
        threshold: float,
        vocabulary: frozenset[str],
        meta: dict[str, Any],
        common_words: frozenset[str] = frozenset(),
    ):
        self.weights = weights
        self.vocabulary = vocabulary
        # The commonest words of English documents, longer than two letters.
        self.common_words = common_words or vocabulary
        self.bias = bias
        self.trained_threshold = threshold
        self.threshold = max(threshold, CONFIDENT)
        self.meta = meta

    @classmethod
    def from_bytes(cls, data: bytes, *, origin: str = "model") -> InjectionDetector:
        try:
            payload = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
            if payload.get("format") != FORMAT:
                raise DetectorError(f"{origin}: not a {FORMAT} file")
            recorded = payload.get("sha256")
            if recorded != model_digest(payload):
                raise DetectorError(f"{origin}: its contents do not match its recorded hash")
            weights = {str(key): float(value) for key, value in payload["weights"].items()}
            vocabulary = frozenset(str(word) for word in payload["vocabulary"])
            common = frozenset(str(word) for word in payload.get("common_words", ()))
            threshold = float(payload["threshold"])
            return cls(weights, float(payload["bias"]), threshold, vocabulary, payload, common)
        except DetectorError:
            raise
        except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise DetectorError(f"{origin}: unreadable detector model ({exc})") from None

    @classmethod
    def from_file(cls, path: Path) -> InjectionDetector:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise DetectorError(
                f"{path}: cannot read the detector model ({exc.strerror})"
            ) from None
        return cls.from_bytes(data, origin=str(path))

    def _logit(self, grams: set[str]) -> float:
        if not grams:
            return self.bias
        get = self.weights.get
        total = sum(get(gram, 0.0) for gram in grams)
        return self.bias + total / math.sqrt(len(grams))

    def score(self, text: str, *, canonical_text: bool = False) -> float:
        form = text if canonical_text else canonical(text)
        return _sigmoid(self._logit(features(form, self.vocabulary)))

    def is_hostile(self, text: str) -> bool:
        return self.judge(text) is not None

    def judge(self, text: str, *, canonical_text: bool = False) -> DetectorFinding | None:
        """A finding when the text scores at or above the threshold, else None."""
        form = text if canonical_text else canonical(text)
        if len(form) > WINDOW_CHARS:
            return max(
                (
                    finding
                    for window in windows(form)
                    if (finding := self.judge(window, canonical_text=True)) is not None
                ),
                key=lambda finding: finding.score,
                default=None,
            )
        if len(form) < MIN_CHARS or not self.addresses_ai(form) or not self.knows(form):
            return None
        grams = features(form, self.vocabulary)
        score = _sigmoid(self._logit(grams))
        if score < self.threshold:
            return None
        return DetectorFinding(score, self._evidence(grams))

    def knows(self, form: str) -> bool:
        """Whether enough of the words of `form` are ones the model was trained to read."""
        words = _ALPHA_WORD.findall(form)
        known = sum(map(self.vocabulary.__contains__, words))
        return len(words) >= 8 and known >= MIN_KNOWN_WORDS * len(words)

    @staticmethod
    def addresses_ai(form: str) -> bool:
        """Whether `form` speaks of an AI or its prompts at all."""
        return _AI_CUE.search(form) is not None

    def _evidence(self, grams: set[str]) -> list[str]:
        """The words and word pairs that pushed the score up most: what a person can check."""
        weighted = [
            (self.weights.get(gram, 0.0), gram[2:])
            for gram in grams
            if MASK not in gram and len(gram) > 4
        ]
        weighted.sort(key=lambda item: (-item[0], item[1]))
        return [term for weight, term in weighted[:6] if weight > 0]


def windows(text: str, size: int = WINDOW_CHARS) -> list[str]:
    """Overlapping pieces of about `size` characters, cut at spaces where there is one."""
    if len(text) <= size:
        return [text]
    pieces = []
    step = size // 2
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            space = text.rfind(" ", start + step, end)
            end = space if space > start else end
        pieces.append(text[start:end])
        if end >= len(text):
            break
        start = max(start + 1, end - step)
    return pieces


def model_digest(payload: dict[str, Any]) -> str:
    """The hash a model file records of itself: every field but the hash, canonically."""
    body = {key: value for key, value in payload.items() if key != "sha256"}
    encoded = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(encoded.encode()).hexdigest()


def _sigmoid(value: float) -> float:
    if value >= 0:
        return 1.0 / (1.0 + math.exp(-value))
    exp = math.exp(value)
    return exp / (1.0 + exp)


@lru_cache(maxsize=8)
def _load_cached(path: str, mtime_ns: int, size: int) -> InjectionDetector:
    return InjectionDetector.from_file(Path(path))


def load_detector(path: Path | None = None) -> InjectionDetector:
    """The packaged model, or the one at `path`; read once per file version."""
    target = path or MODEL_PATH
    try:
        stat = target.stat()
    except OSError as exc:
        raise DetectorError(
            f"{target}: the detector model is missing ({exc.strerror}); run `make train-gate`"
        ) from None
    return _load_cached(str(target), stat.st_mtime_ns, stat.st_size)
