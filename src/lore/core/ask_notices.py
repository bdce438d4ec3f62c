"""What a face tells the user about an ask besides the answer itself: one rule for all.

The app, the REPL and `lore ask` each draw the streamed answer their own way, but every
other event of an ask (memory compacted, compaction failed, the ask failed, citations
removed) becomes the same one-line notice everywhere, so no face silently drops one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from lore.core.ask import AskEvent, AskFailed, AskFinished, CompactionFailed, MemoryCompacted

Level = Literal["info", "warning", "error"]


@dataclass(frozen=True)
class AskNotice:
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
