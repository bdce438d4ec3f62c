"""Messages panes post to the app when an action belongs to another pane."""

from __future__ import annotations

from textual.message import Message
from textual.widget import Widget


class OpenNote(Message):
    """Show a note (by id, title or path) in the Notes pane."""

    def __init__(self, ref: str) -> None:
        super().__init__()
        self.ref = ref


class AskQuestion(Message):
    """Put a question into the Ask pane; `submit` sends it at once."""

    def __init__(self, question: str, *, submit: bool = False) -> None:
        super().__init__()
        self.question = question
        self.submit = submit


class VaultChanged(Message):
    """Files in the vault changed (another process, an editor, a worker of ours).

    `kinds` names what changed: any of "notes", "history", "metrics", "quarantine", "memory".
    """

    def __init__(self, kinds: frozenset[str]) -> None:
        super().__init__()
        self.kinds = kinds


class VaultWritten(Message):
    """This app wrote to the vault: the app tells the panes, as it does for outside changes.

    `kinds` as for `VaultChanged`; `origin`, the pane that wrote and has already refreshed.
    """

    def __init__(self, kinds: frozenset[str], *, origin: Widget | None = None) -> None:
        super().__init__()
        self.kinds = kinds
        self.origin = origin


class ShowPane(Message):
    """Bring a pane to the front (by its id: ask, history, metrics, quarantine, notes)."""

    def __init__(self, pane_id: str) -> None:
        super().__init__()
        self.pane_id = pane_id


class ModelChanged(Message):
    """The session now answers with this provider and model."""

    def __init__(self, provider: str, model: str) -> None:
        super().__init__()
        self.provider = provider
        self.model = model


class ThemeChosen(Message):
    """Switch the app to the theme of this name (a slash command or a palette entry)."""

    def __init__(self, theme: str) -> None:
        super().__init__()
        self.theme = theme


class ContextUsage(Message):
    """What the next ask would send, in tokens; None when it cannot be worked out."""

    def __init__(self, used: int | None) -> None:
        super().__init__()
        self.used = used
