"""Rebuild the packaged injection detector from the public corpora (`make train-gate`).

Installs the corpora it reads (see `admission_corpora.py`), trains on every allowed family,
and writes `src/lore/core/gates/injection_model.json.gz`. The same corpus versions give the
same bytes: run it twice and compare the printed sha256, or pass `--check` to fail when the
file in the tree differs from what the corpora give.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import admission_corpora as corpora
from gate_training import train_model
from lore.core.gates.detector import MODEL_PATH, InjectionDetector

BENIGN_PER_FAMILY = 800


def build() -> bytes:
    versions = corpora.install()
    hostile = [
        sample.text for family in corpora.HOSTILE_FAMILIES for sample in corpora.hostile(family)
    ]
    # As many texts of each family as the smallest large one, so that emails, FAQs and
    # questions weigh as much as the thousands of manual sections.
    benign = [
        sample.text
        for family in corpora.BENIGN_FAMILIES
        for sample in corpora.benign(family, limit=BENIGN_PER_FAMILY)
    ]
    print(f"training on {len(hostile):,} hostile and {len(benign):,} benign texts", flush=True)
    return train_model(hostile, benign, corpora=versions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=MODEL_PATH, help="where to write the model")
    parser.add_argument(
        "--check", action="store_true", help="only compare with the file at --out, write nothing"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    data = build()
    digest = hashlib.sha256(data).hexdigest()
    detector = InjectionDetector.from_bytes(data)
    training = detector.meta["training"]
    print(f"trained in {time.perf_counter() - started:.1f} s")
    print(f"corpora: {', '.join(f'{k} {v}' for k, v in detector.meta['corpora'].items())}")
    print(
        f"pieces: {training['hostile_pieces']:,} hostile, {training['benign_pieces']:,} benign; "
        f"{training['features']:,} features kept; trained threshold "
        f"{detector.trained_threshold}, used {detector.threshold}"
    )
    print(
        f"held-back pieces: hostile recall {training['calibration_hostile_recall']:.3f}, "
        f"benign false alarms {training['calibration_benign_false_alarms']:.4f}"
    )
    print(f"file sha256 {digest}  ({len(data):,} bytes)")
    if args.check:
        current = args.out.read_bytes() if args.out.exists() else b""
        same = current == data
        print(f"{args.out}: {'identical' if same else 'DIFFERS'}")
        return 0 if same else 1
    args.out.write_bytes(data)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
