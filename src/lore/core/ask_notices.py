"""How the events of an ask reach a face: one dispatch, and one rule for notices.

The app, the REPL and `lore ask` each draw the streamed answer their own way, through an
`AskListener` of their own; `relay_ask` is the one place events are told apart. Every event
besides the answer itself (memory compacted, compaction failed, the ask failed, citations
removed) becomes the same one-line notice everywhere, and `notice` is the one method a
listener must write, so no face silently drops one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterable
from typing import Literal

from lore.core.ask import (
    AnswerDelta,
    AskEvent,
    AskFailed,
    AskFinished,
    AskStarted,
    CompactionFailed,
    MemoryCompacted,
)
from lore.core.dataclass_lite import dataclass_own_init

Level = Literal["info", "warning", "error"]


@dataclass_own_init(frozen=True)
class AskNotice:
    """One line a face shows beside the answer, and how serious it is."""

    text: str
    level: Level


def notice_for(event: AskEvent) -> AskNotice | None:
    """The notice `event` calls for, or None when the answer itself says it all."""
    if isinstance(event, MemoryCompacted):
        report = event.report
        return AskNotice(
            f"compacted {report.turns_covered:,} older turn{'s' if report.turns_covered != 1 else ''}"
            f" into memory: live history {report.live_tokens_before:,} → "
            f"{report.live_tokens_after:,} tokens",
            "info",
        )
    if isinstance(event, CompactionFailed):
        return AskNotice(event.error_message, "warning")
    if isinstance(event, AskFailed):
        return AskNotice(event.error_message, "error")
    if isinstance(event, AskFinished) and event.citations_removed:
        count = event.citations_removed
        return AskNotice(
            f"{count} citation{'s' if count != 1 else ''} to notes the model was not shown "
            f"{'were' if count != 1 else 'was'} removed from the answer",
            "warning",
        )
    return None


class AskListener(ABC):
    """What a face does with each event of an ask. Only `notice` has no default; the
    others do nothing unless a face has something to draw for them."""

    async def started(self, event: AskStarted) -> None:
        """The pack is built and the question sent."""
        return None

    async def delta(self, text: str) -> None:
        """More of the answer arrived."""
        return None

    async def finished(self, event: AskFinished) -> None:
        """The answer is complete and recorded."""
        return None

    async def failed(self, event: AskFailed) -> None:
        """The ask ended in an error; the turn is recorded all the same."""
        return None

    @abstractmethod
    async def notice(self, notice: AskNotice, event: AskEvent) -> None:
        """Tell the person `notice`, which `event` called for."""


async def relay_ask(events: AsyncIterable[AskEvent], listener: AskListener) -> None:
    """Hand each event of an ask to `listener`, then the notice it calls for, if any."""
    async for event in events:
        if isinstance(event, AskStarted):
            await listener.started(event)
        elif isinstance(event, AnswerDelta):
            await listener.delta(event.text)
        elif isinstance(event, AskFinished):
            await listener.finished(event)
        elif isinstance(event, AskFailed):
            await listener.failed(event)
        notice = notice_for(event)
        if notice is not None:
            await listener.notice(notice, event)
