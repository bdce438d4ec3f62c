"""The watcher: what other processes change is reported, this process's own writes are not,
and a poll on a vault of hundreds of notes looks at a few dozen files, not all of them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lore.core import changes
from lore.core.changes import SWEEP_POLLS, VaultWatcher
from lore.core.history import HistoryStore
from lore.core.storage import atomic_write_text
from lore.core.turns import Turn
from lore.core.vault import Vault

NOTE = "---\ntitle: {title}\n---\n{body}\n"


def write_note(path: Path, title: str, body: str = "Some text.") -> None:
    """As Lore and most editors save: a new file renamed into place (unsynced, for speed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(NOTE.format(title=title, body=body), encoding="utf-8")
    os.replace(temp, path)


def edit_in_place(path: Path, text: str) -> None:
    """As an editor that rewrites the same file: same inode, the folder's mtime unchanged."""
    folder_mtime = path.parent.stat().st_mtime_ns
    with open(path, "r+", encoding="utf-8") as handle:
        handle.seek(0, os.SEEK_END)
        handle.write(text)
    assert path.parent.stat().st_mtime_ns == folder_mtime


@pytest.fixture
def big_vault(vault: Vault) -> Vault:
    for folder in ("planets", "moons", "comets"):
        for number in range(100):
            write_note(vault.layout.notes / folder / f"{folder}-{number}.md", f"{folder} {number}")
    return vault


def count_stats(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every stat and folder listing the watcher makes, by the path it asked about."""
    seen: list[str] = []
    real_stat, real_scandir = os.stat, os.scandir

    def counting_stat(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(str(path))
        return real_stat(path, *args, **kwargs)

    def counting_scandir(path):  # type: ignore[no-untyped-def]
        seen.append(str(path))
        return real_scandir(path)

    monkeypatch.setattr(changes.os, "stat", counting_stat)
    monkeypatch.setattr(changes.os, "scandir", counting_scandir)
    return seen


def test_a_quiet_poll_looks_at_far_fewer_files_than_the_vault_holds(
    big_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    watcher = VaultWatcher(big_vault)
    assert watcher.poll() == frozenset()
    seen = count_stats(monkeypatch)
    for _ in range(5):
        seen.clear()
        assert watcher.poll() == frozenset()
        # 300 notes in 3 folders: the folders, a sweep slice, the three JSONL files.
        assert len(seen) < 30, seen
        assert watcher.last_poll_stats == len(seen)


def test_a_note_saved_by_another_process_is_reported_on_the_next_poll(big_vault: Vault) -> None:
    watcher = VaultWatcher(big_vault)
    watcher.poll()
    write_note(big_vault.layout.notes / "moons" / "moons-7.md", "moons 7", "Rewritten.")
    assert watcher.poll() == frozenset({"notes"})
    assert watcher.poll() == frozenset()
    write_note(big_vault.layout.notes / "rings" / "ring-1.md", "ring 1")  # a new folder
    assert watcher.poll() == frozenset({"notes"})
    assert big_vault.index.lookup(title_key="ring 1")
    (big_vault.layout.notes / "comets" / "comets-3.md").unlink()
    assert watcher.poll() == frozenset({"notes"})
    assert watcher.poll() == frozenset()


def test_an_in_place_edit_is_reported_within_one_sweep(big_vault: Vault) -> None:
    watcher = VaultWatcher(big_vault)
    watcher.poll()
    edit_in_place(big_vault.layout.notes / "planets" / "planets-42.md", "\nMore.\n")
    reported_at = None
    for number in range(1, SWEEP_POLLS + 2):
        if watcher.poll():
            reported_at = number
            break
    assert reported_at is not None, "an in-place edit was never noticed"
    assert watcher.poll() == frozenset()


def test_own_writes_are_not_reported_but_a_later_outside_write_is(big_vault: Vault) -> None:
    watcher = VaultWatcher(big_vault)
    watcher.poll()
    note = big_vault.layout.notes / "planets" / "planets-1.md"
    write_note(note, "planets 1", "Ours.")
    watcher.note_own_write(note)
    assert watcher.poll() == frozenset()

    HistoryStore(big_vault).append(Turn(id="t1", time="x", question="ours"))
    big_vault.layout.metrics.write_text("{}\n", encoding="utf-8")
    watcher.absorb({"history", "metrics"})
    assert watcher.poll() == frozenset()

    # Another process, after ours: still seen.
    write_note(note, "planets 1", "Theirs.")
    HistoryStore(big_vault).append(Turn(id="t2", time="x", question="theirs"))
    assert watcher.poll() == frozenset({"notes", "history"})


def test_an_outside_write_beside_an_own_write_is_still_reported(big_vault: Vault) -> None:
    watcher = VaultWatcher(big_vault)
    watcher.poll()
    ours = big_vault.layout.notes / "moons" / "moons-1.md"
    write_note(ours, "moons 1", "Ours.")
    write_note(big_vault.layout.notes / "moons" / "moons-2.md", "moons 2", "Theirs.")
    watcher.note_own_write(ours)
    assert watcher.poll() == frozenset({"notes"})


def test_an_own_in_place_edit_is_not_reported_by_the_sweep(big_vault: Vault) -> None:
    watcher = VaultWatcher(big_vault)
    watcher.poll()
    note = big_vault.layout.notes / "comets" / "comets-9.md"
    edit_in_place(note, "\nOurs.\n")
    watcher.note_own_write(note)
    assert all(watcher.poll() == frozenset() for _ in range(SWEEP_POLLS + 1))


def test_absorbing_a_tree_takes_what_this_process_wrote(vault: Vault) -> None:
    watcher = VaultWatcher(vault)
    watcher.poll()
    write_note(vault.layout.notes / "ingested.md", "Ingested")
    (vault.layout.memory / "memory.json").parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(vault.layout.memory / "memory.json", "{}")
    watcher.absorb({"notes", "memory", "no-such-kind"})
    assert watcher.poll() == frozenset()


def test_nothing_is_reported_while_this_process_writes(vault: Vault) -> None:
    watcher = VaultWatcher(vault)
    watcher.poll()
    with watcher.writing({"history", "metrics"}):
        HistoryStore(vault).append(Turn(id="t1", time="x", question="ours"))
        assert watcher.poll() == frozenset()  # a poll from another thread mid-write
        vault.layout.metrics.write_text("{}\n", encoding="utf-8")
    assert watcher.poll() == frozenset()
    HistoryStore(vault).append(Turn(id="t2", time="x", question="theirs"))
    assert watcher.poll() == frozenset({"history"})


def test_a_notes_folder_made_after_the_first_poll_is_watched(tmp_path: Path, vault: Vault) -> None:
    for path in sorted(vault.layout.notes.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    vault.layout.notes.rmdir()
    watcher = VaultWatcher(vault)
    watcher.poll()
    assert watcher.poll() == frozenset()
    write_note(vault.layout.notes / "deep" / "er" / "first.md", "First")
    assert watcher.poll() == frozenset({"notes"})
    write_note(vault.layout.notes / "deep" / "er" / "second.md", "Second")
    assert watcher.poll() == frozenset({"notes"})
