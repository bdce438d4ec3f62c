"""Past turns written out as Markdown (to read or share) or JSONL (to process), streamed so
that a history of any length exports in constant memory.

The export file is written beside its final name and moved into place once complete, so an
interrupted export never leaves half a file under the name the user asked for.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, TextIO

from lore.core.notes import utc_now
from lore.core.storage import atomic_write_stream
from lore.core.turns import Turn
from lore.core.utf8_safe import utf8_text, writable_json
from lore.errors import UsageError

ExportFormat = Literal["markdown", "jsonl"]
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")


def format_for(path: Path) -> ExportFormat:
    """JSONL for .jsonl/.ndjson/.json files, Markdown for anything else."""
    return "jsonl" if path.suffix.lower() in JSONL_SUFFIXES else "markdown"


def _seconds(ms: float | None) -> str:
    return "–" if ms is None else f"{ms / 1000:.2f} s"


def turn_summary(turn: Turn) -> str:
    """One line of what a turn cost: model, tokens in and out, time to first token, total,
    and the speed of the reply once it started."""
    usage = turn.usage
    prompt, reply = usage.prompt_in, usage.reply_out
    estimated = usage.prompt_tokens is None or usage.completion_tokens is None
    same = not turn.model or turn.model == turn.provider
    model = turn.provider if same else f"{turn.provider}/{turn.model}"
    parts = [
        model,
        f"{prompt:,} → {reply:,} tokens" + (" (estimated)" if estimated else ""),
        f"first token {_seconds(turn.timings.first_token_ms)}",
        f"total {_seconds(turn.timings.total_ms)}",
    ]
    generating_s = (turn.timings.total_ms - (turn.timings.first_token_ms or 0.0)) / 1000
    if reply and generating_s > 0.001:
        parts.append(f"{reply / generating_s:,.0f} tok/s")
    if turn.status != "ok":
        parts.append(turn.status + (f": {turn.error}" if turn.error else ""))
    return " · ".join(parts)


def turn_markdown(turn: Turn) -> str:
    question = turn.question.strip()
    heading = " ".join(question.splitlines()[0].split()) if question else "(empty question)"
    if len(heading) > 90:
        heading = heading[:89] + "…"
    lines = [
        f"## {heading}",
        "",
        f"*{turn.time} · {turn_summary(turn)} · turn `{turn.id}`*",
        "",
        "**Question**",
        "",
        *[f"> {line}" if line else ">" for line in question.splitlines()],
        "",
    ]
    if turn.resolved_question and turn.resolved_question.strip() != question:
        lines += [f"*Understood as:* {turn.resolved_question.strip()}", ""]
    lines += ["**Answer**", "", turn.answer.strip() or "*(no answer)*", ""]
    if turn.cited:
        lines += ["**Cited:** " + ", ".join(f"`{path}`" for path in turn.cited), ""]
    lines += ["---", ""]
    return "\n".join(lines)


def _write_all(handle: TextIO, turns: Iterable[Turn], fmt: ExportFormat, title: str) -> int:
    count = 0
    if fmt == "markdown":
        handle.write(utf8_text(f"# {title}\n\n*Exported {utc_now()}*\n\n"))
    for turn in turns:
        if fmt == "jsonl":
            handle.write(writable_json(json.dumps(turn.to_record(), ensure_ascii=False)) + "\n")
        else:
            handle.write(utf8_text(turn_markdown(turn)) + "\n")
        count += 1
    return count


def export_turns(
    turns: Iterable[Turn],
    path: Path,
    fmt: ExportFormat | None = None,
    *,
    title: str = "Lore history",
) -> int:
    """Write `turns` to `path` (format from its suffix unless given); the number written."""
    path = path.expanduser()
    if path.is_dir():
        raise UsageError(f"{path} is a folder; give a file name to export to")
    chosen = fmt or format_for(path)
    return atomic_write_stream(path, lambda handle: _write_all(handle, turns, chosen, title))
