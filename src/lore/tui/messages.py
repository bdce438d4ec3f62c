"""Messages panes post to the app when an action belongs to another pane."""

from __future__ import annotations

from textual.message import Message


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
