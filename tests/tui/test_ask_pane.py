"""The Ask pane in the real app: streaming, cancel, citations, recall, slash commands, preview."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from pane_harness import wait_until
from textual.widgets import Markdown

from lore.core.history import HistoryStore
from lore.core.memory import MemoryStore
from lore.core.providers.base import ChatMessage, Chunk, GenerationOptions, Usage
from lore.core.session import LoreSession
from lore.core.vault import Vault
from lore.tui.app import LoreApp
from lore.tui.panes.ask import MAX_MOUNTED_TURNS, AskPane
from lore.tui.widgets.ask_turn import AskTurn, link_citations
from lore.tui.widgets.completion import SlashCompletions
from lore.tui.widgets.meter import ContextMeter
from lore.tui.widgets.preview import ContextPreview
from lore.tui.widgets.prompt import PromptArea


class ScriptedProvider:
    """Streams a fixed reply word by word; `hold` keeps it waiting after the first words."""

    name = "scripted"
    model = "fake-1"

    def __init__(self, reply: str, *, delay: float = 0.01, hold_after: int | None = None) -> None:
        self.reply = reply
        self.delay = delay
        self.hold_after = hold_after
        self.release = asyncio.Event()
        self.prompts: list[list[ChatMessage]] = []

    async def stream(
        self, messages: list[ChatMessage], options: GenerationOptions | None = None
    ) -> AsyncIterator[Chunk]:
        self.prompts.append(messages)
        for number, word in enumerate(self.reply.split(" ")):
            if self.hold_after is not None and number == self.hold_after:
                await self.release.wait()
            await asyncio.sleep(self.delay)
            yield Chunk(text=word + " ")
        yield Chunk(usage=Usage(prompt_tokens=120, completion_tokens=12), done=True)

    async def aclose(self) -> None:
        return None


def ask_pane(app: LoreApp) -> AskPane:
    return app.query_one(AskPane)


async def type_and_send(pilot: object, app: LoreApp, text: str) -> None:
    prompt = app.query_one(PromptArea)
    prompt.focus()
    prompt.set_prompt(text)
    await pilot.press("enter")  # type: ignore[attr-defined]


async def test_an_answer_streams_in_and_is_recorded_with_links(sample_vault: Vault) -> None:
    # Slow enough that the live status is on screen for a second, even on a loaded machine.
    provider = ScriptedProvider("Europa hides a salty ocean under its ice [1].", delay=0.12)
    app = LoreApp(LoreSession(sample_vault, provider))
    async with app.run_test(size=(120, 36)) as pilot:
        await type_and_send(pilot, app, "Does Europa have an ocean?")
        turn = await _first_turn(app)
        # While streaming, the status line shows the live figures.
        await wait_until(lambda: "first token" in str(app.query_one("#ask-status").render()))
        await wait_until(
            lambda: "tokens" in str(turn.query_one(".ask-figures").render()), timeout=8
        )
        markdown = turn.query_one(Markdown).source
        assert "salty ocean" in markdown
        assert "(note:" in markdown  # the [1] citation became a link to the note
        assert "**Sources:**" in markdown
        assert app.query_one(PromptArea).text == ""
        history = HistoryStore(sample_vault).tail(5)
        assert [turn.status for turn in history] == ["ok"]
        assert history[0].cited


async def test_escape_cancels_keeps_the_partial_answer_and_restores_the_prompt(
    sample_vault: Vault,
) -> None:
    provider = ScriptedProvider("Partial words then a long pause forever", hold_after=3)
    app = LoreApp(LoreSession(sample_vault, provider))
    async with app.run_test(size=(120, 36)) as pilot:
        await type_and_send(pilot, app, "Tell me about Io")
        turn = await _first_turn(app)
        await wait_until(lambda: "Partial" in turn.query_one(Markdown).source)
        await pilot.press("escape")
        await wait_until(lambda: turn.has_class("-cancelled"), message="never cancelled")
        assert "Partial" in turn.query_one(Markdown).source
        assert app.query_one(PromptArea).text == "Tell me about Io"
        await wait_until(lambda: HistoryStore(sample_vault).count() == 1)
        assert HistoryStore(sample_vault).tail(1)[0].status == "cancelled"
        assert not ask_pane(app).is_asking


async def test_a_citation_link_opens_the_note_in_notes_pane(sample_vault: Vault) -> None:
    provider = ScriptedProvider("See the note [1].")
    app = LoreApp(LoreSession(sample_vault, provider))
    async with app.run_test(size=(120, 36)) as pilot:
        await type_and_send(pilot, app, "What is the Great Red Spot on Jupiter?")
        turn = await _first_turn(app)
        await wait_until(lambda: "(note:" in turn.query_one(Markdown).source, timeout=20)
        pane = ask_pane(app)
        number, title, note_id = pane.last_sources[0]
        assert number == 1
        turn.query_one(Markdown).post_message(
            Markdown.LinkClicked(turn.query_one(Markdown), f"note:{note_id}")
        )
        await wait_until(lambda: app.active_pane == "notes")

        def shown() -> str | None:
            current = getattr(app.pane("notes"), "current", None)
            return current.note.title if current else None

        await wait_until(lambda: shown() == title, message="the cited note never opened")


async def test_f3_lists_the_cited_notes_and_opens_the_one_picked(sample_vault: Vault) -> None:
    from textual.command import CommandPalette

    app = LoreApp(LoreSession(sample_vault, ScriptedProvider("Storms [1] and bands [2].")))
    async with app.run_test(size=(120, 36)) as pilot:
        pane = ask_pane(app)
        app.query_one(PromptArea).focus()
        await pilot.pause()
        await pilot.press("f3")
        await wait_until(lambda: any("cited no notes" in n.message for n in app._notifications))
        assert not isinstance(app.screen, CommandPalette)

        await type_and_send(pilot, app, "What is the Great Red Spot on Jupiter?")
        await wait_until(lambda: not pane.is_asking and pane.last_sources, timeout=20)
        assert len(pane.last_sources) == 2, pane.last_sources
        second_title = pane.last_sources[1][1]
        await pilot.press("f3")
        await wait_until(lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"[2]")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_until(lambda: app.active_pane == "notes")

        def shown() -> str | None:
            current = getattr(app.pane("notes"), "current", None)
            return current.note.title if current else None

        await wait_until(lambda: shown() == second_title, message="the cited note never opened")


async def test_an_over_long_question_is_one_notification_and_stays_in_the_prompt(
    sample_vault: Vault,
) -> None:
    provider = ScriptedProvider("unused")
    app = LoreApp(LoreSession(sample_vault, provider))
    limit = sample_vault.config.ask.max_question_chars
    pasted = "Tell me about Europa. " * (limit // 10)
    async with app.run_test(size=(120, 36)) as pilot:
        await type_and_send(pilot, app, pasted)
        await wait_until(lambda: any("over the limit" in n.message for n in app._notifications))
        await pilot.pause()
        assert app.query_one(PromptArea).text == pasted
        assert not app.query(AskTurn) and not provider.prompts
        assert HistoryStore(sample_vault).count() == 0


async def test_up_and_down_recall_earlier_questions(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault, ScriptedProvider("Fine.")))
    async with app.run_test(size=(120, 36)) as pilot:
        pane = ask_pane(app)
        for question in ("first question", "second question"):
            await type_and_send(pilot, app, question)
            await wait_until(lambda: not pane.is_asking and HistoryStore(sample_vault).count() > 0)
            await wait_until(lambda: not pane.is_asking)
        prompt = app.query_one(PromptArea)
        prompt.set_prompt("draft")
        await pilot.press("up")
        assert prompt.text == "second question"
        await pilot.press("up")
        assert prompt.text == "first question"
        await pilot.press("down", "down")
        assert prompt.text == "draft"


async def test_ctrl_j_inserts_a_newline_and_enter_sends_both_lines(sample_vault: Vault) -> None:
    provider = ScriptedProvider("Ok.")
    app = LoreApp(LoreSession(sample_vault, provider))
    async with app.run_test(size=(120, 36)) as pilot:
        app.query_one(PromptArea).focus()
        await pilot.press(*"line one")
        await pilot.press("ctrl+j")
        await pilot.press(*"line two")
        assert app.query_one(PromptArea).text == "line one\nline two"
        await pilot.press("enter")
        await wait_until(lambda: HistoryStore(sample_vault).count() == 1, timeout=20)
        assert HistoryStore(sample_vault).tail(1)[0].question == "line one\nline two"


async def test_slash_opens_fuzzy_completion_and_tab_completes(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault, ScriptedProvider("unused")))
    async with app.run_test(size=(120, 36)) as pilot:
        app.query_one(PromptArea).focus()
        await pilot.press("slash")
        completions = app.query_one(SlashCompletions)
        assert completions.is_open and len(completions.matches) > 5
        await pilot.press("h", "s", "t")
        assert completions.matches[0].name == "history"
        await pilot.press("escape")
        assert not completions.is_open
        app.query_one(PromptArea).set_prompt("/the")
        await pilot.pause()
        assert completions.chosen() is not None and completions.chosen().name == "theme"
        await pilot.press("tab")
        assert app.query_one(PromptArea).text == "/theme "
        await pilot.press(*"lore-high-contrast")
        await pilot.press("enter")
        await wait_until(lambda: app.theme == "lore-high-contrast", message="theme not switched")
        assert app.query_one(PromptArea).text == ""


async def test_an_unknown_command_is_one_notification_and_keeps_the_text(
    sample_vault: Vault,
) -> None:
    app = LoreApp(LoreSession(sample_vault, ScriptedProvider("unused")))
    async with app.run_test(size=(120, 36)) as pilot:
        await type_and_send(pilot, app, "/frobnicate now")
        await wait_until(lambda: any("/frobnicate" in n.message for n in app._notifications))
        assert app.query_one(PromptArea).text == "/frobnicate now"
        await type_and_send(pilot, app, "/search ocean")
        turn = await _first_turn(app)
        await wait_until(lambda: "Europa" in turn.query_one(Markdown).source)


async def test_the_preview_follows_the_question_being_typed(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault, ScriptedProvider("unused")))
    async with app.run_test(size=(120, 40)) as pilot:
        meter = app.query_one(ContextMeter)
        await wait_until(lambda: meter.used is not None, message="the meter never filled")
        empty = meter.used
        await pilot.press("f2")
        preview = app.query_one(ContextPreview)
        assert preview.display
        app.query_one(PromptArea).focus()
        await pilot.press(*"volcanoes on Io")
        await wait_until(
            lambda: preview.pack is not None and preview.pack.question == "volcanoes on Io",
            message="the preview never caught up",
        )
        assert preview.pack is not None
        assert any(item.label == "Io" for item in preview.pack.notes())
        # The meter hears of the new size by a message to the app, a moment after the panel.
        total = preview.pack.total_tokens
        await wait_until(lambda: meter.used == total, message="the meter never caught up")
        assert meter.used is not None and meter.used > (empty or 0)
        assert meter.used == preview.pack.total_tokens


async def test_only_the_newest_turns_stay_mounted(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault, ScriptedProvider("unused")))
    async with app.run_test(size=(120, 36)):
        pane = ask_pane(app)
        for number in range(MAX_MOUNTED_TURNS + 5):
            await pane._mount_turn(AskTurn(f"question {number}"))
        turns = list(app.query(AskTurn))
        assert len(turns) == MAX_MOUNTED_TURNS
        assert turns[-1].question == f"question {MAX_MOUNTED_TURNS + 4}"


def test_citations_in_code_are_left_alone() -> None:
    text = "Io [1] and `items[1]` and\n```\nx = a[1]\n```\nbut [2] and [9]."
    linked = link_citations(text, {1: "n-io", 2: "n-eu"})
    assert "[\\[1\\]](note:n-io)" in linked
    assert "`items[1]`" in linked and "x = a[1]" in linked
    assert "[\\[2\\]](note:n-eu)" in linked and "[9]" in linked


async def _first_turn(app: LoreApp) -> AskTurn:
    await wait_until(lambda: len(app.query(AskTurn)) > 0, message="no turn appeared")
    return app.query(AskTurn).last()


async def test_prompt_is_compact_without_a_border_of_its_own(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 36)):
        prompt = app.query_one(PromptArea)
        assert prompt.compact and prompt.has_class("-textual-compact")
        assert prompt.styles.border_top[0] in ("", "none")
        prompt.compact = False
        assert not prompt.has_class("-textual-compact")
        assert prompt.styles.border_top[0] == "tall"


async def test_compaction_after_an_answer_is_told_to_the_user(sample_vault: Vault) -> None:
    sample_vault.config.history.compact_threshold_tokens = 100
    sample_vault.config.history.keep_recent_turns = 2
    provider = ScriptedProvider("Europa has an ocean under its ice [1].", delay=0.001)
    app = LoreApp(LoreSession(sample_vault, provider))
    async with app.run_test(size=(120, 36)) as pilot:
        for question in [f"What is the {n}th largest moon of Saturn?" for n in range(2, 8)]:
            await type_and_send(pilot, app, question)
            await wait_until(lambda: app.query_one(PromptArea).text == "")
            await wait_until(lambda: not ask_pane(app).is_asking, timeout=30)
        assert MemoryStore(sample_vault).levels(), "the asks never passed the threshold"
        await wait_until(
            lambda: any("into memory" in n.message for n in app._notifications),
            message="compaction happened but the app said nothing",
        )


async def test_the_welcome_line_names_remapped_keys(sample_vault: Vault) -> None:
    sample_vault.config.keymap = {"ask.preview": "f6", "ask.sources": "ctrl+s"}
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(120, 36)):
        welcome = str(app.query_one("#ask-welcome").render())
        assert "F6 shows what the next question would send" in welcome
        assert "Ctrl+S opens a note" in welcome and "F2" not in welcome
        assert "Esc stops an answer" in welcome
