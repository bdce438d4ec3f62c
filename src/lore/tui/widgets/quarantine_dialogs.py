"""Modals of the Quarantine pane: a reason to reject, an edit before promoting, a confirmation."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, TextArea

from lore.tui.held_text import plain_content

_DIALOG_CSS = """
{name} {{
    align: center middle;
}}
{name} > Vertical {{
    width: 84;
    max-width: 95%;
    height: auto;
    max-height: 90%;
    padding: 1 2;
    border: round $held;
    background: $surface;
}}
/* A label is as wide as its text by default: it would be cut at the border, not wrapped. */
{name} Label {{
    width: 100%;
    height: auto;
}}
{name} Label.hint {{
    color: $text-muted;
}}
"""


class RejectReasonScreen(ModalScreen[str | None]):
    """Returns the reason typed (possibly empty), or None when the user backs out."""

    DEFAULT_CSS = _DIALOG_CSS.format(name="RejectReasonScreen")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape", "cancel", "Cancel", id="quarantine.reject.cancel", tooltip="Keep it held"
        ),
    ]

    def __init__(self, what: str) -> None:
        super().__init__()
        self._what = what

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(plain_content(f"Reject {self._what}"))
            yield Input(placeholder="Why? (optional, goes into the audit log)", id="reject-reason")
            yield Label("Enter rejects · Esc keeps it held", classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(" ".join(event.value.split()))

    def action_cancel(self) -> None:
        self.dismiss(None)


class EditClaimScreen(ModalScreen[str | None]):
    """Returns the edited text to promote, or None when the user backs out."""

    DEFAULT_CSS = (
        _DIALOG_CSS.format(name="EditClaimScreen")
        + """
    EditClaimScreen TextArea {
        height: 12;
    }
    """
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+s",
            "promote",
            "Promote",
            priority=True,
            id="quarantine.edit.promote",
            tooltip="Promote the edited text",
        ),
        Binding("escape", "cancel", "Cancel", id="quarantine.edit.cancel", tooltip="Keep it held"),
    ]

    def __init__(self, text: str, *, hidden_removed: int = 0) -> None:
        super().__init__()
        self._text = text
        self._hidden_removed = hidden_removed

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Edit the claim, then promote it")
            yield TextArea(self._text, id="edit-claim", soft_wrap=True)
            hint = "Ctrl+S promotes the edited text · Esc keeps it held"
            if self._hidden_removed:
                hint = f"{self._hidden_removed} hidden characters were removed. " + hint
            yield Label(hint, classes="hint")

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def action_promote(self) -> None:
        text = self.query_one(TextArea).text.strip()
        if not text:
            self.notify("The claim is empty; type something or press Esc.", severity="warning")
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """Yes or no, for actions that touch many claims at once."""

    DEFAULT_CSS = _DIALOG_CSS.format(name="ConfirmScreen")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="quarantine.confirm.yes", tooltip="Go ahead"),
        Binding("n,escape", "answer(False)", "No", id="quarantine.confirm.no", tooltip="Cancel"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self._question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(plain_content(self._question))
            yield Label("y: yes · n or Esc: no", classes="hint")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
