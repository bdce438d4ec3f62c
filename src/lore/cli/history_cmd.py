"""Past turns and what they cost: `lore history`, `lore compact`, `lore metrics`, `lore tokens`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.cli.collector import mark_brief
from lore.cli.common import Context, positive_number, print_json
from lore.core.public import json_for_terminal, utf8_text, visible
from lore.errors import UsageError
from lore.rich_display import plain

if TYPE_CHECKING:
    from rich.table import Table

    from lore.core.public import CompactionReport, MetricsSummary, Turn

# Rich's tables and the history's modules are imported by the commands that use them: this
# module is imported to build the parser for every command (see lore/cli/__init__.py).

STATUS_STYLE = {"ok": "green", "cancelled": "yellow", "error": "red"}
EXPORT_FORMATS = {"md": "markdown", "markdown": "markdown", "jsonl": "jsonl"}


def register(subparsers: Any) -> None:
    history = subparsers.add_parser(
        "history",
        help="past turns: list, search, show one, export",
        description="Every turn is kept in history.jsonl. Without an action, lists the "
        "latest turns (newest first), or the turns matching --search.",
    )
    history.add_argument(
        "--last", type=positive_number, default=20, metavar="N", help="at most N turns"
    )
    history.add_argument(
        "--search", metavar="Q", help="only turns whose question or answer has every word"
    )
    history.add_argument("--json", action="store_true", help="print JSON")
    history.set_defaults(func=cmd_history)
    mark_brief(history)
    actions = history.add_subparsers(dest="history_command", metavar="ACTION")

    show = actions.add_parser("show", help="show one turn in full")
    show.add_argument("turn_id", metavar="ID", help="the turn id, or a unique start of it")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=cmd_history_show)

    export = actions.add_parser("export", help="write every turn as Markdown or JSONL")
    export.add_argument(
        "--format", choices=["md", "jsonl"], default=None, help="default: from --out, else md"
    )
    export.add_argument("--out", metavar="FILE", help="write to FILE (default: standard output)")
    export.set_defaults(func=cmd_history_export)

    compact_cmd = subparsers.add_parser(
        "compact",
        help="summarise older turns into the memory archive (never deletes a turn)",
        description="Runs when the live turns pass history.compact_threshold_tokens; the "
        "newest history.keep_recent_turns stay live. Summaries are written by the configured "
        "provider, or extractively with --provider offline.",
    )
    compact_cmd.add_argument("--dry-run", action="store_true", help="show the plan, write nothing")
    compact_cmd.add_argument("--json", action="store_true", help="print JSON")
    compact_cmd.set_defaults(func=cmd_compact)

    metrics = subparsers.add_parser("metrics", help="what asks cost: tokens, latency, tokens/s")
    metrics.add_argument(
        "--last", type=positive_number, default=None, metavar="N", help="only the last N asks"
    )
    metrics.add_argument("--json", action="store_true", help="print JSON")
    metrics.set_defaults(func=cmd_metrics)
    mark_brief(metrics)

    tokens = subparsers.add_parser("tokens", help="token use in short: asks, memory, live history")
    tokens.add_argument("--json", action="store_true", help="print JSON")
    tokens.set_defaults(func=cmd_tokens)
    mark_brief(tokens)


# -- formatting ------------------------------------------------------------------------------


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f} ms" if value < 1000 else f"{value / 1000:,.2f} s"


def _rate(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def _tokens(turn: Turn) -> str:
    usage = turn.usage
    prompt, reply = usage.prompt_in, usage.reply_out
    return f"{prompt:,} → {reply:,}"


def _turn_table(turns: list[Turn], title: str) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=plain(title), title_justify="left")
    # Every cell and heading is Text: a str is read for markup and emoji codes, and Rich's
    # table of emoji codes took longer to import than listing the turns takes.
    table.add_column(plain("Id"), style="dim", no_wrap=True)
    table.add_column(plain("When"), no_wrap=True)
    table.add_column(plain("Question"), ratio=1, min_width=16, no_wrap=True, overflow="ellipsis")
    table.add_column(plain("Tokens"), justify="right", no_wrap=True)
    table.add_column(plain("Time"), justify="right", no_wrap=True)
    for turn in turns:
        question = plain(_one_line(turn.question, 80))
        if turn.status != "ok":
            question = Text.assemble((f"[{turn.status}] ", STATUS_STYLE[turn.status]), question)
        table.add_row(
            plain(turn.id),
            plain(turn.time.replace("T", " ")[5:16]),
            question,
            plain(_tokens(turn)),
            plain(_ms(turn.timings.total_ms)),
        )
    return table


# -- lore history ----------------------------------------------------------------------------


def cmd_history(ctx: Context) -> int:
    store = ctx.session.history
    query = (ctx.args.search or "").strip()
    if ctx.args.search is not None and not query:
        raise UsageError("--search needs at least one word")
    if query:
        turns = store.search(query, limit=ctx.args.last)
        title = f"{len(turns)} turns matching {query!r}, newest first"
    else:
        turns = list(reversed(store.tail(ctx.args.last)))
        title = f"The last {len(turns)} turns, newest first"
    if ctx.args.json:
        print_json([turn.to_record() for turn in turns])
        return 0
    if not turns:
        ctx.console.print(
            "No turns match." if query else "No turns yet. Ask with: lore ask QUESTION"
        )
        return 0 if not query else 1
    from rich.text import Text

    ctx.console.print(_turn_table(turns, title))
    ctx.console.print(Text("Show one with: lore history show ID", style="dim"))
    return 0


def cmd_history_show(ctx: Context) -> int:
    from rich.text import Text

    from lore.core.public import turn_summary
    from lore.rich_markdown import SafeMarkdown

    turn = ctx.session.history.get(ctx.args.turn_id)
    if ctx.args.json:
        print_json(turn.to_record())
        return 0
    console = ctx.console
    console.print(
        Text.assemble(
            plain(turn.id, "bold"),
            plain(f"  {turn.time}  "),
            (turn.status, STATUS_STYLE[turn.status]),
        )
    )
    console.print(plain(turn_summary(turn), "dim"))
    console.print(Text("\nQuestion", style="bold"))
    console.print(plain(turn.question, multiline=True))
    if turn.resolved_question and turn.resolved_question.strip() != turn.question.strip():
        console.print(plain(f"Understood as: {turn.resolved_question}", "italic", multiline=True))
    console.print(Text("\nAnswer", style="bold"))
    console.print(
        SafeMarkdown(turn.answer) if turn.answer.strip() else Text("(no answer)", style="dim")
    )
    if turn.cited:
        console.print(plain("\nCited: " + ", ".join(turn.cited), "cyan", multiline=True))
    if turn.error:
        console.print(plain(f"\nError: {turn.error}", "red", multiline=True))
    timings = turn.timings
    console.print(
        Text(
            f"\nretrieval {_ms(timings.retrieval_ms)} · first token {_ms(timings.first_token_ms)}"
            f" · total {_ms(timings.total_ms)}",
            style="dim",
        )
    )
    return 0


def cmd_history_export(ctx: Context) -> int:
    from lore.core.public import turn_markdown

    session = ctx.session
    store = session.history
    chosen = EXPORT_FORMATS[ctx.args.format] if ctx.args.format else None
    if ctx.args.out:
        path = Path(ctx.args.out)
        count = session.export_history(path, chosen)
        ctx.err.print(plain(f"Exported {count:,} turns to {path}"))
        return 0
    if chosen == "jsonl":
        for turn in store.iter_turns():
            record = json.dumps(turn.to_record(), ensure_ascii=False)
            sys.stdout.write(json_for_terminal(record) + "\n")
        return 0
    # Piped, the export is the exact text (but for what no UTF-8 holds); read on a terminal,
    # nothing in it may drive it.
    shown = (lambda text: visible(text, multiline=True)) if sys.stdout.isatty() else utf8_text
    sys.stdout.write(shown(f"# {session.name}: history\n\n"))
    for turn in store.iter_turns():
        sys.stdout.write(shown(turn_markdown(turn) + "\n"))
    return 0


# -- lore compact ----------------------------------------------------------------------------


def cmd_compact(ctx: Context) -> int:
    session = ctx.session
    report = session.compact(
        dry_run=ctx.args.dry_run, then_exit=bool(getattr(ctx.args, "ends_process", False))
    )
    if ctx.args.json:
        print_json(report.to_dict())
        return 0
    _print_compaction(ctx, report, session.config.history.memory_budget_tokens)
    return 0


def _print_compaction(ctx: Context, report: CompactionReport, memory_budget: int) -> None:
    from rich.table import Table
    from rich.text import Text

    console = ctx.console
    if not report.compacted:
        console.print(Text(f"Nothing to compact: {report.reason}."))
        return
    heading = "Dry run: nothing was written." if report.dry_run else "Compacted."
    console.print(Text(f"{heading} {report.reason[:1].upper()}{report.reason[1:]}.", style="bold"))
    table = Table(show_header=True, title_justify="left")
    # Text cells: a str is read for markup and emoji codes, and Rich's table of emoji codes
    # takes longer to import than the rest of the table takes to print.
    table.add_column(plain(""))
    table.add_column(plain("Before"), justify="right")
    table.add_column(plain("After"), justify="right")
    rows = [
        ("Live turns", f"{report.live_turns_before:,}", f"{report.live_turns_after:,}"),
        (
            f"Live tokens (threshold {report.threshold_tokens:,})",
            f"{report.live_tokens_before:,}",
            f"{report.live_tokens_after:,}",
        ),
        (
            f"Memory tokens sent (budget {memory_budget:,})",
            f"{report.memory_tokens_before:,}",
            f"{report.memory_tokens_after:,}",
        ),
        ("Watermark", report.watermark_before or "–", report.watermark_after or "–"),
    ]
    for row in rows:
        table.add_row(*map(plain, row))
    console.print(table)
    written: dict[int, int] = {}
    for entry in report.entries_written:
        written[entry.level] = written.get(entry.level, 0) + 1
    levels = ", ".join(
        f"level {level}: {count:,} ({written.get(level, 0):,} new)"
        for level, count in report.levels.items()
    )
    console.print(Text(f"Memory entries by level: {levels}", style="dim"))
    console.print(Text("No turn was deleted: history.jsonl is unchanged.", style="dim"))


# -- lore metrics / lore tokens ------------------------------------------------------------


def _summary_row(table: Table, label: str, summary: MetricsSummary) -> None:
    from rich.text import Text

    table.add_row(
        Text(label),
        f"{summary.asks:,}",
        f"{summary.prompt_tokens:,}",
        f"{summary.completion_tokens:,}",
        _ms(summary.latency_p50_ms),
        _ms(summary.latency_p95_ms),
        _ms(summary.first_token_p50_ms),
        _rate(summary.tokens_per_second),
    )


def cmd_metrics(ctx: Context) -> int:
    from rich.table import Table
    from rich.text import Text

    summary = ctx.session.metrics.summary(last=ctx.args.last)
    if ctx.args.json:
        print_json(summary.to_dict())
        return 0
    if not summary.asks:
        ctx.console.print("No asks recorded yet. Ask with: lore ask QUESTION")
        return 0
    scope = f"the last {summary.asks:,}" if ctx.args.last else f"all {summary.asks:,}"
    table = Table(title=f"Metrics over {scope} asks", title_justify="left")
    table.add_column("Model", min_width=12, overflow="fold")
    for column in ("Asks", "In", "Out", "p50", "p95", "1st token", "tok/s"):
        table.add_column(column, justify="right", no_wrap=True)
    for label, part in summary.by_model.items():
        _summary_row(table, label, part)
    if len(summary.by_model) > 1:
        _summary_row(table, "all", summary)
    ctx.console.print(table)
    notes = [
        f"{summary.ok:,} answered, {summary.cancelled:,} cancelled, {summary.errors:,} failed",
        "In and Out: tokens as the provider reported them, else Lore's estimate; "
        "p50 and p95: total time of answered asks",
        f"first token p95 {_ms(summary.first_token_p95_ms)}, "
        f"retrieval p50 {_ms(summary.retrieval_p50_ms)}",
        f"estimated tokens {summary.estimated_prompt_tokens:,} in / "
        f"{summary.estimated_completion_tokens:,} out; reported {summary.reported_prompt_tokens:,} / "
        f"{summary.reported_completion_tokens:,}",
        f"citations kept {summary.citations_kept:,}, removed {summary.citations_removed:,}; "
        f"{summary.asks_with_drops:,} asks had items dropped to fit the budget",
    ]
    for line in notes:
        ctx.console.print(Text(line, style="dim"))
    return 0


def tokens_overview(ctx: Context) -> dict[str, Any]:
    session = ctx.session
    metrics = session.metrics
    summary = metrics.summary()
    last = metrics.tail(1)
    status = session.memory_status()
    return {
        "asks": summary.asks,
        "prompt_tokens": summary.prompt_tokens,
        "completion_tokens": summary.completion_tokens,
        "estimated_prompt_tokens": summary.estimated_prompt_tokens,
        "estimated_completion_tokens": summary.estimated_completion_tokens,
        "tokens_per_second": summary.tokens_per_second,
        "latency_p50_ms": summary.latency_p50_ms,
        "last_ask": last[0].to_record() if last else None,
        "live_turns": status.live_turns,
        "live_tokens": status.live_tokens,
        "live_over_threshold": status.live_over_threshold,
        "compact_threshold_tokens": status.threshold_tokens,
        "memory_tokens": status.frontier_tokens,
        "memory_budget_tokens": session.config.history.memory_budget_tokens,
        "memory_entries": sum(level.entries for level in status.levels.values()),
        "memory_problem": status.problem,
    }


def cmd_tokens(ctx: Context) -> int:
    from rich.text import Text

    data = tokens_overview(ctx)
    if ctx.args.json:
        print_json(data)
        return 0
    console = ctx.console
    console.print(
        Text(
            f"asks {data['asks']:,} · tokens in {data['prompt_tokens']:,} · out "
            f"{data['completion_tokens']:,} · p50 {_ms(data['latency_p50_ms'])} · "
            f"{_rate(data['tokens_per_second'])} tokens/s"
        )
    )
    last = data["last_ask"]
    if last:
        prompt = (
            last["prompt_tokens"]
            if last["prompt_tokens"] is not None
            else last["estimated_prompt_tokens"]
        )
        reply = (
            last["completion_tokens"]
            if last["completion_tokens"] is not None
            else last["estimated_completion_tokens"]
        )
        console.print(Text(f"last ask: {prompt:,} → {reply:,} tokens · {_ms(last['total_ms'])}"))
    more = "+" if data["live_over_threshold"] else ""
    due = " (compaction due)" if data["live_tokens"] > data["compact_threshold_tokens"] else ""
    console.print(
        Text(
            f"history: {data['live_turns']:,}{more} live turns, {data['live_tokens']:,}{more} of "
            f"{data['compact_threshold_tokens']:,} tokens{due} · memory {data['memory_entries']:,} "
            f"entries, {data['memory_tokens']:,} of {data['memory_budget_tokens']:,} tokens sent"
        )
    )
    if data["memory_problem"]:
        console.print(Text(f"warning: {data['memory_problem']}", style="yellow"))
    return 0
