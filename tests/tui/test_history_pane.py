"""The History pane: every turn, virtual at 100,000 turns, search, actions, compaction."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from pane_harness import PaneHost, wait_until
from textual.widgets import Input, OptionList, Static

from lore.core.history import HistoryStore
from lore.core.session import LoreSession
from lore.core.turns import Turn, TurnTimings, TurnUsage
from lore.core.vault import Vault
from lore.tui.messages import AskQuestion, OpenNote, VaultChanged
from lore.tui.panes.history import HistoryPane
from lore.tui.widgets.history_list import HistoryList

PLANETS = ["Mercury", "Venus", "Earth", "Mars", "Jupiter", "Saturn", "Uranus", "Neptune"]


def _turn(n: int, **fields: object) -> Turn:
    planet = PLANETS[n % len(PLANETS)]
    values: dict[str, object] = {
        "id": f"t{n:011d}",
        "time": f"2026-11-{1 + n % 28:02d}T10:{n % 60:02d}:00Z",
        "question": f"Question {n}: how far is {planet} from the Sun?",
        "answer": f"Answer {n}: {planet} is far away [1].",
        "cited": [f"notes/{planet.lower()}.md"],
        "model": "offline",
        "usage": TurnUsage(estimated_prompt_tokens=300 + n % 50, estimated_completion_tokens=40),
        "timings": TurnTimings(first_token_ms=120.0, total_ms=900.0),
    }
    values.update(fields)
    return Turn.model_validate(values)


def _write_history(vault: Vault, count: int) -> None:
    """A long history written in one go, as years of asking would leave it."""
    with open(vault.layout.history, "w", encoding="utf-8") as handle:
        for n in range(count):
            handle.write(json.dumps(_turn(n).to_record()) + "\n")


def _detail(pane: HistoryPane) -> str:
    return pane.detail_source


def _cited(pane: HistoryPane) -> list[str]:
    cited = pane.query_one("#history-cited", OptionList)
    return [str(cited.get_option_at_index(i).prompt) for i in range(cited.option_count)]


def _rows(pane: HistoryPane) -> list[str]:
    return pane.query_one(HistoryList).rows_on_screen()


async def test_turns_are_listed_newest_first_with_the_highlighted_turn_in_detail(
    vault: Vault,
) -> None:
    store = HistoryStore(vault)
    for n in range(3):
        store.append(_turn(n))
    store.append(_turn(3, status="cancelled", answer="Answer 3: partial"))
    app = PaneHost(lambda: HistoryPane(LoreSession(vault)))
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(HistoryPane)
        await wait_until(lambda: len(_rows(pane)) == 4 and _rows(pane)[0].strip() != "…")
        rows = _rows(pane)
        assert "Question 3" in rows[0] and "⊘" in rows[0]
        assert "Question 0" in rows[3] and "340 tok" in rows[3]
        assert str(pane.query_one("#history-count", Static).render()) == "4 turns"
        await wait_until(lambda: "Cancelled before the answer" in _detail(pane))
        pane.focus_default()
        await pilot.press("down")
        await wait_until(lambda: "Answer 2: Earth is far away" in _detail(pane))
        assert _cited(pane) == ["notes/earth.md"]
        meta = str(pane.query_one("#history-turn-meta", Static).render())
        assert "offline" in meta and "302 → 40 tokens (estimated)" in meta
        assert "first token 0.12 s" in meta and "total 0.90 s" in meta


async def test_a_hundred_thousand_turns_scroll_without_reading_them_all(vault: Vault) -> None:
    _write_history(vault, 100_000)
    read: list[tuple[int, int]] = []
    app = PaneHost(lambda: HistoryPane(LoreSession(vault)))
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(HistoryPane)
        history = pane.query_one(HistoryList)
        original = history._read_page
        history._read_page = lambda start, stop: read.append((start, stop)) or original(start, stop)
        await wait_until(lambda: history.row_count == 100_000, timeout=20)
        await wait_until(lambda: "Question 99999" in _rows(pane)[0])
        history.focus()
        started = time.perf_counter()
        await pilot.press("pagedown")
        await wait_until(lambda: all(row.strip() != "…" for row in _rows(pane)))
        assert time.perf_counter() - started < 2.0
        await pilot.press("end")
        await wait_until(lambda: _rows(pane) and "Question 0:" in _rows(pane)[-1])
        await wait_until(lambda: "Answer 0:" in _detail(pane))
        # Only the pages looked at were read, not the whole file.
        assert sum(stop - start for start, stop in read) <= 2_000


async def test_search_filters_every_turn_and_escape_shows_all_again(vault: Vault) -> None:
    _write_history(vault, 500)
    app = PaneHost(lambda: HistoryPane(LoreSession(vault)))
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(HistoryPane)
        history = pane.query_one(HistoryList)
        await wait_until(lambda: history.row_count == 500)
        history.focus()
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"neptune question")
        await wait_until(lambda: history.row_count == 62, message="search did not filter")
        assert all("Neptune" in row for row in _rows(pane))
        assert "62 of 500 turns match" in str(pane.query_one("#history-count", Static).render())
        await pilot.press("enter")
        assert app.focused is history
        await pilot.press("escape")
        await wait_until(lambda: history.row_count == 500)


async def test_a_search_with_no_match_says_so(vault: Vault) -> None:
    _write_history(vault, 20)
    app = PaneHost(lambda: HistoryPane(LoreSession(vault)))
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(HistoryPane)
        await wait_until(lambda: pane.total == 20)
        pane.query_one("#history-search", Input).focus()
        await pilot.press(*"pluto")
        await wait_until(lambda: "Nothing matches" in _detail(pane))
        assert pane.query_one(HistoryList).row_count == 0


async def test_keys_ask_again_open_in_ask_and_copy(vault: Vault) -> None:
    _write_history(vault, 3)
    app = PaneHost(lambda: HistoryPane(LoreSession(vault)))
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(HistoryPane)
        await wait_until(lambda: pane.query_one(HistoryList).highlighted_turn is not None)
        pane.focus_default()
        await pilot.press("r")
        await pilot.press("down", "o")
        await pilot.press("c")
        await pilot.pause()
        asked = [m for m in app.received if isinstance(m, AskQuestion)]
        assert [(m.question, m.submit) for m in asked] == [
            ("Question 2: how far is Earth from the Sun?", True),
            ("Question 1: how far is Venus from the Sun?", False),
        ]
        assert app.copied and "## Question 1: how far is Venus" in app.copied[-1]
        assert "Answer 1: Venus is far away" in app.copied[-1]


async def test_citations_are_named_and_open_the_note(vault: Vault) -> None:
    note = vault.create_note("Mercury", "# Mercury\n\nThe closest planet.\n")
    HistoryStore(vault).append(_turn(0, cited=[note.id, "notes/mercury.md"]))
    app = PaneHost(lambda: HistoryPane(LoreSession(vault)))
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(HistoryPane)
        # Citations are note ids or paths; the list names them by title.
        await wait_until(
            lambda: _cited(pane) == [f"Mercury  {note.id}", "Mercury  notes/mercury.md"]
        )
        pane.focus_default()
        await pilot.press("enter")
        assert app.focused is pane.query_one("#history-cited", OptionList)
        await pilot.press("down", "enter")
        await wait_until(lambda: any(isinstance(m, OpenNote) for m in app.received))
        assert [m.ref for m in app.received if isinstance(m, OpenNote)] == ["notes/mercury.md"]


@pytest.mark.parametrize("suffix", ["jsonl", "md"])
async def test_export_writes_the_shown_turns(vault: Vault, tmp_path: Path, suffix: str) -> None:
    _write_history(vault, 40)
    target = tmp_path / f"out.{suffix}"
    app = PaneHost(lambda: HistoryPane(LoreSession(vault)))
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(HistoryPane)
        history = pane.query_one(HistoryList)
        await wait_until(lambda: history.row_count == 40)
        pane.query_one("#history-search", Input).focus()
        await pilot.press(*"saturn")
        await wait_until(lambda: history.row_count == 5)
        history.focus()
        await pilot.press("x")
        path_input = app.screen.query_one("#export-path", Input)
        path_input.value = str(target)
        await pilot.press("enter")
        await wait_until(target.exists, message="nothing exported")
    text = target.read_text()
    if suffix == "jsonl":
        questions = [json.loads(line)["question"] for line in text.splitlines()]
        # Oldest first, as in the history file.
        assert [q.split(":")[0] for q in questions] == [
            "Question 5",
            "Question 13",
            "Question 21",
            "Question 29",
            "Question 37",
        ]
    else:
        assert text.count("## Question") == 5 and "Saturn" in text and "Venus" not in text


async def test_compact_now_shows_tokens_before_and_after(vault: Vault) -> None:
    vault.config.history.compact_threshold_tokens = 500
    vault.config.history.keep_recent_turns = 2
    _write_history(vault, 30)
    app = PaneHost(lambda: HistoryPane(LoreSession(vault)))
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(HistoryPane)
        await wait_until(lambda: pane.memory is not None)
        assert pane.memory is not None and pane.memory.compaction_due
        before = str(pane.query_one("#history-memory", Static).render())
        assert "(compaction due)" in before and "nothing compacted yet" in before
        pane.focus_default()
        await pilot.press("m")
        await wait_until(lambda: pane.memory is not None and pane.memory.live_turns == 2)
        messages = [n.message for n in app._notifications]
        assert any(m.startswith("Compacted 28 turns: live history") for m in messages)
        status = str(pane.query_one("#history-memory", Static).render())
        assert "Live 2 turns" in status and "L1 4×" in status and "watermark t00000000027" in status
        # Every turn is still in the history file and in the list.
        assert HistoryStore(vault).count() == 30
        assert pane.query_one(HistoryList).row_count == 30


async def test_compact_now_uses_the_model_chosen_with_slash_model(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lore.core.compaction as compaction

    used: list[object] = []
    real_compact = compaction.compact

    def fake_compact(vault: Vault, **options: object) -> object:
        used.append(options.get("provider"))
        return real_compact(vault, provider=None, dry_run=True)

    monkeypatch.setattr(compaction, "compact", fake_compact)
    _write_history(vault, 3)
    session = LoreSession(vault)
    session.use_model("ollama", "llama3")
    app = PaneHost(lambda: HistoryPane(session))
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(HistoryPane)
        await wait_until(lambda: pane.memory is not None)
        pane.focus_default()
        await pilot.press("m")
        await wait_until(lambda: used, message="compaction never ran")
    # Compaction runs on a thread of its own: a provider like the answering one, not it.
    assert used[0] is not None and used[0] is not session.provider
    assert getattr(used[0], "model", "") == "llama3"


async def test_turns_appended_by_another_process_appear_on_top(vault: Vault) -> None:
    _write_history(vault, 5)
    app = PaneHost(lambda: HistoryPane(LoreSession(vault)))
    async with app.run_test(size=(140, 40)):
        pane = app.query_one(HistoryPane)
        await wait_until(lambda: pane.total == 5)
        HistoryStore(vault).append(_turn(99, question="What about Pluto?"))
        pane.post_message(VaultChanged(frozenset({"history"})))
        await wait_until(lambda: "What about Pluto?" in _rows(pane)[0])
        assert pane.total == 6


async def test_the_palette_offers_actions_on_the_highlighted_turn(vault: Vault) -> None:
    _write_history(vault, 2)
    app = PaneHost(lambda: HistoryPane(LoreSession(vault)))
    async with app.run_test(size=(140, 40)):
        pane = app.query_one(HistoryPane)
        await wait_until(lambda: pane.query_one(HistoryList).highlighted_turn is not None)
        offered = {name: run for name, _, run in pane.palette_commands()}
        assert "Compact history now" in offered and "Export history" in offered
        offered["Ask again: Question 1: how far is Venus from the Sun?"]()
        await wait_until(lambda: app.received)
        assert isinstance(app.received[0], AskQuestion) and app.received[0].submit


async def test_garbage_and_torn_lines_do_not_break_the_list(vault: Vault) -> None:
    _write_history(vault, 3)
    with open(vault.layout.history, "a", encoding="utf-8") as handle:
        handle.write("this line is not JSON at all\n")
        handle.write(json.dumps(_turn(3).to_record()) + "\n")
        handle.write('{"id": "t-torn", "question": "cut off mid-wri')
    app = PaneHost(lambda: HistoryPane(LoreSession(vault)))
    async with app.run_test(size=(140, 40)):
        pane = app.query_one(HistoryPane)
        history = pane.query_one(HistoryList)
        await wait_until(lambda: history.row_count > 0 and "Question 3" in _rows(pane)[0])
        shown = "\n".join(_rows(pane))
        assert all(f"Question {n}:" in shown for n in range(4))
        assert "cut off" not in shown


async def test_nothing_is_read_until_the_pane_is_first_shown(vault: Vault) -> None:
    from lore.tui.app import LoreApp

    _write_history(vault, 5)
    app = LoreApp(LoreSession(vault))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(lambda: app.query(HistoryPane))
        pane = app.query_one(HistoryPane)
        await pilot.pause(0.3)
        # Starting the app leaves the disk to the pane the user is looking at.
        assert pane.total == 0 and pane.memory is None
        app.show_pane("history")
        await wait_until(lambda: pane.total == 5 and pane.memory is not None)


async def test_rows_fit_beside_the_scrollbar(vault: Vault) -> None:
    _write_history(vault, 500)
    app = PaneHost(lambda: HistoryPane(LoreSession(vault)))
    async with app.run_test(size=(140, 40)):
        pane = app.query_one(HistoryPane)
        await wait_until(lambda: pane.total == 500 and "Question 499" in _rows(pane)[0])
        # Each row ends with its full timing, not cut off by the scrollbar.
        assert all(row.endswith("0.9s") for row in _rows(pane))


async def test_rows_far_down_are_read_when_reached_and_decode_to_their_turn(vault: Vault) -> None:
    _write_history(vault, 1000)
    app = PaneHost(lambda: HistoryPane(LoreSession(vault)))
    async with app.run_test(size=(140, 40)):
        pane = app.query_one(HistoryPane)
        history = pane.query_one(HistoryList)
        await wait_until(lambda: history.row_read(0) and "Question 999" in _rows(pane)[0])
        # Rows count from the newest turn: row 900 is turn 99, on a page not read yet.
        assert not history.row_read(900) and history.turn_at(900) is None
        history.move_cursor(900)
        await wait_until(lambda: history.row_read(900))
        turn = history.turn_at(900)
        assert turn is not None and turn.question.startswith("Question 99:")
        assert history.highlighted_turn == turn
        assert not history.row_read(1000)


async def test_a_page_that_fails_to_read_is_read_again_while_in_view(vault: Vault) -> None:
    from textual.app import App, ComposeResult

    from lore.errors import VaultLocked

    _write_history(vault, 1000)
    store = HistoryStore(vault)
    failures: list[tuple[int, int]] = []

    def read_lines(start: int, stop: int) -> list[bytes]:
        # The page holding row 900 finds the vault busy the first time it is read.
        if start <= 99 < stop and not failures:
            failures.append((start, stop))
            raise VaultLocked("the vault is busy")
        return store.read_lines(start, stop)

    class ListHost(App[None]):
        def compose(self) -> ComposeResult:
            yield HistoryList(read_lines)

    app = ListHost()
    async with app.run_test(size=(100, 30)):
        history = app.query_one(HistoryList)
        history.show_history(1000)
        await wait_until(lambda: history.row_read(0))
        history.move_cursor(900)
        await wait_until(lambda: history.row_read(900))
        assert failures, "the first read of the page should have failed"
        turn = history.turn_at(900)
        assert turn is not None and turn.question.startswith("Question 99:")
