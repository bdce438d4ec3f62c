"""Every pane as a person sees it, at 80x24 and at 120x40, compared with saved screenshots.

The vault is the sample vault with three turns of history, their metrics and three held
claims, all with fixed ids and times, and the theme is set, so a screenshot is the same on
every run and machine. A footer key, a table column or an answer cut short shows up here as
a changed screenshot; `pytest --snapshot-update` saves new ones once they look right.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from pane_harness import wait_until
from sample_scene import EUROPA, THEME, fill
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Input, Markdown, OptionList, Tab, TextArea
from textual.widgets._footer import FooterKey

from lore.core.public import NoteAtVersion, NoteVersion
from lore.core.session import LoreSession
from lore.core.vault import Vault
from lore.tui.app import LoreApp
from lore.tui.panes.history import HistoryPane
from lore.tui.panes.metrics import MetricsPane
from lore.tui.panes.notes import NotesPane
from lore.tui.panes.notes import _document_for as notes_document_for
from lore.tui.panes.quarantine import QuarantinePane
from lore.tui.widgets.footer import LoreFooter
from lore.tui.widgets.help_screen import HelpScreen
from lore.tui.widgets.history_export_screen import ExportScreen
from lore.tui.widgets.meter import ContextMeter
from lore.tui.widgets.note_versions import NoteVersionsScreen
from lore.tui.widgets.notes_new_note import NewNoteScreen
from lore.tui.widgets.notes_tree import NotesTree
from lore.tui.widgets.quarantine_dialogs import ConfirmScreen, EditClaimScreen, RejectReasonScreen

SIZES = {"80x24": (80, 24), "120x40": (120, 40)}


@pytest.fixture
def scene(sample_vault: Vault, monkeypatch: pytest.MonkeyPatch) -> Vault:
    return fill(sample_vault, monkeypatch)


def _footer_descriptions(app: LoreApp) -> list[str]:
    return [key.description for key in app.query_one(LoreFooter).query(FooterKey)]


async def _settle(pilot: Pilot[None], ready: Callable[[], Any], footer_shows: str) -> None:
    """Wait for the pane's data, its keys in the footer, and every worker but the watcher."""
    app = pilot.app
    assert isinstance(app, LoreApp)
    await wait_until(ready, message="the pane never showed its data")
    await wait_until(
        lambda: footer_shows in _footer_descriptions(app), message="footer not rebuilt"
    )
    await wait_until(
        lambda: all(worker.is_finished for worker in app.workers if worker.group != "watch"),
        message="workers never finished",
    )
    # Blinking cursors would make the screenshot depend on when it is taken.
    for widget in app.query("Input, TextArea").results():
        if isinstance(widget, (Input, TextArea)):
            widget.cursor_blink = False
    await pilot.pause(0.2)


def _show(pane_id: str) -> Callable[[Pilot[None]], Any]:
    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, LoreApp)
        app.theme = THEME
        await wait_until(lambda: app.pane("notes") is not None, message="panes never mounted")
        tab = app.tab_bar.query_one("#quarantine", Tab)
        await wait_until(lambda: "(3)" in str(tab.label), message="quarantine never counted")
        # The tab bar lays out the longer label before the pane's tab is underlined.
        await pilot.pause()
        await pilot.pause()
        if pane_id != "ask":
            app.show_pane(pane_id)
        await SHOW[pane_id](pilot, app)

    return run_before


async def _ask(pilot: Pilot[None], app: LoreApp) -> None:
    meter = app.query_one(ContextMeter)
    await _settle(pilot, lambda: meter.used is not None, "Context")


async def _history(pilot: Pilot[None], app: LoreApp) -> None:
    pane = app.query_one(HistoryPane)
    await wait_until(lambda: pane.history_list.row_count == 3 and pane.memory is not None)
    await wait_until(lambda: app.focused is pane.history_list)
    # The oldest turn: the longest answer, and two citations named by title.
    await pilot.press("end")
    cited = pane.query_one("#history-cited", OptionList)
    await _settle(
        pilot,
        lambda: (
            "Jupiter has 95" in pane.detail_source
            and cited.option_count == 2
            and "Jupiter" in str(cited.get_option_at_index(0).prompt).split("  ")[0]
        ),
        "Search",
    )


async def _metrics(pilot: Pilot[None], app: LoreApp) -> None:
    pane = app.query_one(MetricsPane)
    await _settle(pilot, lambda: pane.view is not None and pane.view.summary.asks == 3, "Window")


async def _quarantine(pilot: Pilot[None], app: LoreApp) -> None:
    pane = app.query_one(QuarantinePane)
    await _settle(pilot, lambda: pane._loaded and len(pane.held) == 3, "Promote")


async def _notes(pilot: Pilot[None], app: LoreApp) -> None:
    pane = app.query_one(NotesPane)
    tree = pane.query_one(NotesTree)
    await wait_until(lambda: pane._loaded and tree.has_focus, message="notes never listed")
    app.open_note(EUROPA)

    def opened() -> bool:
        cursor = tree.cursor_node
        shown = pane.current is not None and pane.current.note.path == EUROPA
        return (
            shown and cursor is not None and cursor.data is not None and cursor.data.key == EUROPA
        )

    await _settle(pilot, opened, "Backlinks")


SHOW = {
    "ask": _ask,
    "history": _history,
    "metrics": _metrics,
    "quarantine": _quarantine,
    "notes": _notes,
}


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
@pytest.mark.parametrize("pane_id", SHOW.keys())
def test_pane_screenshot(
    snap_compare: Any, scene: Vault, pane_id: str, size: tuple[int, int]
) -> None:
    app = LoreApp(LoreSession(scene))
    assert snap_compare(app, terminal_size=size, run_before=_show(pane_id))


# -- dialogs ---------------------------------------------------------------------------------

# Longer than one line of the dialog at 80 columns, as a batch over a long source title is.
LONG_QUESTION = (
    "Reject all 12 held claims from Europa Clipper mission overview and the"
    " surface-ice spectroscopy results, as summarised on the mission blog?"
)
EXPORT_TO = Path("~/exports/lore-history-20261130-1000.md")
EUROPA_VERSIONS = [
    NoteVersion(
        rev=f"{digit}" * 40,
        time=f"2026-11-2{digit}T0{digit}:15:00Z",
        operation=operation,
        actor=actor,
        summary=summary,
        path=EUROPA,
        change=change,
    )
    for digit, operation, actor, summary, change in (
        ("3", "promote", "lore", "promoted a claim from blog.example/moons", "edited"),
        ("2", "edit", "you", "", "edited"),
        ("1", "ingest", "lore", "ingested Europa (NASA fact sheet)", "added"),
    )
]


def _quiet_cursors(app: LoreApp) -> None:
    # Blinking cursors would make the screenshot depend on when it is taken.
    for widget in app.screen.query("Input, TextArea").results():
        if isinstance(widget, (Input, TextArea)):
            widget.cursor_blink = False


async def _opened(pilot: Pilot[None], kind: type[Screen[Any]], ready: Callable[[], Any]) -> None:
    app = pilot.app
    assert isinstance(app, LoreApp)
    await wait_until(lambda: isinstance(app.screen, kind), message=f"{kind.__name__} never shown")
    await wait_until(ready, message=f"{kind.__name__} never showed its content")
    await wait_until(
        lambda: all(worker.is_finished for worker in app.workers if worker.group != "watch"),
        message="workers never finished",
    )
    _quiet_cursors(app)
    await pilot.pause(0.2)


async def _confirm(pilot: Pilot[None], app: LoreApp) -> None:
    app.push_screen(ConfirmScreen(LONG_QUESTION))
    await _opened(pilot, ConfirmScreen, lambda: True)


async def _reject(pilot: Pilot[None], app: LoreApp) -> None:
    app.query_one(QuarantinePane).action_reject()
    await _opened(pilot, RejectReasonScreen, lambda: app.focused is not None)


async def _edit_claim(pilot: Pilot[None], app: LoreApp) -> None:
    # The first held claim hides a zero-width space: the hint says one was removed.
    app.query_one(QuarantinePane).action_edit()
    await _opened(pilot, EditClaimScreen, lambda: isinstance(app.focused, TextArea))


async def _new_note(pilot: Pilot[None], app: LoreApp) -> None:
    app.query_one(NotesPane).action_new_note()
    await _opened(pilot, NewNoteScreen, lambda: isinstance(app.focused, Input))


async def _export(pilot: Pilot[None], app: LoreApp) -> None:
    # The pane suggests a file in the working folder named by the time: fixed here.
    app.push_screen(ExportScreen("all 3 turns", EXPORT_TO))
    await _opened(pilot, ExportScreen, lambda: isinstance(app.focused, Input))


async def _versions(pilot: Pilot[None], app: LoreApp) -> None:
    pane = app.query_one(NotesPane)
    assert pane.current is not None
    note_text = (pane.session.vault.root / EUROPA).read_bytes()
    # Fixed versions instead of git commits, whose ids and times differ on every run.
    session = cast(Any, pane.session)
    session.note_at = lambda path, rev: NoteAtVersion(
        next(version for version in EUROPA_VERSIONS if version.rev == rev), note_text
    )
    screen = NoteVersionsScreen(
        pane.session, EUROPA, pane.current.note.title, EUROPA_VERSIONS, notes_document_for
    )
    app.push_screen(screen)

    def read() -> bool:
        source = screen.query_one("#version-viewer", Markdown).source
        return "Europa" in source and "Reading" not in source

    await _opened(pilot, NoteVersionsScreen, read)


async def _help(pilot: Pilot[None], app: LoreApp) -> None:
    await pilot.press("f1")
    await _opened(pilot, HelpScreen, lambda: True)


# Each dialog over the pane that opens it.
DIALOGS = {
    "confirm": ("quarantine", _confirm),
    "reject": ("quarantine", _reject),
    "edit-claim": ("quarantine", _edit_claim),
    "new-note": ("notes", _new_note),
    "export": ("history", _export),
    "versions": ("notes", _versions),
    "help": ("quarantine", _help),
}


def _open(dialog: str) -> Callable[[Pilot[None]], Any]:
    pane_id, open_dialog = DIALOGS[dialog]
    show_pane = _show(pane_id)

    async def run_before(pilot: Pilot[None]) -> None:
        await show_pane(pilot)
        assert isinstance(pilot.app, LoreApp)
        await open_dialog(pilot, pilot.app)

    return run_before


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
@pytest.mark.parametrize("dialog", DIALOGS.keys())
def test_dialog_screenshot(
    snap_compare: Any, scene: Vault, dialog: str, size: tuple[int, int]
) -> None:
    app = LoreApp(LoreSession(scene))
    assert snap_compare(app, terminal_size=size, run_before=_open(dialog))
