"""The History pane's list: one row per turn, newest first, virtual at any length.

Only the rows on screen are rendered, and turns are read from disk a page at a time in
thread workers as the user scrolls to them, so a history of 100,000 turns costs no more to
show than one of ten. A page not yet read shows as a placeholder row for a moment.

A page keeps each turn as the few values its row shows plus the raw line, not as a decoded
Turn: tuples of strings and numbers and bytes are nothing the garbage collector walks, where
a Turn is about ten objects. Sixteen pages of Turns were 30,000 objects for every full
collection to visit, a pause of tens of milliseconds while scrolling. A Turn is decoded
again from its line when one is asked for (the highlighted one).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from lore.core.public import Turn, decode_turn, visible

PAGE_ROWS = 200
CACHED_PAGES = 16
STRIP_CACHE = 256
RETRY_READ_S = 0.5
_STATUS_MARK = {"ok": "·", "cancelled": "⊘", "error": "✗"}


@dataclass(frozen=True)
class _RowStyles:
    """The styles rows are drawn with, read from the CSS once and again only when styles change."""

    base: Style
    cursor: Style
    muted: Style
    failed: Style


# Reads the record lines [start, stop) by position, oldest first (HistoryStore.read_lines).
PageReader = Callable[[int, int], list[bytes]]

# What a row shows: (id, time, status, question on one line, tokens, total ms).
Row = tuple[str, str, str, str, int, float]
# A read turn: its row and its record line.
_Entry = tuple[Row, bytes]


def turn_tokens(turn: Turn) -> int:
    usage = turn.usage
    prompt, reply = usage.prompt_in, usage.reply_out
    return prompt + reply


def row_of(turn: Turn) -> Row:
    # Rows are drawn as bare segments: nothing in a question may reach the terminal as is.
    question = visible(" ".join(turn.question.split()), multiline=False)
    when = visible(turn.time, multiline=False)
    return (turn.id, when, turn.status, question, turn_tokens(turn), turn.timings.total_ms)


def _when(stamp: str) -> str:
    # "2026-11-30T14:02:11Z" -> "11-30 14:02"; anything else shown as it is, cut to fit.
    if len(stamp) >= 16 and stamp[10] == "T":
        return f"{stamp[5:10]} {stamp[11:16]}"
    return stamp[:11].ljust(11)


class HistoryList(ScrollView, can_focus=True):
    """Rows of turns with a cursor; posts Highlighted as it moves and Selected on Enter."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "history-list--cursor",
        "history-list--muted",
        "history-list--failed",
    }

    DEFAULT_CSS = """
    HistoryList {
        height: 1fr;
        background: $surface;
    }
    HistoryList > .history-list--cursor {
        background: $accent 25%;
    }
    HistoryList:focus > .history-list--cursor {
        background: $accent 50%;
    }
    HistoryList > .history-list--muted {
        color: $text-muted;
    }
    HistoryList > .history-list--failed {
        color: $error;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "Up", show=False, id="history.list.up", tooltip="Newer turn"),
        Binding(
            "down", "move(1)", "Down", show=False, id="history.list.down", tooltip="Older turn"
        ),
        Binding(
            "pageup",
            "page(-1)",
            "Page up",
            show=False,
            id="history.list.pageup",
            tooltip="A page newer",
        ),
        Binding(
            "pagedown",
            "page(1)",
            "Page down",
            show=False,
            id="history.list.pagedown",
            tooltip="A page older",
        ),
        Binding(
            "home", "jump(0)", "Newest", show=False, id="history.list.home", tooltip="Newest turn"
        ),
        Binding(
            "end", "jump(-1)", "Oldest", show=False, id="history.list.end", tooltip="Oldest turn"
        ),
        Binding(
            "enter", "select", "Open", show=False, id="history.list.select", tooltip="Open the turn"
        ),
    ]

    class Highlighted(Message):
        def __init__(self, history_list: HistoryList, turn: Turn | None) -> None:
            super().__init__()
            self.history_list = history_list
            self.turn = turn

        @property
        def control(self) -> HistoryList:
            return self.history_list

    class Selected(Highlighted):
        pass

    class PageRead(Message, bubble=False):
        """A page of rows read from disk by a worker; `generation` says which listing.

        `entries` is None when the page could not be read.
        """

        def __init__(
            self, generation: int, page: int, size: int, entries: list[_Entry] | None
        ) -> None:
            super().__init__()
            self.generation = generation
            self.page = page
            self.size = size
            self.entries = entries

    def __init__(self, read_page: PageReader, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._read_page = read_page
        self._total = 0
        self._found: list[Turn] | None = None
        self._pages: OrderedDict[int, list[_Entry | None]] = OrderedDict()
        # The last turn decoded from a line, as the highlighted one is asked for repeatedly.
        self._decoded: tuple[bytes, Turn | None] | None = None
        self._pending: set[int] = set()
        self._generation = 0
        self._last_highlighted: str | None = None
        self.cursor = 0
        self._styles: _RowStyles | None = None
        self._strips: LRUCache[tuple[str, bool, int], Strip] = LRUCache(STRIP_CACHE)

    # -- what is shown -----------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._found) if self._found is not None else self._total

    @property
    def shown_turns(self) -> list[Turn] | None:
        """The turns shown when they are a search result, newest first; None for all."""
        return None if self._found is None else list(self._found)

    def show_history(self, total: int) -> None:
        """Show every turn; `total` is the history's length. Keeps the highlighted turn."""
        added = total - self._total if self._found is None else 0
        at_top = self.scroll_offset.y == 0 and self.cursor == 0
        self._found = None
        self._total = max(0, total)
        self._forget_pages()
        if added > 0 and not at_top:
            # Rows are newest first: new turns push the ones being looked at down.
            self.cursor += added
            self.scroll_to(y=self.scroll_offset.y + added, animate=False, immediate=True)
        self._resize()
        # Start reading the rows in view now rather than when they are first drawn.
        self._request_in_view()

    def show_turns(self, turns: list[Turn]) -> None:
        """Show just these turns (search results), newest first."""
        self._found = list(turns)
        self._forget_pages()
        self.cursor = 0
        self._resize()
        self.scroll_to(y=0, animate=False, immediate=True)

    def turn_at(self, row: int) -> Turn | None:
        if not 0 <= row < self.row_count:
            return None
        if self._found is not None:
            return self._found[row]
        entry = self._entry(row)
        if entry is None:
            return None
        line = entry[1]
        if self._decoded is None or self._decoded[0] is not line:
            self._decoded = (line, decode_turn(line))
        return self._decoded[1]

    def row_read(self, row: int) -> bool:
        """Whether this row's turn has been read from disk (always so for search results)."""
        if not 0 <= row < self.row_count:
            return False
        return self._found is not None or self._entry(row) is not None

    def _entry(self, row: int) -> _Entry | None:
        page = self._pages.get(row // PAGE_ROWS)
        if page is None:
            return None
        offset = row % PAGE_ROWS
        return page[offset] if offset < len(page) else None

    @property
    def highlighted_turn(self) -> Turn | None:
        return self.turn_at(self.cursor)

    def _forget_pages(self) -> None:
        self._generation += 1
        self._pages.clear()
        self._pending.clear()
        self._decoded = None

    def _resize(self) -> None:
        self.cursor = min(max(0, self.cursor), max(0, self.row_count - 1))
        self.virtual_size = Size(self.scrollable_content_region.width, self.row_count)
        self.refresh()
        self._announce(force=True)

    # -- pages -------------------------------------------------------------------------------

    def _request(self, page: int) -> None:
        if page in self._pages or page in self._pending or self._found is not None:
            return
        if page < 0 or page * PAGE_ROWS >= self._total:
            return
        self._pending.add(page)
        # Rows count from the newest turn; positions from the oldest.
        stop = self._total - page * PAGE_ROWS
        start = max(0, stop - PAGE_ROWS)
        self.run_worker(
            partial(self._read, self._generation, page, start, stop),
            thread=True,
            group="history-pages",
            exit_on_error=False,
        )

    def _read(self, generation: int, page: int, start: int, stop: int) -> None:
        entries: list[_Entry] = []
        try:
            lines = self._read_page(start, stop)
        except Exception:
            # A page that could not be read (the vault locked, the file gone) is asked for
            # again, rather than staying a placeholder for good.
            self.post_message(self.PageRead(generation, page, stop - start, None))
            return
        for line in lines:
            turn = decode_turn(line)
            if turn is not None:
                entries.append((row_of(turn), line))
        self.post_message(self.PageRead(generation, page, stop - start, entries))

    def on_history_list_page_read(self, message: HistoryList.PageRead) -> None:
        if message.generation != self._generation:
            return
        page = message.page
        self._pending.discard(page)
        if message.entries is None:
            # A page still in view a moment later is asked for again.
            self.set_timer(RETRY_READ_S, self._request_in_view)
            return
        rows: list[_Entry | None] = list(reversed(message.entries))
        # A record that is not a turn comes back missing; keep the page its full height.
        rows.extend([None] * (message.size - len(rows)))
        self._pages[page] = rows
        while len(self._pages) > CACHED_PAGES:
            self._pages.popitem(last=False)
        self.refresh()
        if self.cursor // PAGE_ROWS == page:
            self._announce()

    def _request_in_view(self) -> None:
        top = round(self.scroll_offset.y)
        self._prefetch(top, top + max(1, self.scrollable_content_region.height))

    def _prefetch(self, first_row: int, last_row: int) -> None:
        """Read the pages on screen, and the next ones either side before they are reached."""
        margin = PAGE_ROWS
        for page in range(
            max(0, first_row - margin) // PAGE_ROWS, (last_row + margin) // PAGE_ROWS + 1
        ):
            self._request(page)

    # -- rendering ---------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = None
        self._strips.clear()

    def _row_styles(self) -> _RowStyles:
        # Computing a style walks the CSS; rows are drawn every frame while scrolling.
        if self._styles is None:
            self._styles = _RowStyles(
                base=self.rich_style,
                cursor=self.get_component_rich_style("history-list--cursor"),
                muted=self.get_component_rich_style("history-list--muted", partial=True),
                failed=self.get_component_rich_style("history-list--failed", partial=True),
            )
        return self._styles

    def render_line(self, y: int) -> Strip:
        row = self.scroll_offset.y + y
        # The scrollbar, shown once there are more rows than fit, takes its columns from here.
        width = self.scrollable_content_region.width
        styles = self._row_styles()
        if row >= self.row_count:
            return Strip.blank(width, styles.base)
        shown: Row | None
        if self._found is not None:
            shown = row_of(self._found[row])
        else:
            entry = self._entry(row)
            shown = entry[0] if entry is not None else None
            page = row // PAGE_ROWS
            if page in self._pages:
                self._pages.move_to_end(page)
            else:
                self.call_later(self._request, page)
        at_cursor = row == self.cursor
        key = (shown[0], at_cursor, width) if shown is not None else None
        if key is not None and key in self._strips:
            return self._strips[key]
        segments = self._row_segments(shown, width, styles)
        style = styles.base + styles.cursor if at_cursor else styles.base
        strip = Strip(segments).crop_extend(0, width, style)
        if at_cursor:
            strip = strip.apply_style(style)
        if key is not None:
            self._strips.set(key, strip)
        return strip

    @staticmethod
    def _row_segments(row: Row | None, width: int, styles: _RowStyles) -> list[Segment]:
        # Segments built by hand: this runs for every row that scrolls into view.
        if row is None:
            return [Segment("  …", styles.muted)]
        _, stamp, status, question, tokens, total_ms = row
        right = f"{tokens:>7,} tok {total_ms / 1000:>6.1f}s"
        mark = _STATUS_MARK.get(status, "?")
        when = _when(stamp)
        room = max(4, width - len(when) - len(right) - 5)
        if cell_len(question) > room:
            question = set_cell_size(question, room - 1) + "…"
        else:
            question = set_cell_size(question, room)
        return [
            Segment(when, styles.muted),
            Segment(f" {mark} ", styles.failed if status != "ok" else styles.muted),
            Segment(question),
            Segment("  "),
            Segment(right, styles.muted),
        ]

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, self.row_count)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        # Ask for the pages now in view at once, not on the next frame drawn: a frame can be
        # a long while coming on a busy machine, and the rows would wait for it.
        self._request_in_view()

    # -- the cursor --------------------------------------------------------------------------

    def move_cursor(self, row: int) -> None:
        if self.row_count == 0:
            return
        self.cursor = min(max(0, row), self.row_count - 1)
        height = max(1, self.scrollable_content_region.height)
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)
        # The cursor's own page is asked for whatever the scroll did: a scroll clamped to a
        # height not yet known would leave the row it lands on unread.
        self._prefetch(self.cursor, self.cursor + 1)
        self.refresh()
        self._announce()

    def _announce(self, force: bool = False) -> None:
        turn = self.highlighted_turn
        key = turn.id if turn is not None else None
        if key == self._last_highlighted and not force:
            return
        self._last_highlighted = key
        self.post_message(self.Highlighted(self, turn))

    def action_move(self, delta: int) -> None:
        self.move_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        height = max(1, self.scrollable_content_region.height)
        top = min(
            max(0, self.scroll_offset.y + direction * height), max(0, self.row_count - height)
        )
        self.scroll_to(y=top, animate=False, immediate=True)
        self.move_cursor(self.cursor + direction * height)

    def action_jump(self, row: int) -> None:
        self.move_cursor(row if row >= 0 else self.row_count - 1)

    def action_select(self) -> None:
        turn = self.highlighted_turn
        if turn is not None:
            self.post_message(self.Selected(self, turn))

    def on_click(self, event: events.Click) -> None:
        self.move_cursor(self.scroll_offset.y + event.y)
        if event.chain == 2:
            self.action_select()

    def rows_on_screen(self) -> list[str]:
        """The visible rows as plain text."""
        height = self.scrollable_content_region.height
        shown = max(0, min(height, self.row_count - self.scroll_offset.y))
        return [self.render_line(y).text.rstrip() for y in range(shown)]
