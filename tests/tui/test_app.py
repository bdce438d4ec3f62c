"""The app frame: header, five panes by number key, F1 help, keymap, and changes from outside."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from pane_harness import PaneHost, wait_until
from textual.widgets import Markdown, Static, Tab

from lore.core.changes import VaultWatcher
from lore.core.session import LoreSession
from lore.core.vault import Vault
from lore.tui import app as app_module
from lore.tui.app import PANES, LoreApp
from lore.tui.messages import OpenNote
from lore.tui.widgets.header import LoreHeader
from lore.tui.widgets.help_screen import HelpScreen
from lore.tui.widgets.meter import ContextMeter, meter_level
from lore.tui.widgets.prompt import PromptArea


async def test_first_screen_shows_vault_provider_meter_and_five_tabs(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 36)):
        header = str(app.query_one("#header-vault", Static).render())
        assert "Solar System" in header
        assert "offline" in str(app.query_one("#header-model", Static).render())
        meter = app.query_one(ContextMeter)
        assert f"/{sample_vault.config.ask.budget_tokens:,}" in str(meter.render())
        labels = [str(tab.label) for tab in app.tab_bar.query(Tab)]
        assert labels == ["1 Ask", "2 History", "3 Metrics", "4 Quarantine", "5 Notes"]
        assert app.tab_bar.active == "ask"
        assert app.query_one("#ask-pane").display


async def test_number_keys_switch_panes_even_with_alt_while_typing(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        for number, (pane_id, _, _) in reversed(list(enumerate(PANES, 1))):
            app.set_focus(None)
            await pilot.press(str(number))
            assert app.active_pane == pane_id
        # In the Ask prompt a digit is text; Alt with the digit still switches.
        await pilot.pause()
        assert app.focused is app.query_one("#ask-prompt")
        await pilot.press("2")
        assert app.active_pane == "ask"
        await pilot.press("alt+2")
        assert app.active_pane == "history"
        await pilot.press("alt+1")
        assert app.active_pane == "ask"
        assert app.query_one(PromptArea).text == "2"


async def test_a_click_on_a_tab_shows_and_focuses_its_pane(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(lambda: app.pane("metrics") is not None, message="never mounted")
        await pilot.click("#pane-tabs #metrics")
        await wait_until(lambda: app.pane("metrics").display)  # type: ignore[union-attr]
        assert app.active_pane == "metrics"
        assert not app.query_one("#ask-pane").display
        await wait_until(
            lambda: (
                app.focused is not None and app.pane("metrics") in app.focused.ancestors_with_self
            )
        )


async def test_a_pane_asked_for_before_it_is_mounted_is_shown_once_it_is(
    sample_vault: Vault,
) -> None:
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 36)) as pilot:
        # Straight away, before the panes other than Ask are mounted.
        assert app.pane("notes") is None
        app.show_pane("notes")
        assert app.active_pane == "notes"
        await wait_until(
            lambda: app.pane("notes") is not None and app.pane("notes").display,  # type: ignore[union-attr]
            message="never shown",
        )
        notes = app.pane("notes")
        assert notes is not None and notes.display
        await wait_until(
            lambda: app.focused is not None and notes in app.focused.ancestors_with_self
        )
        await pilot.pause()
        assert not app.query_one("#ask-pane").display


async def test_quarantine_tab_shows_how_many_claims_are_held(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 36)):
        await wait_until(lambda: app.quarantine_count is not None, message="never counted")
        label = str(app.tab_bar.query_one("#quarantine", Tab).label)
        assert label == f"4 Quarantine ({app.quarantine_count})"


async def test_f1_shows_help_for_the_focused_pane_with_its_keys(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("alt+5")
        await wait_until(lambda: app.active_pane == "notes")
        await pilot.press("f1")
        await wait_until(lambda: isinstance(app.screen, HelpScreen))
        text = app.screen.query_one(Markdown).source
        assert text.startswith("# Notes")
        assert "app.help" in text and "notes.search" in text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_keymap_in_lore_yaml_remaps_keys_and_names_unknown_ids(sample_vault: Vault) -> None:
    sample_vault.config.keymap = {
        "app.pane.notes": "ctrl+n",
        "app.no-such": "x",
        # Ids of a widget inside a pane mounted after start-up, and of a dialog not yet open.
        "history.list.down": "j",
        "help.close": "ctrl+g",
    }
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(lambda: any("keymap" in n.message for n in app._notifications))
        reports = [n.message for n in app._notifications if "keymap" in n.message]
        assert reports == ["lore.yaml keymap: unknown binding id 'app.no-such'"]
        app.set_focus(None)
        await pilot.press("5")
        assert app.active_pane == "ask"
        await pilot.press("ctrl+n")
        assert app.active_pane == "notes"
        await pilot.press("f1")
        await wait_until(lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("escape")  # the old key no longer closes it...
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("ctrl+g")  # ...the new one does
        await wait_until(lambda: not isinstance(app.screen, HelpScreen))


async def test_open_note_message_shows_the_note_in_notes_pane(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 36)):
        app.post_message(OpenNote("Europa"))
        await wait_until(lambda: app.active_pane == "notes")

        def shown_title() -> str | None:
            notes = app.pane("notes")
            current = getattr(notes, "current", None)
            return current.note.title if current else None

        await wait_until(lambda: shown_title() == "Europa", message="the note never opened")


async def test_writes_by_another_process_reach_the_panes(
    sample_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "POLL_SECONDS", 0.2)
    seen: list[frozenset[str]] = []

    class Recording(LoreApp):
        def broadcast_change(self, kinds: frozenset[str], **options: Any) -> None:
            seen.append(kinds)
            super().broadcast_change(kinds, **options)

    app = Recording(LoreSession(sample_vault))
    async with app.run_test(size=(120, 36)):
        await wait_until(
            lambda: app.session.watcher._seen is not None, message="the watcher never started"
        )
        # A second process: a separate interpreter creates a note through its own Vault.
        code = (
            "import sys; from pathlib import Path; from lore.core.vault import Vault;"
            "v = Vault.open(Path(sys.argv[1])); v.create_note('Comet Borrelly', 'A comet.'); v.close()"
        )
        subprocess.run([sys.executable, "-c", code, str(sample_vault.root)], check=True)
        sample_vault.layout.history.write_text(
            json.dumps({"time": "2026-01-01T00:00:00Z", "question": "q"}) + "\n", encoding="utf-8"
        )
        await wait_until(
            lambda: (
                any("notes" in kinds for kinds in seen)
                and any("history" in kinds for kinds in seen)
            ),
            timeout=8,
            message=f"changes not noticed: {seen}",
        )
        assert sample_vault.index.lookup(title_key="comet borrelly")


def test_watcher_reports_each_kind_once(vault: Vault) -> None:
    watcher = VaultWatcher(vault)
    assert watcher.poll() == frozenset()
    vault.layout.metrics.write_text("{}\n", encoding="utf-8")
    (vault.layout.quarantine / "c1").mkdir(parents=True)
    (vault.layout.quarantine / "c1" / "claim.json").write_text("{}", encoding="utf-8")
    assert watcher.poll() == frozenset({"metrics", "quarantine"})
    assert watcher.poll() == frozenset()


async def test_the_meter_widens_to_show_the_whole_count() -> None:
    # The header alone: in the whole app the next preview would set the meter again.
    app = PaneHost(lambda: LoreHeader("Solar System", "offline", "", 4096))
    async with app.run_test(size=(120, 5)) as pilot:
        meter = app.query_one(ContextMeter)
        for used in (7, 1_234_567):
            meter.set_usage(used, 4096)
            count = f"{used:,}/4,096"
            # What is drawn, not only what is rendered: a meter too narrow wraps the count
            # out of its one line.
            await wait_until(
                lambda: meter.render_line(0).text.rstrip().endswith(count),  # noqa: B023
                message=f"{count} never drawn",
            )
            await pilot.pause()


@pytest.mark.parametrize(
    ("used", "budget", "level"),
    [(0, 4096, "low"), (2500, 4096, "mid"), (3900, 4096, "high"), (5000, 4096, "high")],
)
def test_meter_colours_as_it_fills(used: int, budget: int, level: str) -> None:
    assert meter_level(used, budget) == level


async def test_start_up_heap_is_frozen_once_started_and_handed_back_on_exit(
    sample_vault: Vault,
) -> None:
    import gc

    assert gc.get_freeze_count() == 0
    thresholds = gc.get_threshold()
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 36)):
        # After the first screen and the other panes: scrolling never walks these again.
        await wait_until(lambda: app.heap_frozen, message="never froze")
        assert gc.get_freeze_count() > 0
        assert all(app.pane(pane_id) is not None for pane_id, _, _ in PANES)
        assert gc.isenabled()
        assert gc.get_threshold()[0] >= app_module.GC_YOUNG_THRESHOLD
    # A later app in this process (as in these tests) can free this one's objects.
    assert not app.heap_frozen
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == thresholds


async def test_a_collector_paused_for_the_start_resumes_at_the_first_screen_with_it_frozen(
    sample_vault: Vault,
) -> None:
    import gc

    gc.disable()
    try:
        app = LoreApp(LoreSession(sample_vault), collector_paused=True)
        async with app.run_test(size=(120, 36)):
            await wait_until(gc.isenabled, message="the collector stayed paused")
            # What the start made is out of the first pass's reach.
            assert app.heap_frozen
            assert gc.get_freeze_count() > 0
        assert gc.get_freeze_count() == 0
    finally:
        gc.enable()


async def test_reading_the_vault_waits_until_the_first_screen_is_whole(
    sample_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Threads started while the first screen is drawn share the interpreter with it: the
    index, the watcher and the first pane's read start once the footer shows its keys."""
    from lore.tui.panes.ask import AskPane
    from lore.tui.widgets.footer import LoreFooter

    started: dict[str, bool] = {}

    def recording(name: str, original: Any) -> Any:
        def record(self: Any, *args: Any, **kwargs: Any) -> Any:
            footer = self.app.query_one(LoreFooter)
            started.setdefault(name, footer._shown_keys is not None)
            return original(self, *args, **kwargs)

        return record

    monkeypatch.setattr(LoreApp, "_open_index", recording("index", LoreApp._open_index))
    monkeypatch.setattr(AskPane, "refresh_data", recording("recall", AskPane.refresh_data))
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 36)):
        await wait_until(lambda: len(started) == 2, message="never started")
    assert started == {"index": True, "recall": True}


@pytest.fixture
def footer_rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per rebuild of the footer's keys."""
    from lore.tui.widgets.footer import LoreFooter

    rebuilds: list[int] = []
    original = LoreFooter.recompose

    async def counted(self: LoreFooter) -> None:
        rebuilds.append(1)
        await original(self)

    monkeypatch.setattr(LoreFooter, "recompose", counted)
    return rebuilds


async def _count_from_start_up(app: LoreApp, pilot: Any, rebuilds: list[int]) -> None:
    """Once every pane is mounted and the first footer is built, count rebuilds from zero."""
    await wait_until(lambda: app.pane("history") is not None, message="never mounted")
    await pilot.pause(0.3)
    rebuilds.clear()


async def test_a_pane_switch_rebuilds_the_footer_once_with_the_new_panes_keys(
    sample_vault: Vault, footer_rebuilds: list[int]
) -> None:
    from textual.widgets._footer import FooterKey

    from lore.tui.widgets.footer import LoreFooter

    app, rebuilds = LoreApp(LoreSession(sample_vault)), footer_rebuilds
    async with app.run_test(size=(120, 36)) as pilot:
        await _count_from_start_up(app, pilot, rebuilds)
        await pilot.press("alt+2")  # the focus leaves the prompt, then lands on the list

        def descriptions() -> list[str]:
            return [key.description for key in app.query_one(LoreFooter).query(FooterKey)]

        await wait_until(lambda: "Ask again" in descriptions(), message="footer never updated")
        await pilot.pause(0.3)
        assert len(rebuilds) == 1
        assert "Ask again" in descriptions() and "Stop" not in descriptions()


async def test_the_footer_waits_for_focus_to_land_and_skips_rebuilds_that_change_nothing(
    sample_vault: Vault, footer_rebuilds: list[int]
) -> None:
    from lore.tui.widgets import footer as footer_module

    app, rebuilds = LoreApp(LoreSession(sample_vault)), footer_rebuilds
    async with app.run_test(size=(120, 36)) as pilot:
        await _count_from_start_up(app, pilot, rebuilds)
        app.screen.refresh_bindings()
        app.screen.refresh_bindings()
        await pilot.pause(0.3)
        assert rebuilds == []  # the same keys: nothing to rebuild

        prompt = app.screen.focused
        assert prompt is not None
        app.screen.set_focus(None)
        # A slow frame between losing the focus and the next pane taking it, longer than
        # the ordinary wait: the footer still waits for the focus before it rebuilds.
        await pilot.pause(footer_module.REBUILD_DELAY * 3)
        assert rebuilds == []
        app.screen.set_focus(app.query_one("#history-list"))
        await pilot.pause(footer_module.UNFOCUSED_REBUILD_DELAY + 0.2)
        assert len(rebuilds) == 1


async def test_slash_commands_reach_the_app_by_message(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 36)) as pilot:
        prompt = app.query_one(PromptArea)
        prompt.focus()
        prompt.set_prompt("/model ollama:llama3")
        await pilot.press("enter")
        await wait_until(
            lambda: "ollama · llama3" in str(app.query_one("#header-model", Static).render())
        )
        prompt.set_prompt("/history")
        await pilot.press("enter")  # takes the completion
        await wait_until(lambda: prompt.text == "/history ")
        await pilot.press("enter")
        await wait_until(lambda: app.tab_bar.active == "history")
