"""How one ask is drawn into its turn in the Ask pane, event by event.

Kept apart from the pane so the ask machinery it names loads with the first question.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from textual.widgets import Markdown

from lore.core.public import (
    AskEvent,
    AskFailed,
    AskFinished,
    AskListener,
    AskNotice,
    AskStarted,
    estimate_tokens,
    visible,
)
from lore.tui.held_text import notify_plain

if TYPE_CHECKING:
    from lore.tui.panes.ask import AskPane
    from lore.tui.widgets.ask_turn import AskTurn

NOTICE_SEVERITY = {"info": "information", "warning": "warning", "error": "error"}


class TurnListener(AskListener):
    """Draws one ask into its turn in the transcript as the events arrive."""

    def __init__(self, pane: AskPane, view: AskTurn) -> None:
        self.pane = pane
        self.view = view
        self.stream = Markdown.get_stream(view.answer)
        self.parts: list[str] = []

    @property
    def answer(self) -> str:
        return "".join(self.parts)

    async def started(self, event: AskStarted) -> None:
        self.pane._live["sent"] = event.pack.total_tokens

    async def delta(self, text: str) -> None:
        live = self.pane._live
        if live["first"] is None:
            live["first"] = time.monotonic()
        self.parts.append(text)
        live["tokens"] = estimate_tokens(self.answer)
        await self.stream.write(visible(text, multiline=True))

    async def finished(self, event: AskFinished) -> None:
        await self.stream.stop()
        await self.view.finish(event.turn, event.pack)
        self.pane.remember_sources(event.pack, event.turn.cited)

    async def failed(self, event: AskFailed) -> None:
        await self.stream.stop()
        self.view.failed(event.error_message)

    async def notice(self, notice: AskNotice, event: AskEvent) -> None:
        title = "The answer failed" if isinstance(event, AskFailed) else ""
        notify_plain(self.pane, notice.text, title=title, severity=NOTICE_SEVERITY[notice.level])
