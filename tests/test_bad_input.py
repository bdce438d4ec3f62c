"""Bad files in a vault get a clear word, stay searchable where they can, and are never lost."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from lore.cli import main
from lore.core.notes import parse_note
from lore.core.vault import Vault

BROKEN = (
    b"---\ntitle: Broken note\ntags: [unclosed\ntrust: trusted\n---\nThe magnetar flared twice.\n"
)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cli(capsys: pytest.CaptureFixture[str], vault: Vault, *argv: str) -> tuple[int, str, str]:
    code = main(["--vault", str(vault.root), *argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def test_broken_front_matter_survives_every_command(
    vault: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = vault.layout.notes / "broken.md"
    broken.write_bytes(BROKEN)
    before = _digest(broken)
    vault.create_note("Neutron star", "See [[Magnetar]].")
    commands = [
        ["notes", "list"],
        ["notes", "list", "--json"],
        ["notes", "show", "notes/broken.md"],
        ["search", "magnetar", "--json"],
        ["notes", "new", "Magnetar", "--body", "A neutron star with a huge field."],
        ["notes", "mv", "Neutron star", "Neutron stars"],
        ["notes", "rm", "Neutron stars"],
        ["doctor", "--fix"],
        ["reindex"],
        ["notes", "edit", "notes/broken.md"],
    ]
    for argv in commands:
        _cli(capsys, vault, *argv)
        assert _digest(broken) == before, argv
    code, out, _ = _cli(capsys, vault, "search", "flared", "--json")
    assert [hit["path"] for hit in json.loads(out)] == ["notes/broken.md"]
    code, out, _ = _cli(capsys, vault, "doctor", "--json")
    assert code == 1
    findings = json.loads(out)["findings"]
    [finding] = [f for f in findings if f["kind"] == "front-matter"]
    assert finding["path"] == "notes/broken.md" and finding["line"] in (3, 4)


def test_invalid_utf8_is_searchable_and_flagged(
    vault: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    (vault.layout.notes / "latin1.md").write_bytes("# Señor\n\nquasar café\n".encode("latin-1"))
    code, out, _ = _cli(capsys, vault, "search", "quasar", "--json")
    assert code == 0 and [hit["path"] for hit in json.loads(out)] == ["notes/latin1.md"]
    code, out, _ = _cli(capsys, vault, "notes", "show", "notes/latin1.md", "--json")
    assert code == 0
    assert any("invalid UTF-8" in problem for problem in json.loads(out)["problems"])


def test_binary_and_huge_files_are_skipped_with_a_warning(
    vault: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    (vault.layout.notes / "photo.md").write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" * 100)
    huge = vault.layout.notes / "dump.md"
    with open(huge, "wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    (vault.layout.notes / "fine.md").write_text("# Fine\n\npulsar\n")
    started = time.perf_counter()
    code, out, err = _cli(capsys, vault, "search", "pulsar", "--json")
    assert time.perf_counter() - started < 10
    assert code == 0 and [hit["title"] for hit in json.loads(out)] == ["Fine"]
    assert "skipped notes/photo.md: binary file" in err
    assert "skipped notes/dump.md: larger than" in err
    # The warning is given once, when the file is first seen, not on every command.
    code, out, err = _cli(capsys, vault, "search", "pulsar")
    assert "skipped" not in err
    code, out, _ = _cli(capsys, vault, "doctor", "--json")
    skipped = {f["path"] for f in json.loads(out)["findings"] if f["kind"] == "skipped"}
    assert skipped == {"notes/photo.md", "notes/dump.md"}
    assert huge.stat().st_size == 50 * 1024 * 1024


def test_alias_bomb_in_front_matter_is_refused_quickly() -> None:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    previous = "a"
    for name in "bcdefgh":
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
        previous = name
    lines.append(f"tags: *{previous}")
    text = "---\n" + "\n".join(lines) + "\n---\nThe body is still here.\n"
    started = time.perf_counter()
    note = parse_note(text, "notes/bomb.md")
    assert time.perf_counter() - started < 1
    assert not note.writable and "aliases" in note.problems[0]
    assert note.problem_line is not None and note.problem_line > 2
    assert "still here" in note.body


def test_strange_files_and_folders_under_notes(vault: Vault) -> None:
    notes = vault.layout.notes
    (notes / "folder.md").mkdir()
    (notes / "folder.md" / "inside.md").write_text("# Inside\n\nnebula\n")
    (notes / "text.txt").write_text("nebula in a text file")
    (notes / "empty.md").write_bytes(b"")
    (notes / "loop").symlink_to(notes, target_is_directory=True)
    (notes / "dangling.md").symlink_to(notes / "nowhere.md")
    (notes / "crlf.md").write_bytes(b"---\r\ntitle: Windows\r\n---\r\nnebula with CRLF\r\n")
    report = vault.reconcile()
    titles = sorted(hit.title for hit in vault.index.search("nebula"))
    assert titles == ["Inside", "Windows"]
    assert "notes/empty.md" in vault.index.indexed_paths()
    assert not any(path.startswith("notes/loop/") for path in report.added)


def test_front_matter_with_wrong_types_is_read_safely(vault: Vault) -> None:
    (vault.layout.notes / "odd.md").write_text(
        "---\ntitle: 42\ntags: {a: 1}\nsources: [7, {title: no uri}]\ncreated: yesterday\n"
        "id: [1, 2]\nstatus: null\n---\nweird types\n"
    )
    note = vault.read_note("notes/odd.md")
    assert note.title == "odd"  # a number is not a title; the file name is used
    assert note.sources == []
    assert any("uri" in problem for problem in note.problems)
    assert [hit.path for hit in vault.index.search("weird")] == ["notes/odd.md"]
