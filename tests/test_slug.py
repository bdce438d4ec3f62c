"""Titles become safe file names inside the vault, whatever the title holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.cli import main
from lore.core.slug import MAX_SLUG_CHARS, slugify, unique_name
from lore.core.vault import Vault
from lore.errors import UsageError

HOSTILE_TITLES = [
    "../../etc/passwd",
    "a/b/c",
    "..",
    ".",
    "nul\x00byte",
    "bell\x07and\x1bescape\r\nnewline",
    "x" * 300,
    "!!!???...",
    "   ",
    "/",
    "\\windows\\path",
    "CON",
    "lpt1",
    "\u202eevil\u200b",
]


@pytest.mark.parametrize("title", HOSTILE_TITLES)
def test_slug_has_no_separator_dot_or_control(title: str) -> None:
    slug = slugify(title)
    assert slug
    assert "/" not in slug and "\\" not in slug and "\x00" not in slug
    assert not slug.startswith(".") and ".." not in slug
    assert all(ch.isprintable() and not ch.isspace() for ch in slug)
    assert len(slug) <= MAX_SLUG_CHARS


def test_slug_is_readable() -> None:
    assert slugify("Great Red Spot") == "great-red-spot"
    assert slugify("Io (moon)") == "io-moon"
    assert slugify("Éris & Ceres") == "éris-ceres"
    assert slugify("木星") == "木星"


def test_only_punctuation_and_reserved_names() -> None:
    assert slugify("?!*") == "untitled"
    assert slugify("") == "untitled"
    assert slugify("con") != "con"
    assert slugify("COM3") != "com3"


def test_long_title_is_cut_without_a_trailing_hyphen() -> None:
    slug = slugify("word " * 100)
    assert len(slug) <= MAX_SLUG_CHARS
    assert not slug.endswith("-")


def test_unique_name_adds_a_suffix() -> None:
    taken = {"mars.md", "mars-2.md"}
    assert unique_name("mars", taken.__contains__) == "mars-3.md"
    assert unique_name("venus", taken.__contains__) == "venus.md"


@pytest.mark.parametrize("title", [*HOSTILE_TITLES[:-3], "Mars"])
def test_hostile_titles_create_notes_inside_notes_folder(vault: Vault, title: str) -> None:
    if not " ".join(title.split()):
        with pytest.raises(UsageError):
            vault.create_note(title)
        return
    note = vault.create_note(title, "body")
    path = (vault.root / note.path).resolve()
    assert path.is_relative_to(vault.layout.notes.resolve())
    assert path.parent == vault.layout.notes.resolve()
    assert path.is_file()


def test_titles_that_slug_alike_get_suffixes(vault: Vault) -> None:
    first = vault.create_note("Mars?", "one")
    second = vault.create_note("Mars!", "two")
    third = vault.create_note("mars...", "three")
    names = {Path(note.path).name for note in (first, second, third)}
    assert names == {"mars.md", "mars-2.md", "mars-3.md"}
    assert vault.find("Mars!").body.strip() == "two"


@pytest.mark.parametrize("folder", ["../x", "../../x", "a/../../x", "a/\x00b", "escape-link"])
def test_folder_outside_the_vault_is_refused(vault: Vault, folder: str) -> None:
    outside = vault.root.parent / "outside"
    outside.mkdir()
    (vault.layout.notes / "escape-link").symlink_to(outside)
    before = sorted(p.relative_to(vault.root.parent) for p in vault.root.parent.rglob("*"))
    with pytest.raises(UsageError):
        vault.create_note("Escape", "x", folder=folder)
    after = sorted(p.relative_to(vault.root.parent) for p in vault.root.parent.rglob("*"))
    assert [p for p in after if p not in before and ".lore" not in p.parts] == []
    assert list(outside.iterdir()) == []


def test_absolute_folder_is_taken_inside_notes(vault: Vault) -> None:
    note = vault.create_note("Rooted", "x", folder="/etc")
    assert note.path == "notes/etc/rooted.md"


def test_folder_outside_via_cli_is_bad_usage(
    vault: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--vault", str(vault.root), "notes", "new", "Escape", "--folder", "../x"])
    assert code == 2
    err = capsys.readouterr().err
    assert "inside the vault" in err and "Traceback" not in err
    assert not (vault.root.parent / "x").exists()


def test_sub_folder_inside_notes_is_allowed(vault: Vault) -> None:
    note = vault.create_note("Titan", "a moon", folder="moons/saturn")
    assert note.path == "notes/moons/saturn/titan.md"
