"""The Ask pane's prompt: multi-line, Enter sends, Up/Down recall, slash-command completion.

Keys are handled here before the text area inserts anything: Enter sends (or accepts the
highlighted completion), Ctrl+J / Shift+Enter / Alt+Enter insert a newline, Up on the first
line and Down on the last recall earlier questions, and while the completion list is open
Up/Down/Tab/Escape drive it.
"""

from __future__ import annotations

from textual import events
from textual.message import Message
from textual.widgets import TextArea

NEWLINE_KEYS = ("ctrl+j", "shift+enter", "alt+enter")
PLACEHOLDER = "Ask about your notes…  (Enter sends, / for commands)"


class PromptArea(TextArea):
    # Compact, the prompt has no border; a bar down its left edge and a lighter background
    # show where to type before anything is typed. `!important` because Textual's compact
    # style removes every border that way.
    DEFAULT_CSS = """
    PromptArea {
        height: auto;
        min-height: 3;
        max-height: 10;
        border: tall $primary 40%;
        background: $boost;
    }
    PromptArea:focus {
        border: tall $primary;
    }
    PromptArea.-textual-compact {
        border-left: outer $primary 40% !important;
    }
    PromptArea.-textual-compact:focus {
        border-left: outer $primary !important;
    }
    """

    class Submitted(Message):
        def __init__(self, prompt: PromptArea, text: str) -> None:
            super().__init__()
            self.prompt = prompt
            self.text = text

    class CompletionMove(Message):
        """Up (-1) or Down (+1) while the completion list is open."""

        def __init__(self, step: int) -> None:
            super().__init__()
            self.step = step

    class CompletionAccept(Message):
        """Enter or Tab while the completion list is open."""

    class CompletionDismiss(Message):
        """Escape while the completion list is open."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            placeholder=PLACEHOLDER,
            **kwargs,  # type: ignore[arg-type]
        )
        # Compact (no border of its own), as `compact=True` would make it, but without the
        # style pass over the widget and its component classes that setting it there runs on
        # the spot, before the widget is even mounted: time taken from the first screen.
        self.add_class("-textual-compact", update=False)
        self.set_reactive(TextArea.compact, True)
        self.recall: list[str] = []
        self._recall_at: int | None = None
        self._draft = ""
        self.completing = False

    # -- recall ------------------------------------------------------------------------------

    def remember(self, question: str) -> None:
        if question and (not self.recall or self.recall[-1] != question):
            self.recall.append(question)
        self._recall_at = None

    def _show(self, text: str) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end)

    def recall_previous(self) -> bool:
        if not self.recall:
            return False
        if self._recall_at is None:
            self._draft = self.text
            self._recall_at = len(self.recall)
        if self._recall_at == 0:
            return True
        self._recall_at -= 1
        self._show(self.recall[self._recall_at])
        return True

    def recall_next(self) -> bool:
        if self._recall_at is None:
            return False
        self._recall_at += 1
        if self._recall_at >= len(self.recall):
            self._recall_at = None
            self._show(self._draft)
        else:
            self._show(self.recall[self._recall_at])
        return True

    def set_prompt(self, text: str) -> None:
        self._recall_at = None
        self._show(text)

    # -- keys --------------------------------------------------------------------------------

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if key.startswith("alt+") and key not in NEWLINE_KEYS:
            # Alt chords are the app's (Alt+1..5 switch panes), never text to insert.
            event.prevent_default()
            return
        handled = True
        if self.completing and key in ("up", "down"):
            self.post_message(self.CompletionMove(-1 if key == "up" else 1))
        elif self.completing and key in ("enter", "tab"):
            self.post_message(self.CompletionAccept())
        elif self.completing and key == "escape":
            self.post_message(self.CompletionDismiss())
        elif key == "enter":
            self.post_message(self.Submitted(self, self.text))
        elif key in NEWLINE_KEYS:
            start, end = self.selection
            self.replace("\n", start, end)
        elif key == "up" and self.cursor_location[0] == 0:
            handled = self.recall_previous()
        elif key == "down" and self.cursor_location[0] == self.document.line_count - 1:
            handled = self.recall_next()
        else:
            handled = False
        if handled:
            event.stop()
            event.prevent_default()
