"""What must fit at 80x24: whole footer keys, the History answer, Metrics tables, a visible
prompt, whole dialog questions and hints, and help that names keys as `keymap:` moved them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pane_harness import wait_until
from sample_scene import fill
from textual.binding import Binding
from textual.pilot import Pilot
from textual.screen import ModalScreen
from textual.widgets import DataTable, Markdown
from textual.widgets._footer import FooterKey

from lore.core.session import LoreSession
from lore.core.vault import Vault
from lore.tui.app import PANES, LoreApp
from lore.tui.panes.history import HistoryPane
from lore.tui.panes.metrics import RECENT_COLUMNS, MetricsPane
from lore.tui.widgets.footer import FooterEntry, LoreFooter, fit_entries
from lore.tui.widgets.help_screen import HelpScreen, key_name, keys_as_mapped
from lore.tui.widgets.history_export_screen import ExportScreen
from lore.tui.widgets.notes_new_note import NewNoteScreen
from lore.tui.widgets.prompt import PLACEHOLDER, PromptArea
from lore.tui.widgets.quarantine_dialogs import ConfirmScreen, EditClaimScreen

# A key each pane shows first in the footer, present once its keys are there.
FIRST_KEY = {
    "ask": "Stop",
    "history": "Search",
    "metrics": "Window",
    "quarantine": "Promote",
    "notes": "Search",
}


@pytest.fixture
def scene(sample_vault: Vault, monkeypatch: pytest.MonkeyPatch) -> Vault:
    return fill(sample_vault, monkeypatch)


def screen_lines(app: LoreApp) -> list[str]:
    """The terminal as a person reads it, a line per row."""
    strips = app.screen._compositor.render_strips()
    return ["".join(segment.text for segment in strip) for strip in strips]


def footer_keys(app: LoreApp) -> tuple[list[FooterKey], FooterKey | None]:
    keys = list(app.query_one(LoreFooter).query(FooterKey))
    palette = next((key for key in keys if key.has_class("-command-palette")), None)
    return [key for key in keys if key is not palette], palette


async def test_footer_keys_are_whole_in_every_pane_at_80_and_120_columns(scene: Vault) -> None:
    app = LoreApp(LoreSession(scene))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(lambda: app.pane("notes") is not None, message="panes never mounted")
        for pane_id, _, _ in PANES:
            app.show_pane(pane_id)
            for width, height in ((80, 24), (120, 40)):
                await pilot.resize_terminal(width, height)

                def fitted(first: str = FIRST_KEY[pane_id]) -> bool:
                    keys, palette = footer_keys(app)
                    return (
                        palette is not None
                        and first in [key.description for key in keys]
                        and all(key.region.right <= palette.region.x for key in keys)
                    )

                # Every key ends before the palette key begins: none is drawn under it.
                await wait_until(fitted, message=f"{pane_id} footer cut at {width} columns")
                keys, _ = footer_keys(app)
                assert "Help" in [key.description for key in keys]
                footer_line = screen_lines(app)[-1]
                for key in keys:
                    assert f"{key.key_display} {key.description}" in footer_line


def test_footer_fit_keeps_help_and_the_order_and_uses_room_a_long_key_left() -> None:
    entries = [
        FooterEntry("p", "Promote"),
        FooterEntry("P", "Promote source"),
        FooterEntry("u", "Undo"),
        FooterEntry("f1", "Help", pinned=True),
    ]
    # Usual spacing when everything fits.
    assert fit_entries(entries, 100, "^p palette") == (False, [0, 1, 2, 3])
    # Too narrow for "P Promote source": the shorter key after it still fits.
    compact, kept = fit_entries(entries, 40, "^p palette")
    assert compact and kept == [0, 2, 3]
    # Help stays however narrow.
    assert fit_entries(entries, 5, "^p palette")[1] == [3]


async def test_history_detail_shows_the_answer_at_80x24(scene: Vault) -> None:
    app = LoreApp(LoreSession(scene))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(lambda: app.pane("history") is not None, message="never mounted")
        app.show_pane("history")
        pane = app.query_one(HistoryPane)
        await wait_until(lambda: pane.history_list.row_count == 3)
        await wait_until(lambda: app.focused is pane.history_list)
        await pilot.press("end")  # the oldest turn: the longest question and answer
        await wait_until(lambda: "Jupiter has 95" in pane.detail_source)
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        assert "Jupiter has 95 officially" in text
        assert "Cited (2)" in text


async def test_metrics_tables_fit_the_width_and_take_columns_back_when_wider(
    scene: Vault,
) -> None:
    app = LoreApp(LoreSession(scene))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(lambda: app.pane("metrics") is not None, message="never mounted")
        app.show_pane("metrics")
        pane = app.query_one(MetricsPane)
        await wait_until(lambda: pane.view is not None)
        await pilot.pause()
        for table_id in ("#metrics-models", "#metrics-recent"):
            table = pane.query_one(table_id, DataTable)
            used = sum(column.get_render_width(table) for column in table.ordered_columns)
            assert used <= table.size.width, f"{table_id} is cut"
        recent = pane.query_one("#metrics-recent", DataTable)
        kept = [str(column.key.value) for column in recent.ordered_columns]
        assert kept[:3] == ["time", "model", "status"] and "total" in kept
        assert "dropped" not in kept
        assert recent.row_count == 3
        await pilot.resize_terminal(180, 40)
        await wait_until(lambda: len(recent.ordered_columns) == len(RECENT_COLUMNS))
        assert recent.row_count == 3
        assert [str(cell) for cell in recent.get_row("t00000000000")][-1] == "2 (−1)"


async def test_the_empty_prompt_shows_where_to_type(scene: Vault) -> None:
    app = LoreApp(LoreSession(scene))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        prompt = app.query_one(PromptArea)
        assert prompt.styles.border_left[0] == "outer"
        prompt_lines = [line for line in screen_lines(app) if PLACEHOLDER[:20] in line]
        assert prompt_lines, "no prompt on the first screen"


LONG_QUESTION = (
    "Reject all 12 held claims from Europa Clipper mission overview and the"
    " surface-ice spectroscopy results, as summarised on the mission blog?"
)
# Each dialog, and what it must show whole: the first text of each is longer than one of the
# dialog's lines at 80 columns.
DIALOG_TEXTS: dict[str, tuple[Callable[[], ModalScreen[object]], list[str]]] = {
    "confirm": (lambda: ConfirmScreen(LONG_QUESTION), [LONG_QUESTION, "y: yes · n or Esc: no"]),
    "edit-claim": (
        lambda: EditClaimScreen("Io has over 400 active volcanoes.", hidden_removed=2),
        ["2 hidden characters were removed. Ctrl+S promotes the edited text · Esc keeps it held"],
    ),
    "new-note": (
        lambda: NewNoteScreen("moons/galilean/outer-moons-of-the-jovian-system"),
        [
            "Title of the new note (in notes/moons/galilean/outer-moons-of-the-jovian-system/)",
            "Enter creates it and opens your editor · Esc cancels",
        ],
    ),
    "export": (
        lambda: ExportScreen("the 1,204 turns matching 'europa ocean'", Path("/tmp/x.md")),
        [
            "Export the 1,204 turns matching 'europa ocean' to",
            "Ends in .jsonl: one JSON record per turn; anything else: Markdown. "
            "Enter exports · Esc cancels",
        ],
    ),
}


def dialog_text(app: LoreApp) -> str:
    """What the dialog's box shows, its lines joined as one text: wrapping is allowed, cutting
    is not."""
    inside = [line.split("│")[1] for line in screen_lines(app) if line.count("│") >= 2]
    return " ".join(" ".join(inside).split())


@pytest.mark.parametrize("dialog", DIALOG_TEXTS.keys())
async def test_a_dialog_shows_its_question_and_hint_whole_at_80x24(
    scene: Vault, dialog: str
) -> None:
    make_screen, texts = DIALOG_TEXTS[dialog]
    app = LoreApp(LoreSession(scene))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = make_screen()
        app.push_screen(screen)
        await wait_until(lambda: app.screen is screen, message="the dialog never opened")
        await pilot.pause()
        shown = dialog_text(app)
        for text in texts:
            assert text in shown, f"{text!r} is cut in {shown!r}"


async def _help_text(app: LoreApp, pilot: Pilot[None]) -> str:
    await pilot.press("f1")
    await wait_until(lambda: isinstance(app.screen, HelpScreen))
    text = app.screen.query_one(Markdown).source
    await pilot.press("escape")
    return text


async def test_help_names_the_keys_the_keymap_moved(scene: Vault) -> None:
    scene.config.keymap = {
        "ask.preview": "f6",
        "quarantine.promote_source": "ctrl+o",
        "app.pane.notes": "ctrl+n",
    }
    app = LoreApp(LoreSession(scene))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(lambda: app.pane("quarantine") is not None, message="never mounted")
        ask_help = await _help_text(app, pilot)
        assert "**F6** shows the context preview" in ask_help and "**F2**" not in ask_help
        assert "**F3**" in ask_help  # not remapped
        assert "`Ctrl+N` Notes" in ask_help and "`5` Notes" not in ask_help
        await pilot.press("alt+4")
        await wait_until(lambda: app.active_pane == "quarantine")
        quarantine_help = await _help_text(app, pilot)
        # `P` moved; `p`, a different key, did not.
        assert "`Ctrl+O` / `R`" in quarantine_help
        assert "| `p` | Promote" in quarantine_help


def test_a_key_two_bindings_share_is_renamed_only_when_both_moved() -> None:
    bindings = [
        Binding("escape", "cancel", id="pane.cancel"),
        Binding("escape", "unselect", id="pane.unselect"),
        Binding("f2", "preview", id="pane.preview"),
    ]
    text = "**Esc** stops; **F2** previews; `Esc` clears."
    assert keys_as_mapped(text, bindings, {"pane.cancel": "ctrl+x", "pane.preview": "f6"}) == (
        "**Esc** stops; **F6** previews; `Esc` clears."
    )
    both = {"pane.cancel": "ctrl+x", "pane.unselect": "ctrl+x"}
    assert (
        keys_as_mapped(text, bindings, both)
        == "**Ctrl+X** stops; **F2** previews; `Ctrl+X` clears."
    )
    assert [key_name(key) for key in ("f2", "ctrl+l", "P", "slash", "escape")] == [
        "F2",
        "Ctrl+L",
        "P",
        "/",
        "Esc",
    ]
