"""Reading notes leniently: hand-written files, broken front matter, odd bytes, huge files."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from lore.core.notes import Note, Source, parse_note, render_note
from lore.core.vault import Vault

GOOD = """---
id: n1
title: Europa
tags: [moon, ocean-world]
created: 2026-01-02T03:04:05Z
updated: 2026-01-03
sources:
  - uri: https://example.org/europa
    sha256: abc
    title: Europa facts
  - https://example.org/plain
trust: trusted
status: active
colour: blue
---
# Europa

An icy moon of [[Jupiter]].
"""


def test_front_matter_fields() -> None:
    note = parse_note(GOOD, "notes/europa.md")
    assert note.id == "n1" and note.title == "Europa"
    assert note.tags == ["moon", "ocean-world"]
    assert note.created == "2026-01-02T03:04:05Z"
    assert note.updated == "2026-01-03T00:00:00Z"
    assert note.sources == [
        Source("https://example.org/europa", "abc", "Europa facts"),
        Source("https://example.org/plain"),
    ]
    assert note.trust == "trusted" and note.status == "active"
    assert note.extra == {"colour": "blue"}
    assert note.body.startswith("# Europa\n")
    assert note.problems == [] and note.writable


def test_render_then_parse_round_trips() -> None:
    note = parse_note(GOOD, "notes/europa.md")
    again = parse_note(render_note(note), "notes/europa.md")
    for name in (
        "id",
        "title",
        "tags",
        "created",
        "updated",
        "sources",
        "trust",
        "status",
        "extra",
        "body",
    ):
        assert getattr(again, name) == getattr(note, name), name


def test_no_front_matter_takes_title_from_first_heading() -> None:
    note = parse_note("Some intro.\n\n# Io  \n\nVolcanoes.\n## Later\n", "notes/x/io-file.md")
    assert note.title == "Io"
    assert not note.has_front_matter and note.writable and note.problems == []
    assert note.id.startswith("h")
    assert note.id == parse_note("other text", "notes/x/io-file.md").id


def test_no_front_matter_and_no_heading_takes_title_from_file_name() -> None:
    note = parse_note("just words\n", "notes/deep/space_weather-report.md")
    assert note.title == "space weather report"


def test_malformed_yaml_reports_the_file_line() -> None:
    text = "---\nid: n2\ntitle: Broken\ntags: [a, b\ntrust: trusted\n---\nBody words here.\n"
    note = parse_note(text, "notes/broken.md")
    assert not note.writable
    assert note.problem_line is not None
    # The file's line of the bad YAML (tags opens a list that trust: cannot continue).
    lines = text.splitlines()
    assert 4 <= note.problem_line <= 6, lines[note.problem_line - 1]
    assert any("not valid YAML" in problem for problem in note.problems)
    assert "Body words here." in note.body


def test_malformed_yaml_line_points_at_the_bad_line() -> None:
    text = "---\ntitle: Fine\ntags: [a]\nbad: : : \n---\nbody\n"
    note = parse_note(text, "notes/b.md")
    assert note.problem_line == 4


def test_unclosed_front_matter_is_body_and_flagged() -> None:
    note = parse_note("---\ntitle: Never closed\n\nwords about Titan\n", "notes/open.md")
    assert not note.writable and note.problem_line == 1
    assert "never closed" in note.problems[0]
    assert "words about Titan" in note.body


def test_front_matter_that_is_not_a_mapping() -> None:
    note = parse_note("---\n- a\n- b\n---\n# Listed\n", "notes/list.md")
    assert not note.writable
    assert note.title == "Listed"
    assert "not a mapping" in note.problems[0]


def test_empty_front_matter_is_fine() -> None:
    note = parse_note("---\n---\n# Empty\n", "notes/empty.md")
    assert note.writable and note.title == "Empty" and note.problems == []


def test_invalid_trust_and_status_are_flagged_and_made_safe() -> None:
    note = parse_note("---\ntitle: T\ntrust: gospel\nstatus: zombie\n---\nx\n", "notes/t.md")
    assert note.trust == "untrusted"
    assert note.status == "active"
    assert any("trust" in problem for problem in note.problems)
    assert any("status" in problem for problem in note.problems)


def test_crlf_front_matter() -> None:
    note = parse_note("---\r\ntitle: Windows\r\ntags: [a]\r\n---\r\nbody\r\n", "notes/w.md")
    assert note.title == "Windows" and note.tags == ["a"] and note.writable


def test_tags_as_a_string_and_with_hashes() -> None:
    note = parse_note("---\ntitle: T\ntags: '#Moon, ice  Giant'\n---\n", "notes/t.md")
    assert note.tags == ["moon", "ice", "giant"]


def test_render_of_a_hand_written_note_adds_no_front_matter() -> None:
    text = "# Hand written\n\nMy own words, [[Mars]].\n"
    note = parse_note(text, "notes/hand.md")
    assert render_note(note) == text
    note.body = note.body.replace("[[Mars]]", "[[Red Planet]]")
    assert render_note(note) == "# Hand written\n\nMy own words, [[Red Planet]].\n"


def test_render_of_an_empty_mapping_keeps_front_matter() -> None:
    note = Note(path="notes/n.md", id="x", title="New", body="text")
    rendered = render_note(note)
    assert rendered.startswith("---\nid: x\ntitle: New\n") and rendered.endswith("---\ntext\n")


# -- bytes on disk ---------------------------------------------------------------------------


def _put(vault: Vault, name: str, data: bytes) -> str:
    path = vault.layout.notes / name
    path.write_bytes(data)
    return f"notes/{name}"


def test_invalid_utf8_is_read_with_replacement_and_flagged(vault: Vault) -> None:
    relpath = _put(vault, "latin.md", "# Caf\xe9 notes\n\nna\xefve body\n".encode("latin-1"))
    note = vault.read_note(relpath)
    assert "\ufffd" in note.title + note.body
    assert "naive" not in note.body and "body" in note.body
    assert any("invalid UTF-8" in problem for problem in note.problems)


def test_byte_order_mark_is_ignored(vault: Vault) -> None:
    relpath = _put(vault, "bom.md", "\ufeff---\ntitle: Bom\n---\nbody\n".encode())
    note = vault.read_note(relpath)
    assert note.title == "Bom" and note.has_front_matter and note.problems == []


def test_binary_file_is_skipped(vault: Vault) -> None:
    relpath = _put(vault, "image.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    note, reason = vault.load_note(relpath)
    assert note is None and reason == "binary file"


def test_oversize_file_is_skipped_without_being_read(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = vault.layout.notes / "huge.md"
    with open(path, "wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # sparse: instant, no real 50 MB written
    assert path.stat().st_size > vault.config.vault.max_note_bytes
    opened: list[object] = []
    real_open = open

    def watching_open(file: object, *args: object, **kwargs: object) -> object:
        opened.append(file)
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.open", watching_open)
    started = time.perf_counter()
    note, reason = vault.load_note("notes/huge.md")
    assert note is None and "larger than" in (reason or "")
    assert str(path) not in [str(item) for item in opened]
    assert time.perf_counter() - started < 0.5


def test_max_note_bytes_comes_from_config(vault: Vault) -> None:
    vault.config.vault.max_note_bytes = 100
    relpath = _put(vault, "medium.md", b"# Medium\n" + b"words " * 50)
    note, reason = vault.load_note(relpath)
    assert note is None and "larger than 100 bytes" in (reason or "")


def test_file_that_vanished_is_skipped(vault: Vault) -> None:
    note, reason = vault.load_note("notes/never-there.md")
    assert note is None and "cannot be read" in (reason or "")


def test_unreadable_permissions_are_skipped(vault: Vault) -> None:
    relpath = _put(vault, "secret.md", b"# Secret\n")
    os.chmod(vault.root / relpath, 0)
    try:
        note, reason = vault.load_note(relpath)
        if os.geteuid() != 0:  # root reads anything
            assert note is None and "cannot be read" in (reason or "")
    finally:
        os.chmod(vault.root / relpath, 0o644)


def test_reading_a_note_never_changes_the_file(vault: Vault, tmp_path: Path) -> None:
    raw = b"---\ntitle: [unclosed\n---\n\xff body\n"
    relpath = _put(vault, "raw.md", raw)
    vault.read_note(relpath)
    assert (vault.root / relpath).read_bytes() == raw
