"""The vault: creating, saving, renaming and removing notes, and finding the vault itself."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lore.config import load_config
from lore.core.vault import Vault, init_vault
from lore.errors import (
    AmbiguousNote,
    NoteExists,
    NoteNotFound,
    UsageError,
    VaultError,
    VaultNotFound,
)
from lore.paths import discover_vault, user_dirs


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_create_writes_front_matter_and_finds_by_title_id_and_path(vault: Vault) -> None:
    note = vault.create_note("  Great   Red Spot ", "A storm.", tags=["Storm", "#Jupiter", " "])
    assert note.title == "Great Red Spot"
    assert note.tags == ["jupiter", "storm"]
    text = (vault.root / note.path).read_text()
    assert text.startswith("---\nid: ") and "title: Great Red Spot" in text
    assert note.created and note.created.endswith("Z") and note.created == note.updated
    for ref in ("great red spot", note.id, note.path):
        assert vault.find(ref).id == note.id


def test_duplicate_title_is_refused(vault: Vault) -> None:
    vault.create_note("Io", "one")
    with pytest.raises(NoteExists):
        vault.create_note("io", "two")
    with pytest.raises(UsageError):
        vault.create_note("   ")


def test_find_unknown_and_ambiguous(vault: Vault) -> None:
    with pytest.raises(NoteNotFound):
        vault.find("Nothing here")
    (vault.layout.notes / "a.md").write_text("# Twin\n")
    (vault.layout.notes / "b.md").write_text("# Twin\n")
    vault.reconcile()
    with pytest.raises(AmbiguousNote, match=r"notes/a\.md, notes/b\.md"):
        vault.find("Twin")
    assert vault.find("notes/b.md").path == "notes/b.md"


def test_ids_are_never_reused(vault: Vault) -> None:
    ids = set()
    for number in range(30):
        note = vault.create_note(f"N {number}")
        ids.add(note.id)
        vault.remove_note(note.id)
    assert len(ids) == 30


def test_save_updates_the_time_and_keeps_unknown_keys(vault: Vault) -> None:
    path = vault.layout.notes / "custom.md"
    path.write_text(
        "---\nid: keep-me\ntitle: Custom\ncolour: blue\ncreated: 2020-01-01\n---\nold\n"
    )
    note = vault.find("Custom")
    note.body = "new\n"
    vault.save(note)
    text = path.read_text()
    assert "colour: blue" in text and "id: keep-me" in text and "new" in text
    again = vault.find("keep-me")
    assert again.created == "2020-01-01T00:00:00Z"
    assert again.updated and again.updated > "2020"


def test_rename_rewrites_every_link_form(vault: Vault) -> None:
    vault.create_note("Red Planet", "The fourth planet.")
    linker = vault.create_note(
        "Missions",
        "Went to [[Red Planet]], [[red planet|Mars]], [[Red Planet#Moons]], "
        "[[Red Planet#Moons|its moons]]; not [[Red Planets]].",
    )
    untouched = vault.create_note("Venus", "No links here to the Red Planet.")
    before = _digest(vault.root / untouched.path)
    result = vault.rename_note("Red Planet", "Mars")
    assert result.note.title == "Mars"
    assert result.note.path == "notes/mars.md"
    assert not (vault.layout.notes / "red-planet.md").exists()
    assert result.relinked == {linker.path: 4}
    body = vault.find("Missions").body
    assert body == (
        "Went to [[Mars]], [[Mars|Mars]], [[Mars#Moons]], [[Mars#Moons|its moons]]; "
        "not [[Red Planets]].\n"
    )
    assert _digest(vault.root / untouched.path) == before
    assert vault.find("Mars").body.strip() == "The fourth planet."
    assert vault.backlinks("Mars") == [linker.path]
    assert vault.backlinks("Red Planet") == []


def test_rename_keeps_the_id_and_refuses_a_taken_title(vault: Vault) -> None:
    note = vault.create_note("Phobos")
    vault.create_note("Deimos")
    with pytest.raises(NoteExists):
        vault.rename_note("Phobos", "deimos")
    renamed = vault.rename_note("Phobos", "Phobos (moon)")
    assert renamed.note.id == note.id
    # A change of case only keeps the same file.
    same = vault.rename_note("Phobos (moon)", "PHOBOS (moon)")
    assert same.note.path == renamed.note.path and (vault.root / same.note.path).exists()


def test_rename_of_a_self_linking_note(vault: Vault) -> None:
    vault.create_note("Loop", "See [[Loop]] again.")
    result = vault.rename_note("Loop", "Circle")
    assert vault.find("Circle").body.strip() == "See [[Circle]] again."
    assert result.relinked == {"notes/circle.md": 1}


def test_hand_written_linker_keeps_having_no_front_matter(vault: Vault) -> None:
    vault.create_note("Red Planet", "red")
    hand = vault.layout.notes / "journal.md"
    hand.write_text("# My journal\n\nTonight I saw [[Red Planet]].\n")
    vault.reconcile()
    vault.rename_note("Red Planet", "Mars")
    assert hand.read_text() == "# My journal\n\nTonight I saw [[Mars]].\n"
    assert vault.find("My journal").body.endswith("[[Mars]].\n")


def test_renaming_a_hand_written_note_gives_it_front_matter_with_its_id(vault: Vault) -> None:
    hand = vault.layout.notes / "jotting.md"
    hand.write_text("Some thoughts about Ceres.\n")
    vault.reconcile()
    old = vault.find("jotting")
    result = vault.rename_note("jotting", "Ceres thoughts")
    text = (vault.root / result.note.path).read_text()
    assert text.startswith("---\n") and "title: Ceres thoughts" in text
    assert vault.find("Ceres thoughts").id == old.id


def test_malformed_front_matter_is_never_rewritten(vault: Vault) -> None:
    vault.create_note("Target", "x")
    broken = vault.layout.notes / "broken.md"
    broken.write_bytes(
        b"---\ntitle: [Broken\ntags: a\n---\nLinks to [[Target]] and talks of quasars.\n"
    )
    before = _digest(broken)
    vault.reconcile()
    note = vault.read_note("notes/broken.md")
    with pytest.raises(VaultError, match="broken front matter"):
        vault.save(note)
    with pytest.raises(VaultError, match="broken front matter"):
        vault.rename_note("notes/broken.md", "Fixed")
    vault.rename_note("Target", "Goal")
    assert [hit.path for hit in vault.index.search("quasars")] == ["notes/broken.md"]
    vault.reindex()
    assert _digest(broken) == before


def test_remove_keeps_a_tombstone_and_reports_backlinks(vault: Vault) -> None:
    doomed = vault.create_note("Pluto", "a dwarf planet")
    text = (vault.root / doomed.path).read_text()
    linker = vault.create_note("Kuiper Belt", "home of [[Pluto|the ninth]]")
    vault.create_note("Eris", "mentions Pluto without a link")
    result = vault.remove_note("Pluto")
    assert not (vault.root / doomed.path).exists()
    assert result.tombstone.parent == vault.layout.trash
    assert result.tombstone.read_text() == text
    assert result.linked_from == [linker.path]
    with pytest.raises(NoteNotFound):
        vault.find("Pluto")
    # A second note of the same name removed later does not overwrite the first tombstone.
    vault.create_note("Pluto", "again")
    second = vault.remove_note("Pluto")
    assert second.tombstone != result.tombstone
    assert result.tombstone.read_text() == text


def test_remove_of_a_note_with_invalid_utf8_keeps_its_bytes(vault: Vault) -> None:
    raw = b"# Caf\xe9\n\nbytes the user wrote \xff\n"
    (vault.layout.notes / "latin.md").write_bytes(raw)
    vault.reconcile()
    result = vault.remove_note("notes/latin.md")
    assert result.tombstone.read_bytes() == raw


# -- finding and making the vault --------------------------------------------------------------


def test_discovery_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = tmp_path / "explicit"
    from_env = tmp_path / "env"
    ancestor = init_vault(tmp_path / "ancestor")
    deep = ancestor / "notes" / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    monkeypatch.setenv("LORE_VAULT", str(from_env))
    assert discover_vault(str(explicit)) == (explicit.resolve(), "--vault")
    assert discover_vault(None)[0] == from_env.resolve()
    monkeypatch.delenv("LORE_VAULT")
    assert discover_vault(None)[0] == ancestor
    monkeypatch.chdir(tmp_path)
    root, reason = discover_vault(None)
    assert root == user_dirs().default_vault and reason == "default vault"


def test_default_vault_is_created_on_first_use(tmp_path: Path) -> None:
    from lore.cli import main

    assert not user_dirs().default_vault.exists()
    assert main(["notes", "new", "First", "--body", "hello"]) == 0
    default = user_dirs().default_vault
    assert (default / "lore.yaml").is_file()
    assert (default / "notes" / "first.md").is_file()


def test_opening_a_missing_vault_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(VaultNotFound, match="lore init"):
        Vault.open(tmp_path / "nowhere")
    (tmp_path / "file").write_text("x")
    with pytest.raises(VaultNotFound, match="not a folder"):
        Vault.open(tmp_path / "file")


def test_init_writes_a_valid_commented_config_and_keeps_an_existing_one(tmp_path: Path) -> None:
    root = init_vault(tmp_path / "v", 'Odd "name": with #')
    text = (root / "lore.yaml").read_text()
    assert text.count("#") > 5
    config = load_config(root / "lore.yaml")
    assert config.vault.name == 'Odd "name": with #'
    assert (root / ".gitignore").read_text().strip().endswith(".lore/")
    (root / "lore.yaml").write_text("vault:\n  name: mine\n")
    init_vault(root, "other")
    assert load_config(root / "lore.yaml").vault.name == "mine"


def test_grievable_data_and_derived_state_are_apart(vault: Vault) -> None:
    vault.create_note("Anything", "x")
    layout = vault.layout
    derived = [layout.index, layout.lock]
    assert all(path.is_relative_to(layout.state) for path in derived)
    kept = [layout.notes, layout.history, layout.audit, layout.quarantine, layout.raw, layout.trash]
    assert not any(path.is_relative_to(layout.state) for path in kept)


@pytest.mark.parametrize(
    "title", ["C++", "A", "it", 'The "Best" Moon', "Io (moon)", "2001: A Space"]
)
def test_rename_and_remove_find_links_to_titles_search_cannot_index(
    vault: Vault, title: str
) -> None:
    vault.create_note(title, "x")
    linker = vault.create_note("Linker", f"see [[{title}]] and [[{title}|that]]")
    assert vault.backlinks(title) == [linker.path]
    result = vault.rename_note(title, "Renamed")
    assert result.relinked == {linker.path: 2}
    assert vault.find("Linker").body.strip() == "see [[Renamed]] and [[Renamed|that]]"
    assert vault.remove_note("Renamed").linked_from == [linker.path]


def test_threads_asking_for_the_index_at_once_share_one(tmp_path: Path) -> None:
    """Workers of the app ask for the index together at start-up: it is opened once."""
    import shutil
    import threading

    source = Path(__file__).resolve().parents[1] / "samples" / "vault"
    root = tmp_path / "vault"
    shutil.copytree(source, root, ignore=shutil.ignore_patterns(".lore"))
    vault = Vault.open(root)
    barrier = threading.Barrier(6)
    seen: list[object] = []

    def open_index() -> None:
        barrier.wait()
        seen.append(vault.index)

    threads = [threading.Thread(target=open_index) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 6
    assert len({id(index) for index in seen}) == 1
    vault.close()
