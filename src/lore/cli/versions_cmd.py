"""Versions: `lore log`, `lore notes log`, `lore notes show --at`, `lore notes restore`.

Imported to build the parser for every command: Rich's tables and the core are imported by
the commands that use them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lore.cli.common import Context, print_json
from lore.errors import UsageError
from lore.rich_display import plain

if TYPE_CHECKING:
    from pathlib import Path

    from rich.table import Table
    from rich.text import Text

    from lore.core.public import Note
    from lore.core.session import LoreSession


def register(subparsers: Any) -> None:
    log = subparsers.add_parser("log", help="recent operations: what changed the vault, and who")
    log.add_argument("--limit", type=int, default=20, help="at most this many (default: 20)")
    log.add_argument("--json", action="store_true", help="print JSON")
    log.set_defaults(func=cmd_log)


def register_note_commands(notes_sub: Any, show: Any) -> None:
    """`notes log` and `notes restore`, and `--at` for the existing `notes show`."""
    show.add_argument("--at", metavar="REV", help="the note as it was in this version")
    show_now = show.get_default("func")
    show.set_defaults(func=lambda ctx: cmd_notes_show_at(ctx) if ctx.args.at else show_now(ctx))

    log = notes_sub.add_parser("log", help="the versions of a note: when, what and who")
    log.add_argument("ref", metavar="TITLE", help="title, id or path (a removed note too)")
    log.add_argument(
        "--limit", type=int, default=20, help="the newest this many versions (default: 20)"
    )
    log.add_argument("--json", action="store_true", help="print JSON")
    log.set_defaults(func=cmd_notes_log)

    restore = notes_sub.add_parser(
        "restore", help="bring a note back as it was in a version (the current text is kept)"
    )
    restore.add_argument("ref", metavar="TITLE", help="title, id or path (a removed note too)")
    restore.add_argument("--at", metavar="REV", required=True, help="the version (see: notes log)")
    restore.add_argument("--json", action="store_true", help="print JSON")
    restore.set_defaults(func=cmd_notes_restore)


def print_versioning(ctx: Context, root: Path) -> None:
    """After `lore init`: one line saying whether and how the vault is versioned."""
    from lore.core.session import LoreSession

    with LoreSession.open(root) as session:
        ctx.console.print(plain(session.describe_versioning()))


def record_edit(session: LoreSession, note: Note) -> None:
    """After the person's editor saved a note: commit it as their edit of that note."""
    session.record_edit(note)


def _when(time: str) -> Text:
    return plain(time.replace("T", " ")[5:16])


def _table(title: str) -> Table:
    from rich.table import Table

    table = Table(title=plain(title), title_justify="left")
    table.add_column("Rev", style="dim", no_wrap=True)
    table.add_column("When", no_wrap=True)
    table.add_column("Operation", no_wrap=True)
    table.add_column("Actor", no_wrap=True)
    return table


def cmd_log(ctx: Context) -> int:
    if ctx.args.limit <= 0:
        raise UsageError("--limit must be a positive number")
    operations = ctx.session.recent_operations(ctx.args.limit)
    if ctx.args.json:
        print_json([operation.to_dict() for operation in operations])
        return 0
    if not operations:
        ctx.console.print(plain("No commits yet."))
        return 0
    table = _table(f"The last {len(operations)} operations")
    table.add_column("Summary", ratio=1, min_width=12, overflow="fold")
    for operation in operations:
        table.add_row(
            plain(operation.short),
            _when(operation.time),
            plain(operation.operation),
            plain(operation.actor),
            plain(operation.summary),
        )
    ctx.console.print(table)
    return 0


def cmd_notes_log(ctx: Context) -> int:
    if ctx.args.limit <= 0:
        raise UsageError("--limit must be a positive number")
    every = ctx.session.note_versions(ctx.args.ref)
    versions = every[: ctx.args.limit]
    if ctx.args.json:
        print_json([version.to_dict() for version in versions])
        return 0
    if not versions:
        ctx.console.print(plain(f"{ctx.args.ref}: no versions committed yet."))
        return 0
    noun = "version" if len(every) == 1 else "versions"
    shown = f"the newest {len(versions)} of " if len(versions) < len(every) else ""
    table = _table(f"{shown}{len(every)} {noun} of {ctx.args.ref}")
    table.add_column("Change", no_wrap=True)
    table.add_column("Summary", ratio=1, min_width=12, overflow="fold")
    for version in versions:
        summary = version.summary
        if version.old_path:
            summary += f" (was {version.old_path})"
        table.add_row(
            plain(version.short),
            _when(version.time),
            plain(version.operation),
            plain(version.actor),
            plain(version.change),
            plain(summary),
        )
    ctx.console.print(table)
    if len(versions) < len(every):
        ctx.console.print(plain(f"Older versions: lore notes log TITLE --limit {len(every)}"))
    ctx.console.print(
        plain("lore notes show TITLE --at REV shows one; lore notes restore brings it back")
    )
    return 0


def cmd_notes_show_at(ctx: Context) -> int:
    shown = ctx.session.note_at(ctx.args.ref, ctx.args.at)
    version = shown.version
    if ctx.args.json:
        print_json({**version.to_dict(), "text": shown.text})
        return 0
    ctx.err.print(
        plain(
            f"{version.path} as of {version.short} ({version.time}, "
            f"{version.operation} by {version.actor})",
            "dim",
        )
    )
    ctx.console.print(plain(shown.text, multiline=True), soft_wrap=True, end="")
    return 0


def cmd_notes_restore(ctx: Context) -> int:
    session = ctx.session
    result = session.restore_note(ctx.args.ref, ctx.args.at)
    tombstone = session.relpath(result.tombstone) if result.tombstone else None
    if ctx.args.json:
        print_json(
            {
                "title": result.note.title,
                "path": result.note.path,
                "version": result.version.rev,
                "commit": result.commit,
                "tombstone": tombstone,
            }
        )
        return 0
    if not result.changed:
        ctx.console.print(
            plain(f"{result.note.title} is already as it was in {result.version.short}.")
        )
        return 0
    from rich.text import Text

    line = Text.assemble(
        "Restored ",
        plain(result.note.title, "bold"),
        plain(f" ({result.note.path}) as of {result.version.short}"),
    )
    if result.commit:
        line.append(plain(f"; committed as {result.commit[:8]}"))
    ctx.console.print(line)
    if tombstone:
        ctx.console.print(plain(f"The text it replaced is kept in {tombstone}"))
    return 0
