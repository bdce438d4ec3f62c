"""Text from documents is data in the app: markup-like text shows as written, nothing hidden
reaches the screen as is, and promotion says what it left out."""

from __future__ import annotations

import pytest
from pane_harness import PaneHost, wait_until
from textual.app import App
from textual.command import CommandPalette
from textual.widgets import Markdown, OptionList, Static

from lore.core.gates.types import Claim, Verdict
from lore.core.history import HistoryStore
from lore.core.session import LoreSession
from lore.core.turns import Turn, TurnTimings, TurnUsage
from lore.core.vault import Vault
from lore.tui.app import LoreApp
from lore.tui.panes.history import HistoryPane
from lore.tui.panes.notes import NotesPane
from lore.tui.panes.quarantine import QuarantinePane
from lore.tui.widgets.history_list import HistoryList
from lore.tui.widgets.notes_tree import NotesTree
from lore.tui.widgets.quarantine_detail import QuarantineDetail

MARKUP_CLAIM = "Close with [/bold]; see ![status](http://x/y)"
OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
ESC_SPELLED = "⟦U+001B ESC⟧"


def _hold(vault: Vault, text: str, *, title: str, reasons: list[str]) -> None:
    claim = Claim.make(
        text, section="Status", uri="https://blog.example/s", sha256="ab" * 32, title=title,
        trust="untrusted",
    )  # fmt: skip
    from lore.core.quarantine import Quarantine

    Quarantine(vault).hold([Verdict(claim, "hold", "sanitise", reasons=reasons)])


def _screen(app: App[object]) -> str:
    """What the terminal shows, as text (spaces as in the SVG export)."""
    return app.export_screenshot().replace("&#160;", " ")


def _assert_no_raw_escape(app: App[object]) -> None:
    shown = app.export_screenshot()
    assert "\x1b" not in shown and "\x07" not in shown


async def test_the_quarantine_pane_shows_markup_like_text_literally(vault: Vault) -> None:
    _hold(vault, MARKUP_CLAIM, title="[bold]blog[/bold]", reasons=["it says [/bold] to the reader"])
    _hold(vault, f"Copy this {OSC52} now.", title="[bold]blog[/bold]", reasons=["escape"])
    app = PaneHost(lambda: QuarantinePane(LoreSession(vault)))
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.query_one(QuarantinePane)
        await wait_until(lambda: pane._loaded and len(pane.held) == 2)
        options = pane.query_one("#quarantine-list", OptionList)
        rows = [str(options.get_option_at_index(i).prompt) for i in range(2)]
        assert any(MARKUP_CLAIM in row and "[bold]blog[/bold]" in row for row in rows)
        options.highlighted = next(i for i, c in enumerate(pane.held) if c.text == MARKUP_CLAIM)
        await pilot.pause()
        detail = "\n".join(
            str(static.render()) for static in pane.query_one(QuarantineDetail).query(Static)
        )
        assert MARKUP_CLAIM in detail and "[bold]blog[/bold]" in detail
        assert "it says [/bold] to the reader" in detail
        assert "[/bold]" in _screen(app) and "![status](http://x/y)" in _screen(app)
        options.highlighted = next(i for i, c in enumerate(pane.held) if "Copy" in c.text)
        await pilot.pause()
        _assert_no_raw_escape(app)
        assert ESC_SPELLED in _screen(app)
        # The whole-source question quotes the source's title: a dialog, not a markup error.
        pane.focus_default()
        await pilot.press("P")
        await wait_until(lambda: "[bold]blog[/bold]" in _screen(app), message="no question")
        await pilot.press("n")


async def test_promoting_in_the_pane_drops_hidden_characters_and_says_so(vault: Vault) -> None:
    _hold(vault, "Europa\u200b has a sub\u202esurface ocean.", title="blog", reasons=["hidden"])
    app = PaneHost(lambda: QuarantinePane(LoreSession(vault)))
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(QuarantinePane)
        await wait_until(lambda: pane._loaded and len(pane.held) == 1)
        pane.focus_default()
        await pilot.press("p")
        await wait_until(
            lambda: any("removed 2 hidden characters" in n.message for n in app._notifications),
            message="the promotion did not say what it removed",
        )
        (path,) = (vault.root / "notes").glob("*.md")
        text = path.read_text(encoding="utf-8")
        assert "Europa has a subsurface ocean." in text
        assert "\u200b" not in text and "\u202e" not in text


@pytest.fixture
def odd_notes(vault: Vault) -> Vault:
    vault.create_note("[/bold] tricks", f"# [/bold] tricks\n\nBold ends with [/bold]{OSC52}.\n")
    vault.create_note("Status ![status](http://x/y)", "Shields show ![status](http://x/y).\n")
    return vault


async def test_the_notes_pane_shows_titles_and_bodies_as_written(odd_notes: Vault) -> None:
    app = PaneHost(lambda: NotesPane(LoreSession(odd_notes)))
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(NotesPane)
        tree = pane.query_one(NotesTree)

        def labels() -> list[str]:
            stack, found = list(tree.root.children), []
            while stack:
                node = stack.pop(0)
                found.append(str(node.label))
                stack.extend(node.children)
            return found

        await wait_until(lambda: "[/bold] tricks" in labels(), message="tree not shown")
        assert "Status ![status](http://x/y)" in labels()
        pane.open_note("[/bold] tricks")
        await wait_until(lambda: pane.current is not None)
        viewer = pane.query_one("#notes-viewer", Markdown)
        await wait_until(lambda: ESC_SPELLED in viewer.source)
        assert "\x1b" not in viewer.source
        await pilot.press("slash", *"bold")
        results = pane.query_one("#notes-results", OptionList)
        await wait_until(lambda: results.option_count >= 1, message="no search results")
        assert "[/bold] tricks" in str(results.get_option_at_index(0).prompt)
        await pilot.pause()
        _assert_no_raw_escape(app)


async def test_history_rows_and_detail_never_draw_a_raw_escape(vault: Vault) -> None:
    HistoryStore(vault).append(
        Turn.model_validate(
            {
                "id": "t00000000001",
                "time": "2026-11-01T10:00:00Z",
                "question": f"Does [/bold] {OSC52} work?",
                "answer": f"It writes the clipboard {OSC52} [1].",
                "cited": ["notes/a.md"],
                "model": "offline",
                "usage": TurnUsage(estimated_prompt_tokens=10, estimated_completion_tokens=5),
                "timings": TurnTimings(first_token_ms=1.0, total_ms=2.0),
            }
        )
    )
    app = PaneHost(lambda: HistoryPane(LoreSession(vault)))
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(HistoryPane)
        history = pane.query_one(HistoryList)
        await wait_until(lambda: "[/bold]" in "".join(history.rows_on_screen()))
        assert ESC_SPELLED in history.rows_on_screen()[0]
        await wait_until(lambda: "clipboard" in pane.detail_source)
        await pilot.pause(0.3)
        _assert_no_raw_escape(app)
        assert ESC_SPELLED in _screen(app)


async def test_the_palette_offers_a_markup_like_note_title_as_written(odd_notes: Vault) -> None:
    app = LoreApp(LoreSession(odd_notes))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("ctrl+p")
        await wait_until(lambda: isinstance(app.screen, CommandPalette), message="no palette")
        palette = app.screen
        await pilot.press(*"note: tricks")

        def first_hit() -> str:
            option = palette.query_one("CommandList").get_option_at_index(0)  # type: ignore[attr-defined]
            return str(option.prompt)

        await wait_until(lambda: "[/bold] tricks" in first_hit(), message="note not offered")
        await pilot.press("escape")
