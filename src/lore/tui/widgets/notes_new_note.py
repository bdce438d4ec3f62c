"""A small modal asking for the title of a new note."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from lore.tui.held_text import plain_content


class NewNoteScreen(ModalScreen[str | None]):
    """Returns the title typed (spaces collapsed), or None when the user backs out."""

    DEFAULT_CSS = """
    NewNoteScreen {
        align: center middle;
    }
    NewNoteScreen > Vertical {
        width: 64;
        max-width: 95%;
        height: auto;
        padding: 1 2;
        border: round $primary;
        background: $surface;
    }
    /* Wrapped, not cut at the border, when the folder's name is long or the terminal narrow. */
    NewNoteScreen Label {
        width: 100%;
    }
    NewNoteScreen Label.hint {
        color: $text-muted;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape", "cancel", "Cancel", id="notes.new.cancel", tooltip="Close without creating"
        ),
    ]

    def __init__(self, folder: str = "") -> None:
        super().__init__()
        self._folder = folder

    def compose(self) -> ComposeResult:
        where = f"notes/{self._folder}/" if self._folder else "notes/"
        with Vertical():
            yield Label(plain_content(f"Title of the new note (in {where})"))
            yield Input(placeholder="e.g. Orbital resonance", id="new-note-title")
            yield Label("Enter creates it and opens your editor · Esc cancels", classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        title = " ".join(event.value.split())
        if not title:
            self.notify("A note needs a title.", severity="warning")
            return
        self.dismiss(title)

    def action_cancel(self) -> None:
        self.dismiss(None)
