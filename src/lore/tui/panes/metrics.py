"""The Metrics pane: what asks cost. Totals, latency and time-to-first-token percentiles,
tokens per second, a per-model breakdown, sparklines over time, and the recent asks."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, ClassVar

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.coordinate import Coordinate
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import DataTable, Label, Sparkline, Static
from textual.worker import get_current_worker

from lore.core.public import MetricRecord, MetricsSummary, summarise
from lore.rich_display import plain
from lore.tui.panes.base import LorePane

if TYPE_CHECKING:
    from lore.core.session import LoreSession
    from lore.tui.palette import PaletteCommand

RECENT_ROWS = 200
SPARK_POINTS = 120
# The asks the figures cover, cycled by a key: the last 100, the last 1,000, or all of them.
WINDOWS: tuple[int | None, ...] = (1000, 100, None)

RECENT_COLUMNS = (
    ("time", "Time"),
    ("model", "Model"),
    ("status", "Status"),
    ("in", "Tokens in"),
    ("out", "Tokens out"),
    ("ttft", "First token"),
    ("total", "Total"),
    ("rate", "Tok/s"),
    ("evidence", "Evidence"),
    ("dropped", "Dropped"),
    ("citations", "Citations"),
)
MODEL_COLUMNS = (
    ("model", "Model"),
    ("asks", "Asks"),
    ("p50", "p50"),
    ("p95", "p95"),
    ("ttft", "First token p50"),
    ("rate", "Tok/s"),
    ("in", "Tokens in"),
    ("out", "Tokens out"),
)
# Which columns a table too narrow for all of them keeps, most wanted first; the kept ones
# stay in the order above. The rest are in F1's description and a wider terminal.
RECENT_PRIORITY = (
    "time",
    "model",
    "status",
    "total",
    "in",
    "out",
    "ttft",
    "rate",
    "citations",
    "evidence",
    "dropped",
)
MODEL_PRIORITY = ("model", "asks", "p50", "p95", "in", "out", "rate", "ttft")
# A DataTable pads each cell by one either side, and keeps two cells for its scrollbar.
CELL_PADDING = 2
SCROLLBAR_WIDTH = 2

# One row of a table: its cells by column key.
Cells = dict[str, object]


def format_ms(ms: float | None) -> str:
    if ms is None:
        return "–"
    if ms < 1000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.2f} s"


def asks(count: int) -> str:
    return f"{count:,} ask" if count == 1 else f"{count:,} asks"


def format_rate(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:,.1f}"


def _tokens(reported: int | None, estimated: int) -> Text:
    # Lore's own estimate is marked with ~ where the provider reported nothing.
    if reported is not None:
        return Text(f"{reported:,}", justify="right")
    return Text(f"~{estimated:,}", justify="right", style="dim")


def cell_width(value: object) -> int:
    return value.cell_len if isinstance(value, Text) else cell_len(str(value))


def content_widths(columns: tuple[tuple[str, str], ...], rows: list[Cells]) -> dict[str, int]:
    """Each column's width without its padding: its widest cell, or its label."""
    return {
        key: max([cell_len(label), *(cell_width(row[key]) for row in rows if key in row)])
        for key, label in columns
    }


def fit_columns(
    columns: tuple[tuple[str, str], ...],
    priority: tuple[str, ...],
    widths: dict[str, int],
    width: int,
) -> list[str]:
    """The keys of the columns that fit in `width` cells, in table order; `widths` are the
    columns' `content_widths`.

    Columns are taken in `priority` order while they fit, so a narrow one further down may
    take room a wide one could not; the first is kept whatever the width.
    """
    needed = {key: content + CELL_PADDING for key, content in widths.items()}
    kept: set[str] = set()
    left = width
    for key in priority:
        if not kept or needed[key] <= left:
            kept.add(key)
            left -= needed[key]
    return [key for key, _ in columns if key in kept]


@dataclass
class MetricsView:
    """What the Metrics pane shows: the summary over the last `window` asks (None: all) and the
    recent records."""

    window: int | None
    summary: MetricsSummary
    recent: list[MetricRecord]


# The narrowest a column of figures gets before the summary uses fewer columns, and the
# gap between columns.
SUMMARY_COLUMN_WIDTH = 24
SUMMARY_GAP = 3


@dataclass
class SummaryGrid:
    """The totals as cells laid out in as many columns as the width holds (one to three).

    A Rich renderable, so the layout is chosen from the width it is drawn at: at 80 columns
    three columns of figures wrapped every cell onto two lines.
    """

    cells: list[Text]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = self.column_widths(options.max_width)
        table = Table.grid(padding=(0, SUMMARY_GAP), expand=True)
        for width in widths:
            # Shared out in proportion, so no column is narrower than its widest cell.
            table.add_column(ratio=width, min_width=width)
        columns = len(widths)
        for start in range(0, len(self.cells), columns):
            row = self.cells[start : start + columns]
            table.add_row(*row, *[Text("")] * (columns - len(row)))
        yield table

    def column_widths(self, width: int) -> list[int]:
        """The widths of the most columns (up to three) in which no cell wraps at `width`."""
        for columns in (3, 2):
            widths = [
                max(SUMMARY_COLUMN_WIDTH, *(cell.cell_len for cell in self.cells[first::columns]))
                for first in range(columns)
            ]
            if sum(widths) + (columns - 1) * SUMMARY_GAP <= width:
                return widths
        return [min(width, max((cell.cell_len for cell in self.cells), default=width))]


def summary_cells(summary: MetricsSummary, window: int | None) -> list[Text]:
    covered = "every ask" if window is None else f"the last {window:,} asks"
    estimated = summary.prompt_tokens != summary.reported_prompt_tokens

    def cell(label: str, value: str, note: str = "") -> Text:
        return Text.assemble((label + " ", "bold"), value, (note, "dim"))

    # Only the outcomes that happened, so the cell stays on one line.
    outcomes = " · ".join(
        f"{label} {count:,}"
        for label, count in (
            ("ok", summary.ok),
            ("cancelled", summary.cancelled),
            ("failed", summary.errors),
        )
        if count
    )
    return [
        cell("Asks", f"{summary.asks:,}", f"  {outcomes}"),
        cell(
            "Tokens",
            f"in {summary.prompt_tokens:,} · out {summary.completion_tokens:,}",
            " (some est.)" if estimated else "",
        ),
        Text(f"over {covered}", style="dim"),
        cell(
            "Latency",
            f"p50 {format_ms(summary.latency_p50_ms)} · p95 {format_ms(summary.latency_p95_ms)}",
        ),
        cell(
            "First token",
            f"p50 {format_ms(summary.first_token_p50_ms)} · "
            f"p95 {format_ms(summary.first_token_p95_ms)}",
        ),
        cell(
            "Tok/s",
            format_rate(summary.tokens_per_second),
            f"  retrieval p50 {format_ms(summary.retrieval_p50_ms)}",
        ),
        cell(
            "Citations", f"{summary.citations_kept:,} kept · {summary.citations_removed:,} removed"
        ),
        cell("Evidence dropped", f"in {asks(summary.asks_with_drops)}", " to fit"),
    ]


class MetricsPane(LorePane):
    """Figures over recent asks, updated in place as asks are recorded."""

    HELP: ClassVar[str] = """\
## Metrics

What each ask cost, from `metrics.jsonl`. Token counts are what the provider reported;
a `~` marks Lore's own estimate where it reported nothing.

- **Latency** is the whole ask; **first token** the wait before the answer started;
  **tok/s** the speed of the answer once it started. p50 is the median, p95 the slow tail.
- **Dropped** counts evidence the context pack left out to stay within its token budget.
- The sparklines show latency and tokens per ask, oldest on the left.

| Key | Does |
|---|---|
| `w` | Switch the figures between the last 1,000 asks, the last 100, and every ask |

New asks appear here as they are recorded, from this app or another process.
"""

    DEFAULT_CSS = """
    MetricsPane {
        height: 1fr;
        padding: 0 1;
    }
    MetricsPane #metrics-totals {
        height: auto;
        margin: 0 0 1 0;
    }
    MetricsPane #metrics-sparks {
        height: 4;
    }
    MetricsPane .spark-box {
        width: 1fr;
        padding: 0 1 0 0;
    }
    MetricsPane .spark-box Label {
        color: $text-muted;
    }
    MetricsPane Sparkline {
        height: 3;
    }
    MetricsPane .section {
        color: $text-muted;
        margin: 1 0 0 0;
    }
    MetricsPane #metrics-models {
        height: auto;
        max-height: 8;
    }
    MetricsPane #metrics-recent {
        height: 1fr;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "w",
            "cycle_window",
            "Window",
            id="metrics.window",
            tooltip="Figures over the last 1,000 asks, the last 100, or all",
        ),
    ]

    WATCHES: ClassVar[frozenset[str]] = frozenset({"metrics"})

    class Loaded(Message, bubble=False):
        """The figures over one window, read by a worker."""

        def __init__(self, view: MetricsView) -> None:
            super().__init__()
            self.view = view

    def __init__(self, session: LoreSession, **kwargs: object) -> None:
        super().__init__(session, **kwargs)
        self.window_index = 0
        self.view: MetricsView | None = None

    @property
    def window(self) -> int | None:
        return WINDOWS[self.window_index]

    def compose(self) -> ComposeResult:
        yield Static("Reading metrics…", id="metrics-totals")
        with Horizontal(id="metrics-sparks"):
            with Vertical(classes="spark-box"):
                yield Label("Latency per ask", id="spark-latency-label")
                yield Sparkline([], id="spark-latency")
            with Vertical(classes="spark-box"):
                yield Label("Tokens per ask", id="spark-tokens-label")
                yield Sparkline([], id="spark-tokens")
        yield Label("By model", classes="section")
        yield DataTable(id="metrics-models", cursor_type="row", zebra_stripes=True)
        yield Label(f"Recent asks (newest first, up to {RECENT_ROWS})", classes="section")
        yield DataTable(id="metrics-recent", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        try:
            models = self.query_one("#metrics-models", DataTable)
        except NoMatches:
            return  # the app closed while this pane was still being mounted
        for key, label in MODEL_COLUMNS:
            models.add_column(label, key=key)
        recent = self.query_one("#metrics-recent", DataTable)
        for key, label in RECENT_COLUMNS:
            recent.add_column(label, key=key)

    def on_resize(self) -> None:
        # Another width may hold more columns, or fewer.
        if self.view is not None:
            self._show_models(self.view.summary)
            self._show_recent(self.view.recent[-RECENT_ROWS:])

    def _fit(
        self,
        table: DataTable[object],
        columns: tuple[tuple[str, str], ...],
        priority: tuple[str, ...],
        rows: list[Cells],
    ) -> list[str] | None:
        """The columns kept at this width; their keys when the table had others, else None.

        The table is emptied when its columns change: the caller adds its rows again.
        """
        width = self.content_region.width - SCROLLBAR_WIDTH
        if width <= 0:
            return None  # not laid out yet: fitted once it is, on its first resize
        # Widths are set, not measured by the table when it is next idle: a frame drawn before
        # that kept the header at the labels' widths above wider rows.
        widths = content_widths(columns, rows)
        kept = fit_columns(columns, priority, widths, width)
        shown = [(column.key.value, column.width) for column in table.ordered_columns]
        if shown == [(key, widths[key]) for key in kept]:
            return None
        labels = dict(columns)
        table.clear(columns=True)
        for key in kept:
            table.add_column(labels[key], key=key, width=widths[key])
        return kept

    @staticmethod
    def _shown_columns(table: DataTable[object]) -> list[str]:
        return [str(column.key.value) for column in table.ordered_columns]

    def focus_default(self) -> None:
        self.query_one("#metrics-recent", DataTable).focus()

    # -- loading -----------------------------------------------------------------------------

    def refresh_data(self) -> None:
        self._load(self.window)

    @work(thread=True, exclusive=True, exit_on_error=False, group="metrics-load")
    def _load(self, window: int | None) -> None:
        store = self.session.metrics
        if window is None:
            records = list(store.iter_records())
        else:
            records = store.tail(max(window, RECENT_ROWS, SPARK_POINTS))
        covered = records if window is None else records[-window:]
        view = MetricsView(window, summarise(covered), records[-max(RECENT_ROWS, SPARK_POINTS) :])
        if not get_current_worker().is_cancelled:
            self.post_message(self.Loaded(view))

    def on_metrics_pane_loaded(self, message: MetricsPane.Loaded) -> None:
        view = self.view = message.view
        summary = view.summary
        totals = self.query_one("#metrics-totals", Static)
        if summary.asks == 0:
            totals.update("No asks recorded yet: ask something in the Ask pane.")
        else:
            totals.update(SummaryGrid(summary_cells(summary, view.window)))
        sparks = view.recent[-SPARK_POINTS:]
        ok = [record for record in sparks if record.status == "ok"]
        self.query_one("#spark-latency", Sparkline).data = [r.total_ms / 1000 for r in ok]
        self.query_one("#spark-tokens", Sparkline).data = [
            float(r.prompt_tokens_best + r.completion_tokens_best) for r in sparks
        ]
        self.query_one("#spark-tokens-label", Label).update(f"Tokens, last {asks(len(sparks))}")
        if ok:
            slowest = max(r.total_ms for r in ok)
            self.query_one("#spark-latency-label", Label).update(
                f"Latency, last {asks(len(ok))}, max {format_ms(slowest)}"
            )
        self._show_models(summary)
        self._show_recent(view.recent[-RECENT_ROWS:])

    def _show_models(self, summary: MetricsSummary) -> None:
        table = self.query_one("#metrics-models", DataTable)
        wanted = {
            label: self._model_cells(label, figures) for label, figures in summary.by_model.items()
        }
        self._fit(table, MODEL_COLUMNS, MODEL_PRIORITY, list(wanted.values()))
        shown = self._shown_columns(table)
        for key in [row.value for row in table.rows if row.value not in wanted]:
            table.remove_row(key)  # type: ignore[arg-type]
        for label, cells in wanted.items():
            if label in table.rows:
                for column in shown:
                    table.update_cell(label, column, cells[column])
            else:
                table.add_row(*(cells[key] for key in shown), key=label)

    @staticmethod
    def _model_cells(label: str, figures: MetricsSummary) -> Cells:
        return {
            "model": plain(label),
            "asks": Text(f"{figures.asks:,}", justify="right"),
            "p50": format_ms(figures.latency_p50_ms),
            "p95": format_ms(figures.latency_p95_ms),
            "ttft": format_ms(figures.first_token_p50_ms),
            "rate": format_rate(figures.tokens_per_second),
            "in": Text(f"{figures.prompt_tokens:,}", justify="right"),
            "out": Text(f"{figures.completion_tokens:,}", justify="right"),
        }

    def _show_recent(self, records: list[MetricRecord]) -> None:
        table = self.query_one("#metrics-recent", DataTable)
        cells = {record.turn_id: self._recent_cells(record) for record in records}
        at_key = (
            table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key
            if table.row_count
            else None
        )
        refitted = self._fit(table, RECENT_COLUMNS, RECENT_PRIORITY, list(cells.values()))
        shown = self._shown_columns(table)
        stale = [row.value for row in table.rows if row.value not in cells]
        for key in stale:
            table.remove_row(key)  # type: ignore[arg-type]
        added = False
        for turn_id, row in cells.items():
            if turn_id in table.rows:
                continue  # a recorded ask never changes, so its row stays as it is
            table.add_row(*(row[key] for key in shown), key=turn_id)
            added = True
        if added or stale:
            table.sort("time", key=lambda stamp: str(stamp), reverse=True)
        if refitted and at_key is not None and at_key in table.rows:
            table.move_cursor(row=table.get_row_index(at_key))

    @staticmethod
    def _recent_cells(record: MetricRecord) -> Cells:
        status = Text(record.status, style="" if record.status == "ok" else "bold")
        citations = f"{record.citations_kept}"
        if record.citations_removed:
            citations += f" (−{record.citations_removed})"
        return {
            "time": plain(record.time.replace("T", " ").rstrip("Z")),
            "model": plain(record.model_label),
            "status": status,
            "in": _tokens(record.prompt_tokens, record.estimated_prompt_tokens),
            "out": _tokens(record.completion_tokens, record.estimated_completion_tokens),
            "ttft": format_ms(record.first_token_ms),
            "total": format_ms(record.total_ms),
            "rate": format_rate(record.tokens_per_second),
            "evidence": Text(str(record.evidence_count), justify="right"),
            "dropped": Text(str(len(record.dropped)), justify="right"),
            "citations": citations,
        }

    # -- actions -------------------------------------------------------------------------------

    def action_cycle_window(self) -> None:
        self.window_index = (self.window_index + 1) % len(WINDOWS)
        window = self.window
        self.notify(
            "Figures over every ask" if window is None else f"Figures over the last {window:,} asks"
        )
        self.refresh_data()

    def palette_commands(self) -> list[PaletteCommand]:
        """What Ctrl+P offers while this pane is shown: the other windows."""
        commands: list[PaletteCommand] = []
        for index, window in enumerate(WINDOWS):
            if index != self.window_index:
                label = "every ask" if window is None else f"the last {window:,} asks"
                commands.append(
                    (
                        f"Metrics over {label}",
                        "Totals and percentiles",
                        partial(self._use_window, index),
                    )
                )
        return commands

    def _use_window(self, index: int) -> None:
        self.window_index = index
        self.refresh_data()
