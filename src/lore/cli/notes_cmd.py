"""Vault and note commands: init, notes, search, doctor, reindex, locate, and the summary."""

from __future__ import annotations

import shlex
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.cli import versions_cmd
from lore.cli.collector import mark_brief
from lore.cli.common import Context, positive_number, print_json, read_text_argument
from lore.errors import UsageError
from lore.rich_display import highlighted, linked, plain

if TYPE_CHECKING:
    from rich.text import Text

    from lore.core.public import Note, SearchHit

# Rich's tables, the session and the rest are imported by the commands that use them: this
# module is imported to build the parser for every command (see lore/cli/__init__.py).

TRUST_STYLE = {"trusted": "green", "semi-trusted": "yellow", "untrusted": "red"}


def register(subparsers: Any) -> None:
    summary = subparsers.add_parser(
        "summary", help="print the vault summary (what `lore` shows when not in a terminal)"
    )
    summary.set_defaults(func=cmd_summary)
    mark_brief(summary)

    init = subparsers.add_parser("init", help="create a new vault with a commented lore.yaml")
    init.add_argument("path", nargs="?", default=".", help="folder for the vault (default: .)")
    init.add_argument("--name", help="the vault's display name")
    init.set_defaults(func=cmd_init)

    notes = subparsers.add_parser("notes", help="list, show, create, edit, rename, remove notes")
    notes_sub = notes.add_subparsers(dest="notes_command", metavar="ACTION", required=True)

    listing = notes_sub.add_parser("list", help="list notes")
    listing.add_argument("--tag", help="only notes with this tag")
    listing.add_argument(
        "--limit",
        type=positive_number,
        default=LIST_LIMIT,
        metavar="N",
        help=f"show the first N by title (default {LIST_LIMIT}; --json prints every one)",
    )
    listing.add_argument("--all", action="store_true", help="show every note")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=cmd_notes_list)
    mark_brief(listing)

    show = notes_sub.add_parser("show", help="show one note")
    show.add_argument("ref", metavar="TITLE|ID", help="title, id or path of the note")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=cmd_notes_show)
    mark_brief(show)

    new = notes_sub.add_parser("new", help="create a note")
    new.add_argument("title")
    new.add_argument("--tag", action="append", default=[], help="a tag (repeatable)")
    new.add_argument("--body", help="the note's text, or - to read standard input")
    new.add_argument("--folder", default="", help="sub-folder of notes/ to put it in")
    new.add_argument("--json", action="store_true", help="print JSON")
    new.set_defaults(func=cmd_notes_new)

    edit = notes_sub.add_parser("edit", help="open a note in $EDITOR, then reindex it")
    edit.add_argument("ref", metavar="TITLE")
    edit.set_defaults(func=cmd_notes_edit)

    move = notes_sub.add_parser("mv", help="rename a note and rewrite every link to it")
    move.add_argument("old", metavar="OLD")
    move.add_argument("new", metavar="NEW")
    move.add_argument("--json", action="store_true", help="print JSON")
    move.set_defaults(func=cmd_notes_mv)

    remove = notes_sub.add_parser("rm", help="remove a note (a tombstone copy is kept)")
    remove.add_argument("ref", metavar="TITLE")
    remove.add_argument("--json", action="store_true", help="print JSON")
    remove.set_defaults(func=cmd_notes_rm)
    versions_cmd.register_note_commands(notes_sub, show)

    search = subparsers.add_parser(
        "search",
        help="full-text search of the notes",
        description='Words are ranked by BM25F. Use "quoted phrases", tag:x and title:x.',
    )
    search.add_argument("query", nargs="+")
    search.add_argument("--limit", type=int, default=None, help="at most this many hits")
    search.add_argument("--json", action="store_true", help="print JSON")
    search.set_defaults(func=cmd_search)
    mark_brief(search)

    doctor = subparsers.add_parser("doctor", help="check the vault: index, front matter, links")
    doctor.add_argument("--fix", action="store_true", help="rebuild the index if it disagrees")
    doctor.add_argument("--json", action="store_true", help="print JSON")
    doctor.set_defaults(func=cmd_doctor)

    reindex = subparsers.add_parser("reindex", help="rebuild the search index from scratch")
    reindex.set_defaults(func=cmd_reindex)

    locate = subparsers.add_parser("locate", help="print where Lore keeps something")
    locate.add_argument("what", choices=["vault", "config", "data", "themes"])
    locate.set_defaults(func=cmd_locate)
    mark_brief(locate)


# -- helpers ---------------------------------------------------------------------------------


def _note_dict(note: Note, with_body: bool = True) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": note.id,
        "title": note.title,
        "path": note.path,
        "tags": note.tags,
        "created": note.created,
        "updated": note.updated,
        "trust": note.trust,
        "status": note.status,
        "sources": [source.to_dict() for source in note.sources],
        "problems": note.problems,
    }
    if with_body:
        data["body"] = note.body
    return data


def _trust_text(trust: str) -> Text:
    return plain(trust, TRUST_STYLE.get(trust, ""))


def _hit_snippet(hit: SearchHit) -> Text:
    return highlighted(hit.snippet, hit.highlights, "bold reverse")


# -- commands --------------------------------------------------------------------------------


def default_action(ctx: Context) -> int:
    """`lore` alone: the full-screen app in a terminal, the summary when piped or scripted."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        from lore.tui.app import run_app

        # Starting the app makes a few hundred thousand objects (modules, the stylesheet,
        # widgets) and next to no garbage, yet the collector walked them over and over while
        # they were made: about 40 ms of a first screen of 300-400 ms. The `lore` program
        # keeps it paused from the start, and the app resumes it once that screen is drawn.
        run_app(ctx.session, collector_paused=bool(getattr(ctx.args, "collector_paused", False)))
        return 0
    return cmd_summary(ctx)


def cmd_summary(ctx: Context) -> int:
    from rich.panel import Panel
    from rich.table import Table

    session = ctx.session
    docs = session.note_documents()
    tags = Counter(tag for doc in docs for tag in (doc.get("tags") or "").split(",") if tag)
    recent = sorted(docs, key=lambda doc: doc.get("updated") or "", reverse=True)[:5]
    console = ctx.console
    summary = Table.grid(padding=(0, 2))
    summary.add_row("[bold]Vault[/]", plain(f"{session.name}  ({session.root})"))
    summary.add_row("[bold]Notes[/]", str(len(docs)))
    summary.add_row(
        "[bold]Tags[/]", plain(", ".join(f"{tag} ({n})" for tag, n in tags.most_common(12)) or "-")
    )
    console.print(Panel(summary, title="Lore", expand=False))
    if recent:
        table = Table(title="Last changed", title_justify="left")
        table.add_column("Updated")
        table.add_column("Title")
        table.add_column("Path", style="dim")
        for doc in recent:
            table.add_row(plain(doc.get("updated") or "-"), plain(doc["title"]), plain(doc["path"]))
        console.print(table)
    console.print(
        "Try: [bold]lore search[/] WORDS · [bold]lore notes list[/] · "
        "[bold]lore notes new[/] TITLE · [bold]lore doctor[/] · [bold]lore --help[/]"
    )
    return 0


def cmd_init(ctx: Context) -> int:
    from rich.text import Text

    from lore.core.session import LoreSession

    root = LoreSession.create(Path(ctx.args.path), ctx.args.name)
    ctx.console.print(Text.assemble("Vault ready at ", plain(str(root), "bold")))
    versions_cmd.print_versioning(ctx, root)
    ctx.console.print(
        plain("Add notes with: lore --vault " + shlex.quote(str(root)) + " notes new TITLE")
    )
    return 0


# Rich draws a table row in about a quarter of a millisecond: ten thousand notes took seconds
# to list, more than anyone reads on a terminal.
LIST_LIMIT = 200


def cmd_notes_list(ctx: Context) -> int:
    docs = ctx.session.note_documents()
    tag = (ctx.args.tag or "").lower().lstrip("#")
    if tag:
        docs = [doc for doc in docs if tag in (doc.get("tags") or "").split(",")]
    docs.sort(key=lambda doc: doc["title"].casefold())
    if ctx.args.json:
        print_json(
            [
                {
                    "id": doc["id"],
                    "title": doc["title"],
                    "path": doc["path"],
                    "tags": [t for t in (doc.get("tags") or "").split(",") if t],
                    "updated": doc.get("updated"),
                    "trust": doc.get("trust"),
                    "status": doc.get("status"),
                }
                for doc in docs
            ]
        )
        return 0
    from rich.table import Table

    shown = docs if ctx.args.all else docs[: ctx.args.limit]
    table = Table(
        title=plain(f"{len(docs):,} notes" + (f" tagged {tag}" if tag else "")),
        caption=(
            plain(
                f"the first {len(shown):,} of {len(docs):,} by title: --all shows every one, "
                "--tag or `lore search` narrows them"
            )
            if len(shown) < len(docs)
            else None
        ),
    )
    # Headings as Text too, as in cmd_search: no markup or emoji codes to read.
    table.add_column(plain("Title"))
    table.add_column(plain("Tags"), style="cyan")
    table.add_column(plain("Trust"), no_wrap=True)
    # The day alone: the time would be cut in 80 columns (`--json` gives it whole).
    table.add_column(plain("Updated"), style="dim", no_wrap=True)
    table.add_column(plain("Path"), style="dim")
    for doc in shown:
        title = plain(doc["title"])
        if doc.get("status") == "superseded":
            title.stylize("strike dim")
        table.add_row(
            title,
            plain((doc.get("tags") or "").replace(",", ", ")),
            _trust_text(doc.get("trust") or ""),
            plain(_day_of(doc.get("updated") or "-")),
            plain(doc["path"]),
        )
    ctx.console.print(table)
    return 0


def _day_of(stamp: str) -> str:
    """The day of an ISO 8601 time ("2026-11-19T08:30:00Z" -> "2026-11-19"), else as given."""
    day, separator, time = stamp.partition("T")
    is_day = len(day) == 10 and day[4] == day[7] == "-" and day.replace("-", "").isdigit()
    return day if separator and is_day and time[:1].isdigit() else stamp


# Longer notes are shown as plain text; Markdown rendering would take seconds.
MARKDOWN_LIMIT_CHARS = 200_000


def cmd_notes_show(ctx: Context) -> int:
    from rich.panel import Panel
    from rich.table import Table

    from lore.rich_markdown import SafeMarkdown

    note = ctx.session.find_note(ctx.args.ref)
    if ctx.args.json:
        print_json(_note_dict(note))
        return 0
    meta = Table.grid(padding=(0, 2))
    meta.add_row("id", plain(note.id))
    meta.add_row("path", plain(note.path))
    meta.add_row("tags", plain(", ".join(note.tags) or "-"))
    meta.add_row("trust", _trust_text(note.trust))
    meta.add_row("status", plain(note.status))
    meta.add_row("updated", plain(note.updated or "-"))
    for source in note.sources:
        meta.add_row("source", linked(source.title or source.uri, source.uri))
    for problem in note.problems:
        meta.add_row("[red]problem[/]", plain(problem, multiline=True))
    ctx.console.print(Panel(meta, title=plain(note.title, "bold"), expand=False))
    if len(note.body) > MARKDOWN_LIMIT_CHARS:
        # Rendering Markdown takes about 3 s a megabyte: a huge note is shown as it is
        # written, and the terminal wraps its lines.
        ctx.err.print(
            plain(f"shown as plain text: longer than {MARKDOWN_LIMIT_CHARS:,} characters", "dim")
        )
        ctx.console.print(plain(note.body, multiline=True), soft_wrap=True)
        return 0
    ctx.console.print(SafeMarkdown(note.body))
    return 0


def cmd_notes_new(ctx: Context) -> int:
    from rich.text import Text

    body = read_text_argument(ctx.args.body)
    note = ctx.session.create_note(
        ctx.args.title, body=body, tags=ctx.args.tag, folder=ctx.args.folder
    )
    if ctx.args.json:
        print_json(_note_dict(note, with_body=False))
    else:
        ctx.console.print(
            Text.assemble("Created ", plain(note.title, "bold"), plain(f" ({note.path})"))
        )
    return 0


def cmd_notes_edit(ctx: Context) -> int:
    import subprocess

    from lore.core.public import editor_command

    session = ctx.session
    note = session.find_note(ctx.args.ref)
    path = session.resolve_inside(note.path)
    command = [*editor_command(), str(path)]
    try:
        result = subprocess.run(command, check=False)
    except FileNotFoundError:
        raise UsageError(f"editor {command[0]!r} not found; set $EDITOR") from None
    report = session.reconcile()
    versions_cmd.record_edit(session, note)
    if result.returncode != 0:
        ctx.err.print(f"lore: the editor exited with status {result.returncode}")
        return 1
    changed = note.path in report.changed
    ctx.console.print(plain(f"{note.path}: {'reindexed' if changed else 'unchanged'}"))
    return 0


def cmd_notes_mv(ctx: Context) -> int:
    from rich.text import Text

    result = ctx.session.rename_note(ctx.args.old, ctx.args.new)
    if ctx.args.json:
        print_json({"note": _note_dict(result.note, with_body=False), "relinked": result.relinked})
        return 0
    ctx.console.print(
        Text.assemble(
            "Renamed to ", plain(result.note.title, "bold"), plain(f" ({result.note.path})")
        )
    )
    for path, count in sorted(result.relinked.items()):
        ctx.console.print(plain(f"  rewrote {count} link(s) in {path}"))
    return 0


def cmd_notes_rm(ctx: Context) -> int:
    from rich.text import Text

    result = ctx.session.remove_note(ctx.args.ref)
    tombstone = ctx.session.relpath(result.tombstone)
    if ctx.args.json:
        print_json(
            {
                "removed": _note_dict(result.note, with_body=False),
                "tombstone": tombstone,
                "linked_from": result.linked_from,
            }
        )
        return 0
    ctx.console.print(
        Text.assemble(
            "Removed ", plain(result.note.title, "bold"), plain(f"; a copy is kept in {tombstone}")
        )
    )
    if result.linked_from:
        ctx.console.print(
            plain(f"These notes still link to it: {', '.join(result.linked_from)}", "yellow")
        )
    return 0


def cmd_search(ctx: Context) -> int:
    query = " ".join(ctx.args.query)
    if ctx.args.limit is not None and ctx.args.limit <= 0:
        raise UsageError("--limit must be a positive number")
    hits = ctx.session.search(query, limit=ctx.args.limit)
    if ctx.args.json:
        print_json([hit.to_dict() for hit in hits])
        return 0
    if not hits:
        ctx.console.print(plain(f"No notes match {query!r}."))
        return 0
    from rich.console import Group
    from rich.padding import Padding

    noun = "hit" if len(hits) == 1 else "hits"
    # A list rather than a table: each snippet has the whole width of the terminal, and
    # the list is laid out in less than half a table's time, a tenth of the command's.
    # Every piece is Text: a str is read for markup and emoji codes, and Rich's table of
    # emoji codes alone took longer to import than a search took to run.
    shown: list[Any] = [plain(f"{len(hits)} {noun} for {query!r}", "bold")]
    indent = len(str(len(hits))) + 2
    for number, hit in enumerate(hits, 1):
        line = plain(f"{number:>{indent - 2}}. ", "dim")
        line.append_text(plain(hit.title, "bold"))
        if hit.trust == "untrusted":
            line.append(" (untrusted)", style="red")
        if hit.status == "superseded":
            line.append(" (superseded)", style="dim")
        line.append(f"  {hit.score:.2f}", style="dim")
        shown += [plain(""), line, Padding(_hit_snippet(hit), (0, 0, 0, indent), expand=False)]
    ctx.console.print(Group(*shown))
    return 0


def cmd_doctor(ctx: Context) -> int:
    from rich.table import Table
    from rich.text import Text

    report = ctx.session.doctor(fix=ctx.args.fix)
    if ctx.args.json:
        print_json(
            {
                "ok": report.ok,
                "notes": report.notes,
                "fixed": report.fixed,
                "findings": [finding.to_dict() for finding in report.findings],
            }
        )
        return 0 if report.ok else 1
    for line in report.fixed:
        ctx.console.print(plain(f"fixed: {line}", "green"))
    if not report.findings:
        ctx.console.print(Text(f"All {report.notes} notes look healthy.", style="green"))
        return 0
    table = Table(title=f"{len(report.findings)} findings in {report.notes} notes")
    table.add_column("Kind")
    table.add_column("Where")
    table.add_column("What")
    for finding in report.findings:
        where = finding.path + (f":{finding.line}" if finding.line else "")
        style = "red" if finding.kind in {"front-matter", "index", "history"} else "yellow"
        table.add_row(plain(finding.kind, style), plain(where), plain(finding.message))
    ctx.console.print(table)
    return 0 if report.ok else 1


def cmd_reindex(ctx: Context) -> int:
    from rich.text import Text

    report = ctx.session.reindex()
    ctx.console.print(Text(f"Indexed {len(report.added)} notes; skipped {len(report.skipped)}."))
    return 0


def cmd_locate(ctx: Context) -> int:
    from lore.paths import CONFIG_FILE_NAME, discover_vault, user_dirs

    what = ctx.args.what
    dirs = user_dirs()
    if what == "data":
        print(dirs.data)
    elif what == "themes":
        print(dirs.themes)
    elif what == "vault":
        print(discover_vault(getattr(ctx.args, "vault", None))[0])
    else:
        from lore.config import config_sources

        root, _ = discover_vault(getattr(ctx.args, "vault", None))
        # Lowest precedence first, the order they are applied in; flags go on top of all.
        for source in config_sources(root / CONFIG_FILE_NAME):
            missing = "" if source.present else "  (missing)"
            print(f"{source.kind:<6} {source.where}{missing}")
    return 0
