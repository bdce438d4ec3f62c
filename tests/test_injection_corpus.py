"""The injection corpus: every hostile case is stopped by the gate it names, and every benign
document (which talks about instructions, prompts, encodings, HTML or AI) is admitted whole."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from lore.config import GateSettings
from lore.core.gates import Claim, GateContext, run_gates
from lore.core.ingest import ingest, ingest_text
from lore.core.quarantine import Quarantine
from lore.core.vault import Vault

CORPUS = Path(__file__).parent / "corpus"
HOSTILE = yaml.safe_load((CORPUS / "hostile.yaml").read_text(encoding="utf-8"))
BENIGN = sorted(path for path in (CORPUS / "benign").iterdir() if path.is_file())
SHA = "0" * 64


def test_corpus_is_large_enough() -> None:
    assert len(HOSTILE) >= 60
    assert len(BENIGN) >= 30
    assert {case["gate"] for case in HOSTILE} <= {"sanitise", "review"}


@pytest.mark.parametrize("case", HOSTILE, ids=[case["id"] for case in HOSTILE])
def test_hostile_case_is_held_by_its_gate(case: dict[str, str]) -> None:
    claim = Claim.make(
        case["text"],
        section="",
        uri=f"corpus:{case['id']}",
        sha256=SHA,
        title=case["id"],
        trust="semi-trusted",
    )
    (verdict,) = run_gates([claim], GateContext(settings=GateSettings()))
    assert verdict.decision == "hold"
    assert verdict.gate == case["gate"], verdict.reasons
    assert verdict.reasons


def test_every_hostile_case_ingested_as_a_document_is_held_and_never_searchable(
    vault: Vault,
) -> None:
    for case in HOSTILE:
        report = ingest_text(
            vault, case["text"], uri=f"corpus:{case['id']}", title=case["id"], trust="semi-trusted"
        )
        (source,) = report.sources
        assert source.admitted == 0 and source.merged == 0, case["id"]
        assert source.held >= 1, case["id"]
    assert list(vault.iter_notes()) == []
    assert Quarantine(vault).count() >= len(HOSTILE)
    for word in ("croissants", "FreeMind", "Wochenmarkt", "tiramisù", "DAN"):
        assert vault.index.search(word, status=None) == []


def test_benign_documents_are_admitted_with_nothing_held(vault: Vault) -> None:
    report = ingest(vault, [str(path) for path in BENIGN])
    wrongly_held = [(source.target, source.reasons) for source in report.sources if source.held]
    assert wrongly_held == []
    assert all(source.outcome == "admitted" for source in report.sources)
    assert Quarantine(vault).count() == 0


def test_sample_documents_named_hostile_are_held_and_benign_ones_admitted(vault: Vault) -> None:
    docs = Path(__file__).resolve().parents[1] / "samples" / "docs"
    files = sorted(docs.glob("*")) if docs.is_dir() else []
    for path in files:
        report = ingest(vault, [str(path)])
        (source,) = report.sources
        if path.name.startswith("hostile-"):
            assert source.held >= 1, path.name
        elif path.name.startswith("benign-"):
            assert source.held == 0 and source.outcome in ("admitted", "merged"), (
                path.name,
                source.reasons,
            )
