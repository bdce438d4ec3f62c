"""`lore ask` (a streamed answer with checked citations) and `lore context` (the preview)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from lore.cli.collector import mark_brief
from lore.cli.common import Context, print_json
from lore.core.public import visible
from lore.errors import UsageError
from lore.rich_display import plain

if TYPE_CHECKING:
    from lore.core.public import ContextPack, Turn

# The ask engine, asyncio and Rich's tables are imported by the commands that use them: this
# module is imported to build the parser for every command (see lore/cli/__init__.py).

# How long after this terminal's last question `lore ask` follows it up, in minutes, for the
# help text: lore.core.conversations.CONTINUE_WINDOW_S, which would load the vault's modules
# into `lore --help`. tests/test_startup_imports.py checks the help says the core's figure.
CONTINUE_WINDOW_MINUTES = 10


def register(subparsers: Any) -> None:
    ask = subparsers.add_parser(
        "ask",
        help="ask the wiki a question; the answer streams in with cited notes",
        description="Answer from the notes with [n] citations. Use - to read the question "
        "from standard input.",
    )
    ask.add_argument("question", nargs="+", metavar="QUESTION")
    ask.add_argument("--json", action="store_true", help="print the turn as JSON at the end")
    ask.add_argument(
        "--save", action="store_true", help="file the answer as a note, through the gates"
    )
    _conversation_arguments(ask)
    ask.set_defaults(func=cmd_ask)
    mark_brief(ask)

    context = subparsers.add_parser(
        "context",
        help="show exactly what the next ask would send, section by section",
        description="The recursive-context preview: each section's tokens against its cap "
        "and the whole budget, what was included, and what was dropped and why.",
    )
    context.add_argument("question", nargs="*", metavar="QUESTION")
    context.add_argument("--json", action="store_true", help="print JSON")
    context.add_argument("--raw", action="store_true", help="print the prompt text itself")
    _conversation_arguments(context)
    context.set_defaults(func=cmd_context)
    mark_brief(context)


def _conversation_arguments(parser: Any) -> None:
    minutes = CONTINUE_WINDOW_MINUTES
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-c",
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="follow up on this terminal's last conversation however long ago (without "
        f"it, only when this terminal asked within {minutes} minutes)",
    )
    group.add_argument(
        "-n",
        "--new",
        action="store_true",
        help="start a new conversation: nothing asked before is followed up",
    )


def _question(words: list[str]) -> str:
    if words == ["-"]:
        return sys.stdin.read()
    return " ".join(words)


# -- lore ask ----------------------------------------------------------------------------------


def _cost_line(turn: Turn) -> str:
    usage = turn.usage
    prompt, reply = usage.prompt_in, usage.reply_out
    estimated = " (estimated)" if usage.prompt_tokens is None else ""
    first = turn.timings.first_token_ms
    model = f"{turn.provider}/{turn.model}" if turn.model else turn.provider
    parts = [model, f"{prompt} → {reply} tokens{estimated}"]
    if first is not None:
        parts.append(f"first token {first:.0f} ms")
    parts.append(f"total {turn.timings.total_ms:.0f} ms")
    return " · ".join(parts)


def _sources(pack: ContextPack, turn: Turn) -> list[dict[str, Any]]:
    cited = set(turn.cited)
    return [
        {
            "number": item.number,
            "id": item.ref,
            "title": item.label,
            "path": item.path,
            "trust": item.trust,
            "cited": item.ref in cited,
        }
        for item in pack.notes()
    ]


async def _run_ask(ctx: Context, question: str) -> int:
    from lore.cli.ask_listener import TerminalListener, print_notice
    from lore.core.public import relay_ask

    session = ctx.session
    session.follow_terminal_conversation(continue_latest=ctx.args.continue_latest, new=ctx.args.new)
    stream_to_terminal = not ctx.args.json
    listener = TerminalListener(ctx, stream=stream_to_terminal)
    try:
        await relay_ask(session.ask(question), listener)
    finally:
        await session.aclose()
    finished, failed = listener.done, listener.failed_event
    if stream_to_terminal:
        sys.stdout.write("\n")
    # Rich is imported for what goes to the terminal: an answer printed as JSON needs none.
    if failed is not None:
        from rich.text import Text

        if ctx.args.json:
            print_json({"turn": failed.turn.to_record(), "error": failed.error_message})
        ctx.err.print(Text.assemble(("lore: ", "bold red"), plain(failed.error_message)))
        ctx.err.print(Text(f"The turn was kept in the history as {failed.turn.id}.", style="dim"))
        return 1
    assert finished is not None
    turn = finished.turn
    saved: dict[str, Any] | None = None
    if ctx.args.save:
        saved = session.save_answer(turn)
    if ctx.args.json:
        print_json(
            {
                "turn": turn.to_record(),
                "citations_removed": finished.citations_removed,
                "sources": _sources(finished.pack, turn),
                "dropped": [item.to_dict() for item in finished.pack.dropped],
                "saved": saved,
            }
        )
        return 0
    from rich.text import Text

    cited = [source for source in _sources(finished.pack, turn) if source["cited"]]
    for source in cited:
        line = Text.assemble(
            (f"[{source['number']}] ", "cyan"),
            plain(source["title"]),
            plain(f"  {source['path']}", "dim"),
        )
        if source["trust"] == "untrusted":
            line.append(" (untrusted)", style="red")
        ctx.console.print(line)
    sys.stdout.flush()
    for notice in listener.later:
        print_notice(ctx, notice)
    dropped_notes = [item for item in finished.pack.dropped if item.section == "evidence"]
    if dropped_notes:
        ctx.err.print(
            Text(
                f"{len(dropped_notes)} more matching note(s) did not fit the evidence budget "
                "(see: lore context QUESTION).",
                style="dim",
            )
        )
    ctx.err.print(Text(_cost_line(turn), style="dim"))
    if saved is not None:
        # The slash commands' module, for this one line: an ask that saves nothing skips it.
        from lore.core.public import ingest_summary

        ctx.console.print(plain(ingest_summary(saved), multiline=True))
    return 0


def cmd_ask(ctx: Context) -> int:
    question = _question(ctx.args.question)
    if not question.strip():
        raise UsageError("ask a question (it was empty)")
    if not getattr(ctx.session.provider, "needs_event_loop", True):
        # Nothing to wait for (the offline answerer): no event loop, nor asyncio to load.
        from lore.core.public import run_without_loop

        return run_without_loop(_run_ask(ctx, question))
    import asyncio

    return asyncio.run(_run_ask(ctx, question))


# -- lore context ------------------------------------------------------------------------------


def _fill_style(used: int, cap: int | None) -> str:
    if cap is None or cap == 0:
        return ""
    share = used / cap
    return "red" if share > 0.95 else "yellow" if share > 0.75 else "green"


def cmd_context(ctx: Context) -> int:
    from rich.table import Table
    from rich.text import Text

    question = _question(ctx.args.question)
    session = ctx.session
    session.follow_terminal_conversation(continue_latest=ctx.args.continue_latest, new=ctx.args.new)
    pack = session.preview(question)
    if ctx.args.json:
        data = pack.to_dict()
        data["messages"] = [message.to_dict() for message in pack.messages()]
        print_json(data)
        return 0
    if ctx.args.raw:
        sys.stdout.write(visible(pack.raw_text(), multiline=True))
        return 0
    console = ctx.console
    title = f"Next prompt: {pack.total_tokens} of {pack.budget} tokens"
    if pack.followup:
        console.print(plain(f"Understood as: {pack.resolved_question}", "italic"))
    table = Table(title=title, title_justify="left")
    table.add_column("Section")
    table.add_column("Tokens", justify="right")
    table.add_column("Cap", justify="right")
    table.add_column("Included")
    for section in pack.sections:
        cap = "-" if section.cap is None else str(section.cap)
        included = Text()
        for position, item in enumerate(section.items):
            if position:
                included.append("\n")
            if item.number is not None:
                included.append(f"[{item.number}] ", style="cyan")
            included.append_text(plain(item.label))
            details = [f"{item.tokens} tok"]
            if item.trimmed:
                details.append("trimmed")
            if item.trust == "untrusted":
                details.append("untrusted")
            included.append(f"  ({', '.join(details)})", style="dim")
            if item.why and item.kind in ("note", "turn", "memory"):
                included.append("\n    ")
                included.append_text(plain(item.why, "dim"))
        table.add_row(
            section.name.replace("_", " "),
            Text(str(section.tokens), style=_fill_style(section.tokens, section.cap)),
            cap,
            included,
        )
    table.add_row(
        Text("total", style="bold"),
        Text(str(pack.total_tokens), style=_fill_style(pack.total_tokens, pack.budget)),
        str(pack.budget),
        Text(f"+ up to {pack.reply_tokens} tokens for the reply", style="dim"),
    )
    console.print(table)
    if pack.dropped:
        dropped = Table(title="Dropped to fit (lowest value first)", title_justify="left")
        dropped.add_column("Section")
        dropped.add_column("Item")
        dropped.add_column("Tokens", justify="right")
        dropped.add_column("Why")
        for gone in pack.dropped:
            dropped.add_row(
                gone.section.replace("_", " "),
                plain(gone.label),
                str(gone.tokens),
                plain(gone.reason),
            )
        console.print(dropped)
    else:
        console.print(Text("Nothing was dropped.", style="dim"))
    return 0
