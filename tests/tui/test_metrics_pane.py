"""The Metrics pane: totals, percentiles, per-model rows, sparklines, recent asks in place."""

from __future__ import annotations

import io

from pane_harness import PaneHost, wait_until
from rich.console import Console
from textual.widgets import DataTable, Sparkline, Static

from lore.core.metrics import MetricsStore, summarise
from lore.core.session import LoreSession
from lore.core.turns import Turn, TurnTimings, TurnUsage
from lore.core.vault import Vault
from lore.tui.messages import VaultChanged
from lore.tui.panes.metrics import MetricsPane, SummaryGrid, summary_cells


def _record(
    store: MetricsStore,
    n: int,
    *,
    model: str = "llama3",
    total_ms: float = 1000.0,
    status: str = "ok",
    reported: bool = True,
) -> None:
    turn = Turn(
        id=f"t{n:011d}",
        time=f"2026-11-30T10:{n // 60:02d}:{n % 60:02d}Z",
        question=f"q{n}",
        answer="a",
        provider="ollama",
        model=model,
        status=status,  # type: ignore[arg-type]
        usage=TurnUsage(
            estimated_prompt_tokens=500,
            estimated_completion_tokens=90,
            prompt_tokens=520 if reported else None,
            completion_tokens=100 if reported else None,
        ),
        timings=TurnTimings(retrieval_ms=4.0, first_token_ms=200.0, total_ms=total_ms),
    )
    store.record(
        turn,
        evidence_count=5,
        dropped=["notes/x.md"] if n % 4 == 0 else [],
        citations_kept=2,
        citations_removed=1 if n % 5 == 0 else 0,
        estimated_prompt_tokens=500,
    )


def _totals(pane: MetricsPane) -> str:
    content = pane.query_one("#metrics-totals", Static).content
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(content)
    return " ".join(console.export_text().split())


async def test_empty_metrics_say_how_to_get_some(vault: Vault) -> None:
    app = PaneHost(lambda: MetricsPane(LoreSession(vault)))
    async with app.run_test(size=(160, 45)):
        pane = app.query_one(MetricsPane)
        await wait_until(lambda: pane.view is not None)
        assert "No asks recorded yet" in str(pane.query_one("#metrics-totals", Static).render())
        assert pane.query_one("#metrics-recent", DataTable).row_count == 0


async def test_totals_percentiles_models_and_sparklines(vault: Vault) -> None:
    store = MetricsStore(vault)
    # 1.0 s .. 2.0 s on one model, a slow second model, and one cancelled ask.
    for n in range(10):
        _record(store, n, total_ms=1000.0 + 100 * n)
    _record(store, 10, model="mistral", total_ms=5000.0, reported=False)
    _record(store, 11, status="cancelled", total_ms=300.0)
    app = PaneHost(lambda: MetricsPane(LoreSession(vault)))
    async with app.run_test(size=(180, 45)):
        pane = app.query_one(MetricsPane)
        await wait_until(lambda: pane.view is not None)
        totals = _totals(pane)
        assert "Asks 12 ok 11 · cancelled 1" in totals and "failed" not in totals
        assert "Tokens, last 12 asks" in str(pane.query_one("#spark-tokens-label").render())
        assert "Latency p50 1.50 s · p95 5.00 s" in totals
        assert "First token p50 200 ms · p95 200 ms" in totals
        assert "(some est.)" in totals and "Citations 24 kept · 3 removed" in totals

        models = pane.query_one("#metrics-models", DataTable)
        assert models.row_count == 2
        llama = models.get_row("ollama:llama3")
        assert str(llama[1]) == "11" and llama[2] == "1.40 s"
        mistral = models.get_row("ollama:mistral")
        assert mistral[2] == "5.00 s" and str(mistral[6]) == "500"

        recent = pane.query_one("#metrics-recent", DataTable)
        assert recent.row_count == 12
        newest = recent.get_row_at(0)
        assert str(newest[0]) == "2026-11-30 10:00:11" and str(newest[2]) == "cancelled"
        mistral_row = recent.get_row("t00000000010")
        assert str(mistral_row[3]) == "~500" and str(mistral_row[4]) == "~90"
        assert str(recent.get_row("t00000000000")[10]) == "2 (−1)"

        latency = pane.query_one("#spark-latency", Sparkline)
        assert list(latency.data or []) == [(1000 + 100 * n) / 1000 for n in range(10)] + [5.0]
        tokens = pane.query_one("#spark-tokens", Sparkline)
        assert len(list(tokens.data or [])) == 12


async def test_new_asks_are_added_in_place(vault: Vault) -> None:
    store = MetricsStore(vault)
    for n in range(3):
        _record(store, n)
    app = PaneHost(lambda: MetricsPane(LoreSession(vault)))
    async with app.run_test(size=(160, 45)):
        pane = app.query_one(MetricsPane)
        recent = pane.query_one("#metrics-recent", DataTable)
        await wait_until(lambda: recent.row_count == 3)
        first_keys = {row.value for row in recent.rows}
        _record(store, 3, total_ms=4200.0)
        pane.post_message(VaultChanged(frozenset({"metrics"})))
        await wait_until(lambda: recent.row_count == 4)
        assert first_keys < {row.value for row in recent.rows}
        assert recent.get_row_at(0)[6] == "4.20 s"
        assert "Asks 4" in _totals(pane)


async def test_window_key_switches_what_the_figures_cover(vault: Vault) -> None:
    store = MetricsStore(vault)
    for n in range(150):
        _record(store, n, total_ms=100.0 if n < 50 else 2000.0)
    app = PaneHost(lambda: MetricsPane(LoreSession(vault)))
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.query_one(MetricsPane)
        await wait_until(lambda: pane.view is not None)
        assert "Asks 150" in _totals(pane) and "over the last 1,000 asks" in _totals(pane)
        pane.focus_default()
        await pilot.press("w")
        await wait_until(lambda: pane.view is not None and pane.view.window == 100)
        assert "Asks 100" in _totals(pane) and "p50 2.00 s" in _totals(pane)
        await pilot.press("w")
        await wait_until(lambda: pane.view is not None and pane.view.window is None)
        assert "Asks 150" in _totals(pane) and "over every ask" in _totals(pane)
        # The recent table keeps its most recent rows whatever the window.
        assert pane.query_one("#metrics-recent", DataTable).row_count == 150


def test_the_totals_use_as_many_columns_as_the_width_holds(vault: Vault) -> None:
    store = MetricsStore(vault)
    for n in range(3):
        _record(store, n)
    cells = summary_cells(summarise(store.tail(10)), 1000)

    def drawn(width: int) -> list[str]:
        out = io.StringIO()
        Console(file=out, width=width, color_system=None).print(SummaryGrid(cells))
        return [line.rstrip() for line in out.getvalue().splitlines()]

    wide, classic, narrow = drawn(160), drawn(80), drawn(36)
    assert len(wide) == 3 and "Asks" in wide[0] and "over the last 1,000 asks" in wide[0]
    assert len(classic) == 4 and "Asks" in classic[0] and "Tokens" in classic[0]
    assert len(narrow) == len(cells)  # one cell a line, none wrapped
    assert all(len(line) <= 36 for line in narrow)


async def test_a_table_is_as_wide_as_its_rows_in_the_very_frame_they_arrive(vault: Vault) -> None:
    store = MetricsStore(vault)
    _record(store, 0, model="a-model-with-a-long-name-that-widens-its-column")
    app = PaneHost(lambda: MetricsPane(LoreSession(vault)))
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.query_one(MetricsPane)
        models = pane.query_one("#metrics-models", DataTable)
        await wait_until(lambda: models.row_count == 1)
        await pilot.pause()
        # Rows arrive and a frame is drawn before the table is next idle: its header must
        # already be as wide as the rows under it, not as wide as the labels.
        longer = "an-even-longer-model-name-that-widens-the-model-column-again"
        _record(store, 1, model=longer)
        pane._show_models(summarise(list(store.iter_records())))
        header = models.render_line(0).text
        assert header.index("Asks") > len(longer), header


async def test_a_model_name_is_shown_as_text_never_as_markup_or_control(vault: Vault) -> None:
    store = MetricsStore(vault)
    # A name as a hand-edited metrics.jsonl or a server's reply might carry it.
    _record(store, 0, model="evil[/bold][link=http://x]m[/link]\x1b]0;title\x07")
    app = PaneHost(lambda: MetricsPane(LoreSession(vault)))
    async with app.run_test(size=(180, 45)) as pilot:
        pane = app.query_one(MetricsPane)
        models = pane.query_one("#metrics-models", DataTable)
        recent = pane.query_one("#metrics-recent", DataTable)
        await wait_until(lambda: models.row_count == 1 and recent.row_count == 1)
        await pilot.pause()
        for table in (models, recent):
            row = table.render_line(1).text
            assert "evil[/bold][link=http://x]m[/link]" in row, row
            assert "\x1b" not in row and "\x07" not in row
