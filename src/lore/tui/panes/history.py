"""The History pane: every turn ever asked, searchable, with what each one cost, and the
state of the compressed memory with a key to compact now."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from lore.core.public import CompactionReport, MemoryStatus, Turn, turn_markdown, turn_summary
from lore.rich_display import SafeMarkdown, plain
from lore.tui.held_text import notify_plain
from lore.tui.messages import AskQuestion, OpenNote, VaultWritten
from lore.tui.panes.base import LorePane
from lore.tui.widgets.history_export_screen import ExportScreen
from lore.tui.widgets.history_list import HistoryList

if TYPE_CHECKING:
    from lore.core.session import LoreSession
    from lore.tui.palette import PaletteCommand

SEARCH_LIMIT = 2000
SEARCH_DELAY_S = 0.25
DETAIL_DELAY_S = 0.15
NO_TURN = "No turn yet: ask something in the Ask pane."


@dataclass
class WithHint:
    """A line with a hint after it when both fit on one line, else the line alone."""

    line: Text
    hint: Text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.line.cell_len + self.hint.cell_len <= options.max_width:
            yield Text.assemble(self.line, self.hint)
        else:
            yield self.line


def turn_document(turn: Turn) -> str:
    """The highlighted turn's question and answer as Markdown (citations are listed apart)."""
    parts = ["## Question", "", turn.question.strip() or "*(empty)*", ""]
    if turn.resolved_question and turn.resolved_question.strip() != turn.question.strip():
        parts += [f"*Understood as:* {turn.resolved_question.strip()}", ""]
    parts += ["## Answer", ""]
    if turn.status == "cancelled":
        parts += ["*Cancelled before the answer was complete.*", ""]
    elif turn.status == "error":
        parts += [f"*Failed:* {turn.error or 'unknown error'}", ""]
    parts += [turn.answer.strip() or "*(no answer)*", ""]
    return "\n".join(parts)


class HistoryPane(LorePane):
    """Browse and search past turns; ask again, copy, export; compact the history."""

    HELP: ClassVar[str] = """\
## History

Every turn asked in this vault, newest first. Scrolling reads the history a page at a
time, so it stays quick however long it grows.

| Key | Does |
|---|---|
| `/` | Search every question and answer (all words must match) |
| `Esc` | Clear the search |
| `Enter` | Go to the turn's citations (`Enter` on one opens the note in Notes) |
| `r` | Ask the question again now |
| `o` | Put the question in the Ask pane to edit first |
| `c` | Copy the turn as Markdown |
| `x` | Export the shown turns (all, or the search results) to Markdown or JSONL |
| `m` | Compact now: summarise older turns into memory (shows tokens before and after) |

The bottom line shows the compressed memory: the live turns against the compaction
threshold, entries per level with their tokens, and the watermark (the last turn
compacted). Compaction never deletes a turn from `history.jsonl`.
"""

    DEFAULT_CSS = """
    HistoryPane {
        height: 1fr;
    }
    HistoryPane #history-top {
        height: auto;
    }
    HistoryPane #history-search {
        width: 1fr;
    }
    HistoryPane #history-count {
        width: auto;
        padding: 1 1 0 2;
        color: $text-muted;
    }
    HistoryPane #history-body {
        height: 1fr;
    }
    HistoryPane #history-list {
        width: 3fr;
    }
    HistoryPane #history-detail {
        width: 2fr;
        padding: 0 1;
        border-left: vkey $primary 30%;
    }
    HistoryPane #history-turn-meta {
        color: $text-muted;
        height: auto;
        margin: 1 0 0 0;
    }
    HistoryPane #history-turn-meta.-failed {
        color: $error;
    }
    HistoryPane #history-cited-title {
        color: $text-muted;
    }
    /* A line per citation, so a narrow detail keeps room for the answer above it. */
    HistoryPane #history-cited {
        height: auto;
        max-height: 6;
        border: none;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    HistoryPane #history-memory {
        height: auto;
        padding: 0 1;
        background: $panel;
        color: $text-muted;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "Search", id="history.search", tooltip="Search every turn"),
        Binding(
            "escape", "clear_search", "Clear", id="history.clear_search", tooltip="Show every turn"
        ),
        Binding(
            "r", "ask_again", "Ask again", id="history.ask_again", tooltip="Ask this again now"
        ),
        Binding("o", "open_in_ask", "Open in Ask", id="history.open", tooltip="Edit it in Ask"),
        Binding("c", "copy", "Copy", id="history.copy", tooltip="Copy the turn as Markdown"),
        Binding("x", "export", "Export", id="history.export", tooltip="Export to Markdown/JSONL"),
        Binding("m", "compact", "Compact", id="history.compact", tooltip="Compact the history now"),
    ]

    WATCHES: ClassVar[frozenset[str]] = frozenset({"history", "memory"})

    # -- what the workers report -------------------------------------------------------------

    class CountLoaded(Message, bubble=False):
        def __init__(self, total: int) -> None:
            super().__init__()
            self.total = total

    class MemoryLoaded(Message, bubble=False):
        def __init__(self, status: MemoryStatus) -> None:
            super().__init__()
            self.status = status

    class CitationsNamed(Message, bubble=False):
        """Titles of the notes a turn cites, by the id or path it cites them with."""

        def __init__(self, turn_id: str, titles: dict[str, str]) -> None:
            super().__init__()
            self.turn_id = turn_id
            self.titles = titles

    class SearchFound(Message, bubble=False):
        def __init__(self, text: str, found: list[Turn]) -> None:
            super().__init__()
            self.text = text
            self.found = found

    class Exported(Message, bubble=False):
        def __init__(self, count: int, path: Path) -> None:
            super().__init__()
            self.count = count
            self.path = path

    class Compacted(Message, bubble=False):
        def __init__(self, report: CompactionReport) -> None:
            super().__init__()
            self.report = report

    def __init__(self, session: LoreSession, **kwargs: object) -> None:
        super().__init__(session, **kwargs)
        self.query_text = ""
        self.total = 0
        self.memory: MemoryStatus | None = None
        self._search_timer: Timer | None = None
        self._detail_timer: Timer | None = None
        self._shown: Turn | None = None
        self._detail_source = ""

    def compose(self) -> ComposeResult:
        with Horizontal(id="history-top"):
            yield Input(placeholder="Search every turn…  (/)", id="history-search")
            yield Static("", id="history-count")
        with Horizontal(id="history-body"):
            yield HistoryList(self._read_lines, id="history-list")
            with Vertical(id="history-detail"):
                # What it cost goes under the answer: in a narrow detail it takes five lines,
                # which above the answer pushed it out of sight at 80x24.
                with VerticalScroll(id="history-turn-scroll"):
                    yield Static(NO_TURN, id="history-turn")
                    yield Static("", id="history-turn-meta")
                yield Label("", id="history-cited-title")
                yield OptionList(id="history-cited")
        yield Static("Memory: reading…", id="history-memory")

    @property
    def history_list(self) -> HistoryList:
        return self.query_one(HistoryList)

    def focus_default(self) -> None:
        self.history_list.focus()

    # -- loading -----------------------------------------------------------------------------

    def refresh_data(self) -> None:
        """Re-read the history and the memory (after an ask, or another process wrote)."""
        self._load_count()
        if self.query_text:
            self._search(self.query_text)
        self._load_memory()

    def vault_changed(self, kinds: frozenset[str]) -> None:
        if "history" in kinds:
            self.refresh_data()
        else:
            self._load_memory()  # only the memory changed (a compaction): the turns did not

    def _read_lines(self, start: int, stop: int) -> list[bytes]:
        # Looked up per page, in the list's worker: the session's store is made on first use.
        return self.session.history.read_lines(start, stop)

    @work(thread=True, exclusive=True, exit_on_error=False, group="history-count")
    def _load_count(self) -> None:
        total = self.session.history.count()
        if not get_current_worker().is_cancelled:
            self.post_message(self.CountLoaded(total))

    def on_history_pane_count_loaded(self, message: HistoryPane.CountLoaded) -> None:
        self.total = message.total
        if self.query_text:
            return
        self.history_list.show_history(message.total)
        self._update_count_label()

    def _update_count_label(self) -> None:
        label = self.query_one("#history-count", Static)
        if self.query_text:
            found = self.history_list.row_count
            more = "+" if found >= SEARCH_LIMIT else ""
            label.update(f"{found:,}{more} of {self.total:,} turns match")
        else:
            label.update(f"{self.total:,} turn{'s' if self.total != 1 else ''}")

    @work(thread=True, exclusive=True, exit_on_error=False, group="history-memory")
    def _load_memory(self) -> None:
        status = self.session.memory_status()
        if not get_current_worker().is_cancelled:
            self.post_message(self.MemoryLoaded(status))

    def on_history_pane_memory_loaded(self, message: HistoryPane.MemoryLoaded) -> None:
        status = self.memory = message.status
        described = status.describe()
        line = Text(described[:1].upper() + described[1:])
        hint = Text("  ·  m compacts now", style="italic")
        self.query_one("#history-memory", Static).update(WithHint(line, hint))

    # -- the highlighted turn ----------------------------------------------------------------

    @on(HistoryList.Highlighted, "#history-list")
    def _highlighted(self, event: HistoryList.Highlighted) -> None:
        if self._detail_timer is not None:
            self._detail_timer.stop()
        turn = event.turn
        # Holding an arrow key should not lay out a long answer for every row passed.
        self._detail_timer = self.set_timer(DETAIL_DELAY_S, lambda: self._show_turn(turn))

    @property
    def detail_source(self) -> str:
        """The Markdown the detail shows for the highlighted turn."""
        return self._detail_source

    def _show_detail(self, source: str) -> None:
        # Rich's Markdown in a Static: one widget to redraw, nothing to mount or lay out anew.
        self._detail_source = source
        self.query_one("#history-turn", Static).update(SafeMarkdown(source) if source else "")

    def _show_turn(self, turn: Turn | None) -> None:
        if turn is not None and self._shown is not None and turn.id == self._shown.id:
            return
        self._shown = turn
        meta = self.query_one("#history-turn-meta", Static)
        cited = self.query_one("#history-cited", OptionList)
        cited.clear_options()
        cited_title = self.query_one("#history-cited-title", Label)
        if turn is None:
            meta.update("")
            cited_title.update("")
            empty = self.history_list.row_count == 0
            self._show_detail("*Nothing matches.*" if self.query_text and empty else "")
            return
        meta.set_class(turn.status != "ok", "-failed")
        meta.update(plain(f"{turn.time} · {turn_summary(turn)}\nturn {turn.id}", multiline=True))
        self._show_detail(turn_document(turn))
        self.query_one("#history-turn-scroll", VerticalScroll).scroll_home(animate=False)
        cited_title.update(f"Cited ({len(turn.cited)})" if turn.cited else "No citations")
        cited.add_options(Option(plain(ref), id=ref) for ref in dict.fromkeys(turn.cited))
        if turn.cited:
            self._name_citations(turn)

    @work(thread=True, exclusive=True, exit_on_error=False, group="history-cited")
    def _name_citations(self, turn: Turn) -> None:
        titles: dict[str, str] = {}
        for ref in dict.fromkeys(turn.cited):
            found = self.session.lookup(id=ref) or self.session.lookup(path=ref)
            if found:
                titles[ref] = str(found[0].get("title") or ref)
        if titles and not get_current_worker().is_cancelled:
            self.post_message(self.CitationsNamed(turn.id, titles))

    def on_history_pane_citations_named(self, message: HistoryPane.CitationsNamed) -> None:
        if self._shown is None or self._shown.id != message.turn_id:
            return
        cited = self.query_one("#history-cited", OptionList)
        for ref, title in message.titles.items():
            cited.replace_option_prompt(ref, Text.assemble(plain(title), plain(f"  {ref}", "dim")))

    @on(HistoryList.Selected, "#history-list")
    def _selected(self, event: HistoryList.Selected) -> None:
        self._show_turn(event.turn)
        cited = self.query_one("#history-cited", OptionList)
        if cited.option_count:
            cited.focus()
            cited.highlighted = 0
        else:
            self.query_one("#history-turn-scroll", VerticalScroll).focus()

    @on(OptionList.OptionSelected, "#history-cited")
    def _citation_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.post_message(OpenNote(event.option.id))

    # -- search ------------------------------------------------------------------------------

    @on(Input.Changed, "#history-search")
    def _search_changed(self, event: Input.Changed) -> None:
        if self._search_timer is not None:
            self._search_timer.stop()
        text = event.value.strip()
        if text:
            self._search_timer = self.set_timer(SEARCH_DELAY_S, lambda: self._search(text))
        elif self.query_text:
            self.query_text = ""
            self._load_count()

    @on(Input.Submitted, "#history-search")
    def _search_submitted(self) -> None:
        self.history_list.focus()

    def _search(self, text: str) -> None:
        if self.query_one("#history-search", Input).value.strip() == text:
            self.query_one("#history-count", Static).update("searching…")
        self._run_search(text)

    @work(thread=True, exclusive=True, exit_on_error=False, group="history-search")
    def _run_search(self, text: str) -> None:
        # Stopped as soon as the user types on: a scan of a long history takes a while, and
        # one left running per keystroke would slow the next.
        worker = get_current_worker()
        hits = self.session.history.iter_search(text, cancelled=lambda: worker.is_cancelled)
        found = list(itertools.islice(hits, SEARCH_LIMIT))
        if not worker.is_cancelled:
            self.post_message(self.SearchFound(text, found))

    def on_history_pane_search_found(self, message: HistoryPane.SearchFound) -> None:
        if self.query_one("#history-search", Input).value.strip() != message.text:
            return  # the user typed on; a newer search is coming
        self.query_text = message.text
        self.history_list.show_turns(message.found)
        self._update_count_label()

    def action_search(self) -> None:
        self.query_one("#history-search", Input).focus()

    def action_clear_search(self) -> None:
        search = self.query_one("#history-search", Input)
        search.value = ""
        self.query_text = ""
        self._load_count()
        self.history_list.focus()

    # -- actions on the highlighted turn -----------------------------------------------------

    def _turn_or_hint(self) -> Turn | None:
        turn = self.history_list.highlighted_turn
        if turn is None:
            self.notify("No turn highlighted.", severity="warning")
        return turn

    def action_ask_again(self) -> None:
        if turn := self._turn_or_hint():
            self.post_message(AskQuestion(turn.question, submit=True))

    def action_open_in_ask(self) -> None:
        if turn := self._turn_or_hint():
            self.post_message(AskQuestion(turn.question))

    def action_copy(self) -> None:
        if turn := self._turn_or_hint():
            self.app.copy_to_clipboard(turn_markdown(turn))
            self.notify("Copied the turn as Markdown.")

    def action_export(self) -> None:
        stamp = datetime.now().strftime("%Y%m%d-%H%M")
        suggested = Path.cwd() / f"lore-history-{stamp}.md"
        if self.query_text:
            what = f"the {self.history_list.row_count:,} turns matching {self.query_text!r}"
        else:
            what = f"all {self.total:,} turns"
        self.app.push_screen(ExportScreen(what, suggested), self._export_chosen)

    def _export_chosen(self, path: Path | None) -> None:
        if path is not None:
            found = self.history_list.shown_turns if self.query_text else None
            self._export(path, None if found is None else list(reversed(found)))

    @work(thread=True, exclusive=True, exit_on_error=False, group="history-export")
    def _export(self, path: Path, turns: list[Turn] | None) -> None:
        count = self.session.export_history(path, turns=turns)
        self.post_message(self.Exported(count, path))

    def on_history_pane_exported(self, message: HistoryPane.Exported) -> None:
        notify_plain(self, f"Exported {message.count:,} turns to {message.path}")

    def action_compact(self) -> None:
        self.notify("Compacting…", timeout=2)
        self._compact()

    @work(thread=True, exclusive=True, exit_on_error=False, group="history-compact")
    def _compact(self) -> None:
        # With the session's model, so a `/model` switch reaches compaction too.
        self.post_message(self.Compacted(self.session.compact()))

    def on_history_pane_compacted(self, message: HistoryPane.Compacted) -> None:
        report = message.report
        if report.compacted:
            text = (
                f"Compacted {report.turns_covered:,} turns: live history "
                f"{report.live_tokens_before:,} → {report.live_tokens_after:,} tokens, "
                f"memory {report.memory_tokens_before:,} → {report.memory_tokens_after:,} tokens."
            )
        else:
            text = f"Nothing compacted: {report.reason}."
        notify_plain(self, text, title="Compaction", timeout=10)
        self._load_memory()
        if report.compacted:
            # The watcher does not report the session's own writes: tell the other panes.
            self.post_message(VaultWritten(frozenset({"memory"}), origin=self))

    def palette_commands(self) -> list[PaletteCommand]:
        """What Ctrl+P offers while this pane is shown."""
        commands: list[PaletteCommand] = []
        turn = self.history_list.highlighted_turn
        if turn is not None:
            question = " ".join(turn.question.split())[:60]
            commands += [
                (f"Ask again: {question}", "Send this question again now", self.action_ask_again),
                ("Open the question in Ask", "Edit it before sending", self.action_open_in_ask),
                ("Copy the turn", "As Markdown, to the clipboard", self.action_copy),
            ]
        commands += [
            ("Export history", "To a Markdown or JSONL file", self.action_export),
            ("Compact history now", "Summarise older turns into memory", self.action_compact),
            ("Search history", "Every question and answer", self.action_search),
        ]
        return commands
