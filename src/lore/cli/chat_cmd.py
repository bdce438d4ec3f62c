"""`lore chat`: the line REPL, for terminals where the full-screen app is not wanted."""

from __future__ import annotations

from typing import Any

from lore.cli.common import Context


def register(subparsers: Any) -> None:
    chat = subparsers.add_parser(
        "chat",
        help="ask questions and run /commands in a line REPL",
        description=(
            "Answers stream as they are written; /help lists the commands (Tab completes "
            "them). Ctrl-C cancels an answer, Ctrl-D quits. With standard input from a pipe, "
            "each line is a question or a /command."
        ),
    )
    chat.set_defaults(func=cmd_chat)


def cmd_chat(ctx: Context) -> int:
    # Imported here so that other commands never load prompt-toolkit.
    from lore.repl import run_chat

    return run_chat(ctx.session, ctx.console)
