"""A modal asking where to export history; the file's suffix picks Markdown or JSONL."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from lore.tui.held_text import plain_content


class ExportScreen(ModalScreen[Path | None]):
    """Returns the path typed, or None when the user backs out."""

    DEFAULT_CSS = """
    ExportScreen {
        align: center middle;
    }
    ExportScreen > Vertical {
        width: 76;
        max-width: 95%;
        height: auto;
        padding: 1 2;
        border: round $primary;
        background: $surface;
    }
    /* Wrapped, not cut at the border: the hint and a search's title are long. */
    ExportScreen Label {
        width: 100%;
    }
    ExportScreen Label.hint {
        color: $text-muted;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "cancel",
            "Cancel",
            id="history.export.cancel",
            tooltip="Close, export nothing",
        ),
    ]

    def __init__(self, what: str, suggested: Path) -> None:
        super().__init__()
        self._what = what
        self._suggested = suggested

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(plain_content(f"Export {self._what} to"))
            yield Input(str(self._suggested), id="export-path")
            yield Label(
                "Ends in .jsonl: one JSON record per turn; anything else: Markdown. "
                "Enter exports · Esc cancels",
                classes="hint",
            )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        raw = event.value.strip()
        if not raw:
            self.notify("Give a file to export to.", severity="warning")
            return
        self.dismiss(Path(raw).expanduser())

    def action_cancel(self) -> None:
        self.dismiss(None)
