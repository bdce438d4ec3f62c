"""`lore doctor`: what is wrong with a vault, said precisely, and mended only when safe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lore.cli import main
from lore.core.doctor import examine
from lore.core.storage import append_record
from lore.core.vault import Vault


def _kinds(vault: Vault) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for finding in examine(vault).findings:
        found.setdefault(finding.kind, []).append(finding.path)
    return found


def test_sample_vault_is_healthy(sample_vault: Vault) -> None:
    report = examine(sample_vault)
    assert report.ok
    assert report.notes >= 40
    assert [f for f in report.findings if f.kind in {"broken-link", "front-matter"}] == []


def test_broken_front_matter_is_reported_with_its_line(vault: Vault) -> None:
    path = vault.layout.notes / "bad.md"
    raw = b"---\ntitle: Bad\ntags: [x\n---\nbody about nebulae\n"
    path.write_bytes(raw)
    report = examine(vault)
    [finding] = [f for f in report.findings if f.kind == "front-matter"]
    assert finding.path == "notes/bad.md" and finding.line is not None and 3 <= finding.line <= 4
    assert not report.ok
    assert [hit.path for hit in vault.index.search("nebulae")] == ["notes/bad.md"]
    examine(vault, fix=True)
    assert path.read_bytes() == raw


def test_broken_links_and_orphans(vault: Vault) -> None:
    vault.create_note("Hub", "links to [[Spoke]] and [[Missing Note#part|x]]")
    vault.create_note("Spoke", "back to [[hub]]")
    vault.create_note("Lonely", "no links at all")
    kinds = _kinds(vault)
    assert kinds["broken-link"] == ["notes/hub.md"]
    assert kinds["orphan"] == ["notes/lonely.md"]
    report = examine(vault)
    assert report.ok  # links and orphans are advice, not failures
    [broken] = [f for f in report.findings if f.kind == "broken-link"]
    assert "[[Missing Note]]" in broken.message


def test_index_disagreeing_with_disk_is_found_and_fixed(vault: Vault) -> None:
    vault.create_note("Indexed", "x")
    # Simulate an index that lost a note: remove it from whoosh behind the manifest's back.
    vault.index.remove("notes/indexed.md")
    vault.index.manifest.files["notes/indexed.md"] = [0, 0, None]
    assert "index" in _kinds(vault)
    report = examine(vault, fix=True)
    assert any("rebuilt" in line for line in report.fixed)
    assert "index" not in _kinds(vault)
    assert [hit.title for hit in vault.index.search("indexed")] == ["Indexed"]


def test_outside_changes_are_caught_up_and_said(vault: Vault) -> None:
    vault.create_note("Before", "x")
    vault.close()
    (vault.layout.notes / "later.md").write_text("# Later\n")
    reopened = Vault.open(vault.root)
    report = examine(reopened)
    assert any("1 added" in line for line in report.fixed)
    reopened.close()


def test_skipped_and_invalid_utf8_files_are_listed(vault: Vault) -> None:
    (vault.layout.notes / "blob.md").write_bytes(b"\x00binary")
    (vault.layout.notes / "latin.md").write_bytes(b"# Caf\xe9\n")
    findings = examine(vault).findings
    assert any(f.kind == "skipped" and f.path == "notes/blob.md" for f in findings)
    assert any("invalid UTF-8" in f.message and f.path == "notes/latin.md" for f in findings)


def test_torn_history_is_reported(vault: Vault) -> None:
    append_record(vault.layout.history, {"turn": 1})
    with open(vault.layout.history, "ab") as handle:
        handle.write(b'{"turn": 2, "torn')
    [finding] = [f for f in examine(vault).findings if f.kind == "history"]
    assert "2" in finding.message and "torn" in finding.message


def test_doctor_cli_json_and_exit_codes(
    vault: Vault, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    vault.create_note("Fine", "see [[Fine]]")
    assert main(["--vault", str(vault.root), "doctor", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True and data["notes"] == 1
    (vault.layout.notes / "bad.md").write_text("---\n: : :\n---\n")
    assert main(["--vault", str(vault.root), "doctor"]) == 1
    out = capsys.readouterr().out
    assert "notes/bad.md:2" in out
