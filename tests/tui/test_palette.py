"""Ctrl+P: switch pane, switch theme, jump to a note, and the focused pane's own commands."""

from __future__ import annotations

from pane_harness import wait_until
from textual.command import CommandPalette

from lore.core.session import LoreSession
from lore.core.vault import Vault
from lore.tui.app import LoreApp


async def _run_from_palette(pilot: object, app: LoreApp, text: str, expected: str) -> None:
    await pilot.press("ctrl+p")  # type: ignore[attr-defined]
    await wait_until(lambda: isinstance(app.screen, CommandPalette), message="no palette")
    palette = app.screen
    await pilot.press(*text)  # type: ignore[attr-defined]

    def first_hit() -> str:
        option_list = palette.query_one("CommandList")
        option = option_list.get_option_at_index(0)  # type: ignore[attr-defined]
        return str(option.prompt)

    await wait_until(lambda: expected in first_hit(), message=f"{expected!r} not offered")
    await pilot.press("enter")  # type: ignore[attr-defined]
    await wait_until(lambda: not isinstance(app.screen, CommandPalette))


async def test_palette_switches_pane(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 36)) as pilot:
        await _run_from_palette(pilot, app, "go to metrics", "Go to Metrics")
        assert app.active_pane == "metrics"


async def test_palette_switches_theme(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 36)) as pilot:
        await _run_from_palette(pilot, app, "theme: lore-light", "Theme: lore-light")
        assert app.theme == "lore-light"


async def test_palette_jumps_to_a_note(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 36)) as pilot:
        await _run_from_palette(pilot, app, "note: ganymede", "Note: Ganymede")
        await wait_until(lambda: app.active_pane == "notes")

        def shown() -> str | None:
            current = getattr(app.pane("notes"), "current", None)
            return current.note.title if current else None

        await wait_until(lambda: shown() == "Ganymede", message="the note never opened")


async def test_palette_offers_the_focused_panes_commands(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 40)) as pilot:
        await _run_from_palette(pilot, app, "toggle context", "Toggle context preview")
        assert app.query_one("#ask-pane").has_class("-preview")
