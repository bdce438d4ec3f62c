"""Training the injection detector: a sparse logistic model fitted with FTRL-Proximal.

Pure Python and deterministic: samples and n-grams are visited in sorted order, so the same
corpora give the same weights, and the file written is byte for byte the same. Used by
`bench/train_gate.py` (the packaged model) and `bench/admission_bench.py` (one model per fold).

Every text is cut into the pieces the gate judges at ingest: paragraphs, long paragraphs in
sentence runs, and the whole text as one passage. A fifth of the samples, chosen by a seeded
hash of their text, is kept out of fitting and used to choose the threshold.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from lore.core.gates.canonical import canonical
from lore.core.gates.detector import (
    FORMAT,
    MIN_CHARS,
    WINDOW_CHARS,
    InjectionDetector,
    features,
    model_digest,
    tokens,
)

PIECE_CHARS = 600
MIN_PIECE_CHARS = 24
_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")

# FTRL-Proximal settings (McMahan et al., 2013) and the model's size.
ALPHA = 0.3
BETA = 1.0
L1 = 0.4
L2 = 1.0
EPOCHS = 6
MIN_DOCUMENT_FREQUENCY = 2
MAX_FEATURES = 60_000
MAX_PIECES_PER_CLASS = 12_000
VOCABULARY_WORDS = 1_000
COMMON_WORDS = 6_000
# The threshold keeps false alarms on held-back benign pieces at or below this share.
BENIGN_FALSE_ALARMS = 0.001


def pieces(text: str) -> list[str]:
    """The units a claim or a passage could be: paragraphs, sentence runs, the whole."""
    found: list[str] = []
    whole = text.strip()
    if not whole:
        return found
    for paragraph in _PARAGRAPH.split(whole):
        paragraph = " ".join(paragraph.split())
        if len(paragraph) <= PIECE_CHARS:
            if len(paragraph) >= MIN_PIECE_CHARS:
                found.append(paragraph)
            continue
        run = ""
        for sentence in _SENTENCE_END.split(paragraph):
            if run and len(run) + len(sentence) > PIECE_CHARS:
                found.append(run)
                run = ""
            run = f"{run} {sentence}".strip()
        if len(run) >= MIN_PIECE_CHARS:
            found.append(run)
    flat = " ".join(whole.split())[:WINDOW_CHARS]
    if flat not in found and len(flat) >= MIN_PIECE_CHARS:
        found.append(flat)
    return found


def _vocabulary(benign_forms: list[str]) -> frozenset[str]:
    """The words found in the most benign pieces: what every kind of document says."""
    frequency: Counter[str] = Counter()
    for form in benign_forms:
        frequency.update({token for token in tokens(form) if not token.isdigit()})
    ranked = sorted(frequency.items(), key=lambda item: (-item[1], item[0]))
    return frozenset(word for word, _ in ranked[:VOCABULARY_WORDS])


def _common_words(benign_forms: list[str]) -> frozenset[str]:
    """The commonest longer words of ordinary English documents, for telling a language."""
    frequency: Counter[str] = Counter()
    for form in benign_forms:
        frequency.update({token for token in tokens(form) if len(token) >= 3 and token.isalpha()})
    ranked = sorted(frequency.items(), key=lambda item: (-item[1], item[0]))
    return frozenset(word for word, _ in ranked[:COMMON_WORDS] if word.isascii())


def _sample(forms: list[str], limit: int) -> list[str]:
    """At most `limit` of `forms`, the same ones every run."""
    if len(forms) <= limit:
        return forms
    return sorted(sorted(forms, key=lambda form: hashlib.sha1(form.encode()).digest())[:limit])


def _held_back(text: str) -> bool:
    # Salted, so the pieces held back are not the ones `_sample` favours.
    return hashlib.sha1(b"calibration\0" + text.encode()).digest()[0] < 52  # about a fifth


def _unique_pieces(texts: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    for text in texts:
        for piece in pieces(text):
            form = canonical(piece)
            if len(form) >= MIN_PIECE_CHARS:
                seen.add(form)
    return sorted(seen)


def train_model(
    hostile: Sequence[str],
    benign: Sequence[str],
    *,
    corpora: dict[str, str],
    epochs: int = EPOCHS,
    max_features: int = MAX_FEATURES,
    max_pieces: int = MAX_PIECES_PER_CLASS,
) -> bytes:
    """The model file's bytes for these texts: gzip of canonical JSON, no timestamps."""
    hostile_forms = _sample(_unique_pieces(hostile), max_pieces)
    taken = set(hostile_forms)
    benign_forms = _sample(
        [form for form in _unique_pieces(benign) if form not in taken], max_pieces
    )
    labelled = [(form, 1) for form in hostile_forms] + [(form, 0) for form in benign_forms]
    fit = [(form, label) for form, label in labelled if not _held_back(form)]
    calibration = [(form, label) for form, label in labelled if _held_back(form)]

    vocabulary = _vocabulary([form for form, label in fit if not label])
    grams_of = [sorted(features(form, vocabulary)) for form, _ in fit]
    frequency: Counter[str] = Counter()
    for grams in grams_of:
        frequency.update(grams)
    grams = sorted(gram for gram, count in frequency.items() if count >= MIN_DOCUMENT_FREQUENCY)
    index = {gram: number for number, gram in enumerate(grams)}
    rows = [[index[gram] for gram in grams if gram in index] for grams in grams_of]
    labels = [label for _, label in fit]
    positives = sum(labels)
    negatives = len(labels) - positives
    positive_weight = negatives / positives if positives else 1.0

    weights, bias = _ftrl(rows, labels, len(grams), epochs, positive_weight)
    kept = sorted(
        (number for number, weight in enumerate(weights) if weight != 0.0),
        key=lambda number: (-abs(weights[number]), grams[number]),
    )[:max_features]
    model_weights = {grams[number]: round(weights[number], 4) for number in sorted(kept)}
    model_weights = {gram: weight for gram, weight in model_weights.items() if weight != 0.0}
    bias = round(bias, 4)

    provisional = InjectionDetector(model_weights, bias, 0.5, vocabulary, {})
    threshold, recall, false_alarms = _choose_threshold(provisional, calibration)
    payload: dict[str, Any] = {
        "format": FORMAT,
        "corpora": dict(sorted(corpora.items())),
        "training": {
            "hostile_pieces": positives,
            "benign_pieces": negatives,
            "calibration_pieces": len(calibration),
            "calibration_hostile_recall": round(recall, 4),
            "calibration_benign_false_alarms": round(false_alarms, 4),
            "features": len(model_weights),
            "settings": {
                "alpha": ALPHA,
                "beta": BETA,
                "l1": L1,
                "l2": L2,
                "epochs": epochs,
                "vocabulary_words": VOCABULARY_WORDS,
            },
        },
        "bias": bias,
        "threshold": threshold,
        "vocabulary": sorted(vocabulary),
        "common_words": sorted(_common_words([form for form, label in fit if not label])),
        "weights": model_weights,
    }
    payload["sha256"] = model_digest(payload)
    encoded = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return gzip.compress(encoded.encode(), compresslevel=9, mtime=0)


def _ftrl(
    rows: list[list[int]], labels: list[int], width: int, epochs: int, positive_weight: float
) -> tuple[list[float], float]:
    z = [0.0] * (width + 1)
    n = [0.0] * (width + 1)
    bias_slot = width
    order = sorted(range(len(rows)), key=lambda row: hashlib.sha1(str(row).encode()).digest())
    sqrt = math.sqrt

    def weight(slot: int, l1: float) -> float:
        zs = z[slot]
        if -l1 <= zs <= l1:
            return 0.0
        sign = 1.0 if zs > 0 else -1.0
        return -(zs - sign * l1) / ((BETA + sqrt(n[slot])) / ALPHA + L2)

    for epoch in range(epochs):
        visit = order if epoch % 2 == 0 else order[::-1]
        for row_number in visit:
            row = rows[row_number]
            label = labels[row_number]
            value = 1.0 / sqrt(len(row)) if row else 0.0
            current = {slot: weight(slot, L1) for slot in row}
            bias = weight(bias_slot, 0.0)
            margin = bias + value * sum(current.values())
            margin = max(-35.0, min(35.0, margin))
            probability = 1.0 / (1.0 + math.exp(-margin))
            scale = positive_weight if label else 1.0
            gradient = (probability - label) * scale
            for slot, current_weight in current.items():
                g = gradient * value
                sigma = (sqrt(n[slot] + g * g) - sqrt(n[slot])) / ALPHA
                z[slot] += g - sigma * current_weight
                n[slot] += g * g
            sigma = (sqrt(n[bias_slot] + gradient * gradient) - sqrt(n[bias_slot])) / ALPHA
            z[bias_slot] += gradient - sigma * bias
            n[bias_slot] += gradient * gradient
    return [weight(slot, L1) for slot in range(width)], weight(bias_slot, 0.0)


def _choose_threshold(
    detector: InjectionDetector, calibration: list[tuple[str, int]]
) -> tuple[float, float, float]:
    """(threshold, hostile recall, benign false alarms) on the held-back pieces."""
    calibration = [
        (form, label)
        for form, label in calibration
        if len(form) >= MIN_CHARS and detector.knows(form) and detector.addresses_ai(form)
    ]
    benign = sorted(
        detector.score(form, canonical_text=True) for form, label in calibration if not label
    )
    hostile = [detector.score(form, canonical_text=True) for form, label in calibration if label]
    if not benign:
        return 0.5, 1.0, 0.0
    allowed = int(len(benign) * BENIGN_FALSE_ALARMS)
    cut = benign[len(benign) - 1 - allowed] if allowed < len(benign) else 0.5
    threshold = round(max(0.5, min(0.99, cut + 1e-4)), 4)
    recall = sum(score >= threshold for score in hostile) / len(hostile) if hostile else 0.0
    false_alarms = sum(score >= threshold for score in benign) / len(benign)
    return threshold, recall, false_alarms
