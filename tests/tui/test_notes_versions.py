"""The Notes pane's versions: the list newest first, an old version's text, restore with a
confirmation (and without one), and a vault that has no versions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pane_harness import PaneHost, wait_until
from textual.pilot import Pilot
from textual.widgets import Markdown, OptionList

from lore.cli import main
from lore.core.session import LoreSession
from lore.core.vault import Vault
from lore.tui.messages import VaultWritten
from lore.tui.panes.notes import NotesPane
from lore.tui.widgets.note_versions import NoteVersionsScreen
from lore.tui.widgets.notes_tree import NotesTree
from lore.tui.widgets.quarantine_dialogs import ConfirmScreen

FIRST = "Halley returns every 76 years."
SECOND = "Halley returns every 75 to 79 years."
THIRD = "Halley last passed in 1986 and returns in 2061."


class WriteRecordingHost(PaneHost):
    """Records what the pane tells the app it wrote, as the app would pass it on."""

    def on_vault_written(self, message: VaultWritten) -> None:
        self.received.append(message)


def _edit(session: LoreSession, path: str, old: str, new: str) -> None:
    """What the person's editor does to the note, then what Lore commits when it closes."""
    file = session.resolve_inside(path)
    file.write_text(file.read_text().replace(old, new))
    session.record_edit(session.read_note(path))


@pytest.fixture
def comet(tmp_path: Path) -> Iterator[LoreSession]:
    """A vault made by `lore init` with a note created and then edited twice."""
    assert main(["init", str(tmp_path / "sky"), "--name", "Sky"]) == 0
    session = LoreSession(Vault.open(tmp_path / "sky"))
    note = session.create_note("Halley", body=f"# Halley\n\n{FIRST}\n")
    _edit(session, note.path, FIRST, SECOND)
    _edit(session, note.path, SECOND, THIRD)
    yield session
    session.close()


def _viewer(pane: NotesPane) -> str:
    return pane.query_one("#notes-viewer", Markdown).source


async def _open_versions(app: PaneHost, pilot: Pilot[None]) -> NoteVersionsScreen:
    pane = app.query_one(NotesPane)
    pane.open_note("Halley")
    await wait_until(lambda: THIRD in _viewer(pane), message="the note was not shown")
    pane.query_one(NotesTree).focus()
    await pilot.press("v")
    await wait_until(
        lambda: isinstance(app.screen, NoteVersionsScreen), message="no versions shown"
    )
    assert isinstance(app.screen, NoteVersionsScreen)
    return app.screen


def _version_viewer(screen: NoteVersionsScreen) -> str:
    return screen.query_one("#version-viewer", Markdown).source


async def test_versions_are_listed_newest_first_and_an_old_one_can_be_read(
    comet: LoreSession,
) -> None:
    app = PaneHost(lambda: NotesPane(comet))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open_versions(app, pilot)
        listed = screen.query_one("#versions-list", OptionList)
        assert listed.option_count == 3
        rows = [str(listed.get_option_at_index(i).prompt) for i in range(3)]
        operations = [row.split()[3] for row in rows]
        assert operations == ["edit", "edit", "create"], rows
        revs = [version.short for version in comet.note_versions("Halley")]
        assert [row.split()[0] for row in rows] == revs
        # The newest is shown at once; the oldest once chosen.
        await wait_until(lambda: THIRD in _version_viewer(screen), message="newest not shown")
        await pilot.press("end", "enter")
        await wait_until(lambda: FIRST in _version_viewer(screen), message="oldest not shown")
        assert THIRD not in _version_viewer(screen)
        assert "create by user" in str(screen.query_one("#version-meta").render())
        await pilot.press("escape")
        assert not isinstance(app.screen, NoteVersionsScreen)
        # The palette offers the same while the note is open.
        labels = [label for label, _, _ in app.query_one(NotesPane).palette_commands()]
        assert "Versions of Halley" in labels


async def test_restoring_the_oldest_version_asks_first_then_brings_its_text_back(
    comet: LoreSession,
) -> None:
    app = WriteRecordingHost(lambda: NotesPane(comet))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(NotesPane)
        screen = await _open_versions(app, pilot)
        await pilot.press("end", "enter")
        await wait_until(lambda: FIRST in _version_viewer(screen))
        await pilot.press("r")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_until(lambda: FIRST in _viewer(pane), message="restored text not shown")
        assert not isinstance(app.screen, (ConfirmScreen, NoteVersionsScreen))
        on_disk = comet.resolve_inside("notes/halley.md").read_text()
        assert FIRST in on_disk and THIRD not in on_disk
        versions = comet.note_versions("Halley")
        assert [version.operation for version in versions] == ["restore", "edit", "edit", "create"]
        # The replaced text is kept, and the app is told the notes changed.
        assert any(THIRD in kept.read_text() for kept in (comet.root / "trash").rglob("*.md"))
        written = [m for m in app.received if isinstance(m, VaultWritten)]
        assert written and "notes" in written[-1].kinds
        assert any("Restored Halley" in n.message for n in app._notifications)


async def test_saying_no_to_the_confirmation_changes_nothing(comet: LoreSession) -> None:
    before = comet.resolve_inside("notes/halley.md").read_bytes()
    app = WriteRecordingHost(lambda: NotesPane(comet))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(NotesPane)
        screen = await _open_versions(app, pilot)
        await pilot.press("end", "enter")
        await wait_until(lambda: FIRST in _version_viewer(screen))
        await pilot.press("r")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        # Back at the versions, which can still be closed with nothing done.
        assert app.screen is screen
        await pilot.press("escape")
        await pilot.pause()
        assert THIRD in _viewer(pane)
        assert not any(isinstance(m, VaultWritten) for m in app.received)
    assert comet.resolve_inside("notes/halley.md").read_bytes() == before
    assert len(comet.note_versions("Halley")) == 3


async def test_an_unversioned_vault_says_so_in_one_notification(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    (root / "notes").mkdir(parents=True)
    (root / "lore.yaml").write_text("vault:\n  name: Plain\n")
    session = LoreSession(Vault.open(root))
    session.create_note("Halley", body=f"# Halley\n\n{FIRST}\n")
    app = PaneHost(lambda: NotesPane(session))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(NotesPane)
        pane.open_note("Halley")
        await wait_until(lambda: FIRST in _viewer(pane))
        pane.query_one(NotesTree).focus()
        await pilot.press("v")
        await wait_until(lambda: len(app._notifications) >= 1, message="nothing said")
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert len(messages) == 1 and "this vault is not versioned" in messages[0], messages
        assert "\n" not in messages[0]
        assert not isinstance(app.screen, NoteVersionsScreen)
    session.close()


async def test_an_edit_in_the_app_is_a_version_by_the_person(
    comet: LoreSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf "\\nSeen from Earth in 1986.\\n" >> "$1"\n')
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    before = len(comet.note_versions("Halley"))
    app = PaneHost(lambda: NotesPane(comet))
    async with app.run_test(size=(120, 36)) as pilot:
        pane = app.query_one(NotesPane)
        pane.open_note("Halley")
        await wait_until(lambda: THIRD in _viewer(pane), message="the note was not shown")
        pane.query_one(NotesTree).focus()
        await pilot.press("e")
        await wait_until(lambda: "Seen from Earth" in _viewer(pane), message="never read back")
    versions = comet.note_versions("Halley")
    assert len(versions) == before + 1
    assert (versions[0].operation, versions[0].actor) == ("edit", comet.actor)
