"""The notes command line end to end: Rich output, --json that parses, and exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lore.cli import main
from lore.core import vault as vault_module
from lore.core.vault import Vault, init_vault


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def root(tmp_path: Path) -> str:
    return str(init_vault(tmp_path / "vault", "CLI"))


def test_init_then_new_list_show(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "fresh"
    code, out, _ = run(capsys, "init", str(target), "--name", "Fresh")
    assert code == 0 and "Vault ready" in out
    assert (target / "lore.yaml").is_file() and (target / "notes").is_dir()
    created = run_json(
        capsys,
        "--vault",
        str(target),
        "notes",
        "new",
        "Titan",
        "--tag",
        "Moon",
        "--body",
        "Thick air.",
    )
    assert isinstance(created, dict) and created["path"] == "notes/titan.md"
    assert created["tags"] == ["moon"]
    listed = run_json(capsys, "--vault", str(target), "notes", "list")
    assert [item["title"] for item in listed] == ["Titan"]  # type: ignore[index]
    shown = run_json(capsys, "--vault", str(target), "notes", "show", "titan")
    assert shown["body"].strip() == "Thick air." and shown["id"] == created["id"]  # type: ignore[index]
    code, out, _ = run(capsys, "--vault", str(target), "notes", "show", "Titan")
    assert code == 0 and "Thick air." in out and "moon" in out


def test_list_filters_by_tag_in_rich_and_json(
    capsys: pytest.CaptureFixture[str], root: str
) -> None:
    for title, tag in (("Io", "moon"), ("Mars", "planet"), ("Europa", "moon")):
        assert run(capsys, "--vault", root, "notes", "new", title, "--tag", tag)[0] == 0
    items = run_json(capsys, "--vault", root, "notes", "list", "--tag", "#MOON")
    assert [item["title"] for item in items] == ["Europa", "Io"]  # type: ignore[index]
    code, out, _ = run(capsys, "--vault", root, "notes", "list", "--tag", "moon")
    assert code == 0 and "Europa" in out and "Mars" not in out and "2 notes" in out


def test_a_long_list_shows_its_first_notes_and_says_how_to_see_the_rest(
    capsys: pytest.CaptureFixture[str], root: str
) -> None:
    for title in ("Io", "Mars", "Europa", "Titan", "Ceres"):
        assert run(capsys, "--vault", root, "notes", "new", title)[0] == 0
    code, out, _ = run(capsys, "--vault", root, "notes", "list", "--limit", "2")
    assert code == 0 and "5 notes" in out and "the first 2 of 5" in out and "--all" in out
    assert "Ceres" in out and "Europa" in out and "Io" not in out and "Titan" not in out
    code, out, _ = run(capsys, "--vault", root, "notes", "list", "--limit", "2", "--all")
    assert code == 0 and all(title in out for title in ("Io", "Mars", "Titan"))
    assert "the first" not in out
    # Scripts get every note whatever the table shows.
    items = run_json(capsys, "--vault", root, "notes", "list", "--limit", "2")
    assert len(items) == 5  # type: ignore[arg-type]
    with pytest.raises(SystemExit) as refused:
        main(["--vault", root, "notes", "list", "--limit", "0"])
    assert refused.value.code == 2 and "expected a number above 0" in capsys.readouterr().err


def test_the_list_shows_the_day_each_note_changed_on_one_line(
    capsys: pytest.CaptureFixture[str], root: str
) -> None:
    assert run(capsys, "--vault", root, "notes", "new", "Io")[0] == 0
    note = next(Path(root, "notes").rglob("*.md"))
    text = note.read_text(encoding="utf-8")
    stamped = re.sub(r"(?m)^updated: .*$", "updated: '2026-11-19T08:30:00Z'", text)
    note.write_text(stamped, encoding="utf-8")
    assert run(capsys, "--vault", root, "notes", "new", "Mars")[0] == 0
    note = next(path for path in Path(root, "notes").rglob("*.md") if "mars" in path.name)
    text = note.read_text(encoding="utf-8")
    note.write_text(re.sub(r"(?m)^updated: .*$", "updated: last spring", text), encoding="utf-8")
    code, out, _ = run(capsys, "--vault", root, "notes", "list")
    assert code == 0
    assert "2026-11-19 " in out and "T08" not in out
    # Not a time Lore wrote: shown as it is.
    assert "last spring" in out
    # The full time is still there for scripts.
    items = run_json(capsys, "--vault", root, "notes", "list")
    assert "2026-11-19T08:30:00Z" in [item["updated"] for item in items]  # type: ignore[index]


def test_new_reads_the_body_from_stdin(
    capsys: pytest.CaptureFixture[str], root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("From a pipe, about [[Io]].\n"))
    assert run(capsys, "--vault", root, "notes", "new", "Piped", "--body", "-")[0] == 0
    shown = run_json(capsys, "--vault", root, "notes", "show", "Piped")
    assert shown["body"] == "From a pipe, about [[Io]].\n"  # type: ignore[index]


def test_search_rich_and_json(capsys: pytest.CaptureFixture[str], sample_vault: Vault) -> None:
    root = str(sample_vault.root)
    hits = run_json(capsys, "--vault", root, "search", "great", "red", "spot", "--limit", "3")
    assert isinstance(hits, list) and 1 <= len(hits) <= 3
    assert "Jupiter" in [hit["title"] for hit in hits]
    assert all({"path", "id", "title", "score", "snippet", "tags"} <= set(hit) for hit in hits)
    code, out, _ = run(capsys, "--vault", root, "search", "tag:moon")
    assert code == 0 and "hits for" in out
    code, out, _ = run(capsys, "--vault", root, "search", "great", "red", "spot", "--limit", "3")
    lines = out.splitlines()
    # A numbered list: each hit's title and score on a line, its snippet indented below.
    heading = next(number for number, line in enumerate(lines) if line.startswith("1. "))
    title, score = lines[heading].removeprefix("1. ").rsplit("  ", 1)
    assert title == hits[0]["title"] and float(score) == pytest.approx(hits[0]["score"], abs=0.01)
    snippet = lines[heading + 1]
    assert snippet.startswith("   ") and snippet.split()[1] in str(hits[0]["snippet"])
    code, out, _ = run(capsys, "--vault", root, "search", "zzzxqj")
    assert code == 0 and "No notes match" in out
    assert run_json(capsys, "--vault", root, "search", "zzzxqj") == []


def test_search_bad_limit_is_bad_usage(capsys: pytest.CaptureFixture[str], root: str) -> None:
    code, _, err = run(capsys, "--vault", root, "search", "x", "--limit", "0")
    assert code == 2 and "--limit" in err


def test_mv_rewrites_links_and_reports(capsys: pytest.CaptureFixture[str], root: str) -> None:
    run(capsys, "--vault", root, "notes", "new", "Red Planet", "--body", "red")
    run(
        capsys,
        "--vault",
        root,
        "notes",
        "new",
        "Log",
        "--body",
        "[[Red Planet|it]] [[Red Planet#a]]",
    )
    result = run_json(capsys, "--vault", root, "notes", "mv", "Red Planet", "Mars")
    assert result["note"]["title"] == "Mars"  # type: ignore[index]
    assert result["relinked"] == {"notes/log.md": 2}  # type: ignore[index]
    shown = run_json(capsys, "--vault", root, "notes", "show", "Log")
    assert shown["body"].strip() == "[[Mars|it]] [[Mars#a]]"  # type: ignore[index]
    code, out, _ = run(capsys, "--vault", root, "notes", "mv", "Mars", "Ares")
    assert code == 0 and "rewrote 2 link(s) in notes/log.md" in out


def test_rm_keeps_a_tombstone_and_names_linkers(
    capsys: pytest.CaptureFixture[str], root: str
) -> None:
    run(capsys, "--vault", root, "notes", "new", "Pluto", "--body", "dwarf")
    run(capsys, "--vault", root, "notes", "new", "Belt", "--body", "has [[Pluto]]")
    code, out, _ = run(capsys, "--vault", root, "notes", "rm", "Pluto")
    assert code == 0 and "trash/" in out and "notes/belt.md" in out
    assert list((Path(root) / "trash").iterdir())
    code, _, err = run(capsys, "--vault", root, "notes", "show", "Pluto")
    assert code == 1 and "no note titled 'Pluto'" in err


def test_rm_json(capsys: pytest.CaptureFixture[str], root: str) -> None:
    run(capsys, "--vault", root, "notes", "new", "Gone", "--body", "x")
    result = run_json(capsys, "--vault", root, "notes", "rm", "Gone")
    assert result["tombstone"].startswith("trash/")  # type: ignore[index]
    assert result["linked_from"] == []  # type: ignore[index]


def test_edit_runs_the_editor_and_reindexes(
    capsys: pytest.CaptureFixture[str], root: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    run(capsys, "--vault", root, "notes", "new", "Draft", "--body", "first words")
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nsleep 0.01\nprintf "\\nappended aurora\\n" >> "$1"\n')
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    code, out, _ = run(capsys, "--vault", root, "notes", "edit", "Draft")
    assert code == 0 and "reindexed" in out
    hits = run_json(capsys, "--vault", root, "search", "aurora")
    assert [hit["title"] for hit in hits] == ["Draft"]  # type: ignore[index]


def test_edit_with_a_missing_editor_is_one_line(
    capsys: pytest.CaptureFixture[str], root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(capsys, "--vault", root, "notes", "new", "Draft")
    monkeypatch.setenv("EDITOR", "no-such-editor-anywhere --wait")
    code, _, err = run(capsys, "--vault", root, "notes", "edit", "Draft")
    assert code == 2 and "no-such-editor-anywhere" in err
    monkeypatch.setenv("EDITOR", "false")
    code, _, err = run(capsys, "--vault", root, "notes", "edit", "Draft")
    assert code == 1 and "status 1" in err


def test_reindex_and_summary(capsys: pytest.CaptureFixture[str], sample_vault: Vault) -> None:
    root = str(sample_vault.root)
    code, out, _ = run(capsys, "--vault", root, "reindex")
    assert code == 0 and "Indexed" in out
    code, out, _ = run(capsys, "--vault", root)
    assert code == 0
    assert "Solar System" in out or sample_vault.name in out
    assert "Notes" in out and "Tags" in out and "lore search" in out


def test_bad_usage_exits_2(capsys: pytest.CaptureFixture[str], root: str) -> None:
    for argv in (["notes"], ["notes", "frobnicate"], ["search"], ["locate", "nowhere"], ["--nope"]):
        with pytest.raises(SystemExit) as caught:
            main(["--vault", root, *argv])
        assert caught.value.code == 2
        capsys.readouterr()
    code, _, err = run(capsys, "--vault", root, "notes", "new", "   ")
    assert code == 2 and "title" in err


def test_failures_exit_1_with_one_line(capsys: pytest.CaptureFixture[str], root: str) -> None:
    run(capsys, "--vault", root, "notes", "new", "Twin")
    code, _, err = run(capsys, "--vault", root, "notes", "new", "twin")
    assert code == 1 and len(err.strip().splitlines()) == 1 and "already exists" in err
    code, _, err = run(capsys, "--vault", root, "notes", "mv", "Nothing", "Else")
    assert code == 1 and len(err.strip().splitlines()) == 1


def test_missing_vault_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "no" / "vault"
    for argv in (["notes", "list"], ["search", "x"], ["doctor"], ["notes", "new", "X"]):
        code, _, err = run(capsys, "--vault", str(missing), *argv)
        assert code == 1
        assert len(err.strip().splitlines()) == 1 and "no vault at" in err and "lore init" in err
    assert not missing.exists()


def _deny_writes_inside(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """Make the vault read-only in the way Lore checks it.

    Tests run as root in CI containers, and root writes through chmod 0o555; so the check
    Lore relies on, os.access(W_OK), is made to answer as it would for an ordinary user.
    """
    real_access = os.access

    def access(path: object, mode: int, *args: object, **kwargs: object) -> bool:
        inside = Path(str(path)).resolve().is_relative_to(root)
        if inside and mode & os.W_OK:
            return False
        return real_access(path, mode, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(vault_module.os, "access", access)


def test_read_only_vault_is_one_line_and_changes_nothing(
    capsys: pytest.CaptureFixture[str], root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(capsys, "--vault", root, "notes", "new", "Kept", "--body", "stays", "--tag", "x")
    run(capsys, "--vault", root, "notes", "new", "Other", "--body", "[[Kept]]")
    vault_root = Path(root).resolve()

    def snapshot() -> dict[str, bytes]:
        return {
            str(path.relative_to(vault_root)): path.read_bytes()
            for path in sorted(vault_root.rglob("*"))
            if path.is_file() and ".lore" not in path.parts
        }

    before = snapshot()
    is_root = os.geteuid() == 0
    if is_root:
        _deny_writes_inside(monkeypatch, vault_root)
    else:
        os.chmod(vault_root, 0o555)
    try:
        for argv in (
            ["notes", "new", "Blocked"],
            ["notes", "mv", "Kept", "Moved"],
            ["notes", "rm", "Kept"],
        ):
            code, _, err = run(capsys, "--vault", root, *argv)
            assert code == 1, argv
            assert len(err.strip().splitlines()) == 1 and "read-only" in err
        # Reading still works.
        hits = run_json(capsys, "--vault", root, "search", "stays")
        assert [hit["title"] for hit in hits] == ["Kept"]  # type: ignore[index]
    finally:
        if not is_root:
            os.chmod(vault_root, 0o755)
    assert snapshot() == before


def test_python_dash_m_lore_works(tmp_path: Path) -> None:
    root = init_vault(tmp_path / "v")
    env = {**os.environ, "LORE_VAULT": str(root)}
    made = subprocess.run(
        [sys.executable, "-m", "lore", "notes", "new", "Sub", "--body", "process words", "--json"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["title"] == "Sub"
    found = subprocess.run(
        [sys.executable, "-m", "lore", "search", "process", "--json"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert [hit["title"] for hit in json.loads(found.stdout)] == ["Sub"]
    usage = subprocess.run(
        [sys.executable, "-m", "lore", "notes", "bogus"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert usage.returncode == 2 and "Traceback" not in usage.stderr
