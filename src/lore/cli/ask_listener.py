"""How `lore ask` shows an answer as it streams: apart from ask_cmd, which builds the parser
for every command, because naming the ask events loads the ask engine."""

from __future__ import annotations

import sys

from lore.cli.common import Context
from lore.core.public import (
    AskEvent,
    AskFailed,
    AskFinished,
    AskListener,
    AskNotice,
    AskStarted,
    visible,
)
from lore.rich_display import plain


class TerminalListener(AskListener):
    """Streams the answer to stdout (unless --json) and keeps what the summary needs."""

    def __init__(self, ctx: Context, *, stream: bool) -> None:
        self.ctx = ctx
        self.stream = stream
        self.done: AskFinished | None = None
        self.failed_event: AskFailed | None = None
        self.later: list[AskNotice] = []

    async def started(self, event: AskStarted) -> None:
        if self.stream and event.pack.followup:
            self.ctx.err.print(plain(f"(understood as: {event.pack.resolved_question})", "dim"))

    async def delta(self, text: str) -> None:
        if self.stream:
            sys.stdout.write(visible(text, multiline=True))
            sys.stdout.flush()

    async def finished(self, event: AskFinished) -> None:
        self.done = event

    async def failed(self, event: AskFailed) -> None:
        self.failed_event = event

    async def notice(self, notice: AskNotice, event: AskEvent) -> None:
        if isinstance(event, AskFinished | AskFailed):
            # Said after the answer and its sources, or by the failure message itself.
            if isinstance(event, AskFinished):
                self.later.append(notice)
        elif notice.level != "info" or self.stream:
            print_notice(self.ctx, notice)


def print_notice(ctx: Context, notice: AskNotice) -> None:
    # Rich only once there is something to say: `lore ask --json` may print nothing else.
    from rich.text import Text

    if notice.level == "info":
        ctx.err.print(plain(f"({notice.text})", "dim"))
    else:
        ctx.err.print(Text.assemble(("lore: ", "yellow"), plain(notice.text)))
