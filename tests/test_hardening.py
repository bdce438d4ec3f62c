"""Hardening: files Lore must not corrupt, hang on or leak, and commands that work on a bad disk."""

from __future__ import annotations

from lore.core.links import link_targets, rewrite_links
from lore.core.vault import Vault

# -- renaming rewrites only link bytes ----------------------------------------------------------


def test_rename_keeps_a_latin1_linker_in_latin1_and_trashes_its_original(vault: Vault) -> None:
    vault.create_note("Red Planet", "red")
    linker = vault.layout.notes / "cafe.md"
    original = "# Café\n\nÉté, crème brûlée, and [[Red Planet]].\n".encode("latin-1")
    linker.write_bytes(original)
    vault.reconcile()
    result = vault.rename_note("Red Planet", "Mars")
    assert result.relinked == {"notes/cafe.md": 1}
    data = linker.read_bytes()
    assert data == "# Café\n\nÉté, crème brûlée, and [[Mars]].\n".encode("latin-1")
    assert "\ufffd".encode() not in data
    trashed = {path.read_bytes() for path in vault.layout.trash.iterdir()}
    assert original in trashed


def test_rename_keeps_front_matter_comments_of_a_linker_byte_for_byte(vault: Vault) -> None:
    vault.create_note("Red Planet", "red")
    linker = vault.layout.notes / "journal.md"
    front = "---\n# my own comment\ntitle: Journal  # inline comment\ntags: [a, b]\n---\n"
    linker.write_text(front + "Saw [[Red Planet|it]] tonight.\n")
    vault.reconcile()
    vault.rename_note("Red Planet", "Mars")
    assert linker.read_text() == front + "Saw [[Mars|it]] tonight.\n"


def test_rename_leaves_links_in_code_spans_and_fences_alone(vault: Vault) -> None:
    vault.create_note("Red Planet", "red")
    body = (
        "Real [[Red Planet]]; code `[[Red Planet]]` and ``a ` [[Red Planet]]``.\n\n"
        "```markdown\n[[Red Planet]]\n```\n\n~~~\n[[Red Planet]]\n~~~\nAfter [[Red Planet]].\n"
    )
    linker = vault.create_note("Docs", body)
    result = vault.rename_note("Red Planet", "Mars")
    assert result.relinked == {linker.path: 2}
    assert vault.find("Docs").body == body.replace("Real [[Red Planet]]", "Real [[Mars]]").replace(
        "After [[Red Planet]]", "After [[Mars]]"
    )


def test_links_in_code_are_not_links() -> None:
    assert link_targets("`[[A]]` [[B]]\n```\n[[C]]\n```\n") == ["B"]
    assert rewrite_links("`[[A]]` [[A]]", "A", "Z") == ("`[[A]]` [[Z]]", 1)


def test_rename_trashes_the_renamed_notes_own_original(vault: Vault) -> None:
    note = vault.create_note("Red Planet", "red")
    original = (vault.root / note.path).read_bytes()
    vault.rename_note("Red Planet", "Mars")
    assert original in {path.read_bytes() for path in vault.layout.trash.iterdir()}
