"""Ingestion commands: `lore ingest`, `lore quarantine …`, `lore audit`, `lore trust retier`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.cli.common import Context, print_json
from lore.core.public import visible
from lore.errors import UsageError
from lore.rich_display import plain
from lore.trust_levels import TRUST_LEVELS

if TYPE_CHECKING:
    from rich.text import Text

    from lore.core.public import HeldClaim, IngestEvent, IngestReport
    from lore.trust_levels import TrustLevel

# The ingest pipeline, the quarantine and Rich's tables are imported by the commands that use
# them: this module is imported to build the parser for every command (see
# lore/cli/__init__.py), and `lore search` must not load the gates.

OUTCOME_STYLE = {
    "admitted": "green",
    "merged": "cyan",
    "held": "yellow",
    "unchanged": "dim",
    "failed": "red",
}
TRUST_STYLE = {"trusted": "green", "semi-trusted": "yellow", "untrusted": "red"}


def register(subparsers: Any) -> None:
    command = subparsers.add_parser(
        "ingest",
        help="read files, folders or URLs through the admission gates into notes",
        description="Claims that pass every gate become notes; the rest wait in the quarantine.",
    )
    command.add_argument("targets", nargs="+", metavar="PATH|URL")
    command.add_argument("--trust", choices=TRUST_LEVELS, help="trust these sources at this level")
    command.add_argument("-r", "--recursive", action="store_true", help="read folders recursively")
    command.add_argument(
        "--dry-run", action="store_true", help="show what would happen; write nothing"
    )
    command.add_argument("--json", action="store_true", help="print JSON")
    command.set_defaults(func=cmd_ingest)

    quarantine = subparsers.add_parser(
        "quarantine", help="review held claims: list, show, promote, reject, undo"
    )
    actions = quarantine.add_subparsers(dest="quarantine_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="list held claims")
    listing.add_argument(
        "--rejected", action="store_true", help="list rejected claims (tombstones)"
    )
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=cmd_quarantine_list)

    show = actions.add_parser("show", help="show one held claim with its flags marked")
    show.add_argument("id", metavar="ID", help="claim id (a unique prefix is enough)")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=cmd_quarantine_show)

    promote = actions.add_parser("promote", help="file a held claim into the notes")
    promote.add_argument("id", metavar="ID", nargs="?", help="claim id (or use --source)")
    promote.add_argument(
        "--source", metavar="URI", help="promote every held claim from this source"
    )
    promote.add_argument("--trust", choices=TRUST_LEVELS, help="trust level of the promoted claim")
    promote.add_argument("--edit", action="store_true", help="edit the text in $EDITOR first")
    promote.add_argument("--json", action="store_true", help="print JSON")
    promote.set_defaults(func=cmd_quarantine_promote)

    reject = actions.add_parser("reject", help="reject a held claim (a tombstone is kept)")
    reject.add_argument("id", metavar="ID", nargs="?", help="claim id (or use --source)")
    reject.add_argument("--source", metavar="URI", help="reject every held claim from this source")
    reject.add_argument("--reason", default="", help="why it was rejected")
    reject.add_argument("--json", action="store_true", help="print JSON")
    reject.set_defaults(func=cmd_quarantine_reject)

    undo = actions.add_parser("undo", help="reverse the last promotion or rejection")
    undo.add_argument("--json", action="store_true", help="print JSON")
    undo.set_defaults(func=cmd_quarantine_undo)

    audit = subparsers.add_parser("audit", help="read the audit log of admission decisions")
    audit.add_argument("--since", metavar="DATE", help="only entries at or after this date")
    audit.add_argument("--limit", type=int, default=200, help="show at most this many (newest)")
    audit.add_argument("--json", action="store_true", help="print JSON")
    audit.set_defaults(func=cmd_audit)

    trust = subparsers.add_parser("trust", help="trust rules")
    trust_actions = trust.add_subparsers(dest="trust_command", metavar="ACTION", required=True)
    retier_cmd = trust_actions.add_parser(
        "retier", help="re-apply trust_rules.yaml to existing notes"
    )
    retier_cmd.add_argument(
        "--dry-run", action="store_true", help="show the changes; write nothing"
    )
    retier_cmd.add_argument("--json", action="store_true", help="print JSON")
    retier_cmd.set_defaults(func=cmd_trust_retier)


# -- ingest -------------------------------------------------------------------------------------


def cmd_ingest(ctx: Context) -> int:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    args = ctx.args
    show_progress = not args.json and ctx.err.is_terminal
    progress = Progress(
        TextColumn("[bold]ingest"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}", markup=False),
        TimeElapsedColumn(),
        console=ctx.err,
        transient=True,
        disable=not show_progress,
    )
    task = progress.add_task("", total=None)

    def on_event(event: IngestEvent) -> None:
        if event.kind == "planned":
            progress.update(task, total=event.total)
        elif event.outcome is not None:
            name = os.path.basename(event.outcome.target.rstrip("/")) or event.outcome.target
            shown = visible(name, multiline=False)[:40]
            progress.update(task, completed=event.done, description=shown)

    with progress:
        report = ctx.session.ingest(
            list(args.targets),
            trust=args.trust,
            recursive=args.recursive,
            dry_run=args.dry_run,
            progress=on_event,
        )
    if args.json:
        print_json(report.to_dict())
    else:
        _print_report(ctx, report)
    counts = report.counts()
    return 1 if counts["failed"] and counts["failed"] == len(report.sources) else 0


def _print_report(ctx: Context, report: IngestReport) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title="dry run: nothing was written" if report.dry_run else None, show_edge=False)
    for column in ("source", "outcome", "admitted", "merged", "held", "reasons"):
        table.add_column(
            column, justify="right" if column in ("admitted", "merged", "held") else "left"
        )
    for source in report.sources:
        label = source.title if source.title and len(report.sources) > 1 else source.target
        table.add_row(
            _short(label, 60),
            Text(source.outcome, style=OUTCOME_STYLE[source.outcome]),
            str(source.admitted),
            str(source.merged),
            str(source.held),
            _short("; ".join(source.reasons), 160),
        )
    ctx.console.print(table)
    counts = report.counts()
    claims = report.claim_counts()
    summary = ", ".join(f"{count} {name}" for name, count in counts.items() if count)
    ctx.console.print(
        f"{len(report.sources)} sources ({summary}); claims: {claims['admitted']} admitted, "
        f"{claims['merged']} merged, {claims['held']} held; {report.elapsed_s:.1f}s"
    )
    if claims["held"] and not report.dry_run:
        ctx.console.print("review held claims with: lore quarantine list")


# -- quarantine ---------------------------------------------------------------------------------


def _short(text: str, limit: int = 70) -> Text:
    """One line of at most `limit` characters, as data: hidden characters spelled out."""
    from rich.text import Text

    flat = " ".join(visible(text, multiline=True).split())
    return Text(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def cmd_quarantine_list(ctx: Context) -> int:
    from rich.table import Table
    from rich.text import Text

    quarantine = ctx.session.quarantine
    held = quarantine.rejected() if ctx.args.rejected else quarantine.list()
    outdated = quarantine.outdated(held)
    if ctx.args.json:
        print_json([{**claim.to_dict(), "outdated": claim.id in outdated} for claim in held])
        return 0
    if not held:
        ctx.console.print("no rejected claims" if ctx.args.rejected else "the quarantine is empty")
        return 0
    table = Table(show_edge=False)
    for column in ("id", "gate", "trust", "source", "text", "reason"):
        table.add_column(column)
    for claim in held:
        table.add_row(
            plain(claim.id),
            plain(claim.gate),
            plain(claim.trust, TRUST_STYLE.get(claim.trust, "")),
            Text.assemble(
                _short(claim.source_title or claim.source_uri, 30),
                ("\n(older version)", "yellow") if claim.id in outdated else "",
            ),
            _short(claim.visible_text(), 50),
            _short(claim.rejected_reason or (claim.reasons[0] if claim.reasons else ""), 50),
        )
    ctx.console.print(table)
    if outdated:
        ctx.console.print(
            f"{len(outdated)} held from an older version of a source read again since; "
            "the notes from that version are superseded"
        )
    return 0


def marked_text(claim: HeldClaim) -> Text:
    """The claim with hidden characters spelled out and flagged spans in reverse video."""
    from rich.text import Text

    from lore.core.public import is_hidden_char

    flagged = [False] * len(claim.text)
    for flag in claim.flags:
        for index in range(max(flag.start, 0), min(flag.end, len(claim.text))):
            flagged[index] = True
    out = Text()
    for index, ch in enumerate(claim.text):
        style = "reverse red" if flagged[index] else ""
        if is_hidden_char(ch):
            out.append(f"⟦U+{ord(ch):04X}⟧", style="bold reverse red")
        else:
            out.append(ch, style=style)
    return out


def cmd_quarantine_show(ctx: Context) -> int:
    from rich.text import Text

    from lore.core.public import OUTDATED_NOTICE

    quarantine = ctx.session.quarantine
    claim = quarantine.get(ctx.args.id)
    outdated = claim.id in quarantine.outdated([claim])
    if ctx.args.json:
        data = claim.to_dict()
        data["visible_text"] = claim.visible_text()
        data["outdated"] = outdated
        print_json(data)
        return 0
    console = ctx.console
    console.print(
        Text.assemble(
            ("held claim ", "bold"), plain(claim.id), "  ", plain(claim.gate, "yellow"), " gate"
        )
    )
    console.print(
        Text.assemble(
            "source: ",
            plain(claim.source_title or ""),
            plain(f" <{claim.source_uri}>"),
            plain(f"  section: {claim.section}  trust: "),
            plain(claim.trust, TRUST_STYLE.get(claim.trust, "")),
            plain(f"  held: {claim.held_at}"),
        )
    )
    if outdated:
        console.print(Text(OUTDATED_NOTICE, style="yellow"))
    console.print()
    console.print(marked_text(claim))
    console.print()
    console.print(Text("reasons:", style="bold"))
    for reason in claim.reasons:
        console.print(plain(f"  - {reason}", multiline=True))
    for flag in claim.flags:
        console.print(
            plain(
                f"  · {flag.kind} at {flag.start}-{flag.end}: {flag.detail}", "dim", multiline=True
            )
        )
    if claim.related_path:
        console.print()
        console.print(plain(f"similar or conflicting note: {claim.related_path}", "bold"))
        if claim.related_text:
            console.print(plain(claim.related_text, multiline=True))
    return 0


def _edit_text(text: str, folder: Path) -> str:
    """`text` after the user edited it; the draft lives in `folder`, inside the vault."""
    import subprocess
    import tempfile

    from lore.core.public import editor_command

    command = editor_command()
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", suffix=".md", prefix="claim-", dir=folder, delete=False, encoding="utf-8"
    ) as handle:
        handle.write(text)
        name = handle.name
    try:
        try:
            completed = subprocess.run([*command, name], check=False)
        except OSError as exc:
            raise UsageError(f"cannot start the editor {command[0]!r}: {exc.strerror}") from None
        if completed.returncode != 0:
            raise UsageError(
                f"the editor exited with status {completed.returncode}; nothing was promoted"
            )
        with open(name, encoding="utf-8") as handle:
            return handle.read().strip()
    finally:
        os.unlink(name)


def _target_args(ctx: Context) -> None:
    if bool(ctx.args.id) == bool(ctx.args.source):
        raise UsageError("give either a claim ID or --source URI")


def cmd_quarantine_promote(ctx: Context) -> int:
    _target_args(ctx)
    session = ctx.session
    trust: TrustLevel | None = ctx.args.trust
    if ctx.args.source:
        if ctx.args.edit:
            raise UsageError("--edit works on one claim at a time")
        count = len(session.quarantine.for_source(ctx.args.source))
        promotion = session.promote_source(ctx.args.source, trust=trust)
    else:
        held = session.quarantine.get(ctx.args.id)
        text = _edit_text(held.text, session.drafts_folder) if ctx.args.edit else None
        promotion = session.promote(held.id, trust=trust, text=text)
        count = 1
    if ctx.args.json:
        print_json(
            {
                "promoted": count,
                "notes": promotion.notes,
                "hidden_removed": promotion.hidden_removed,
            }
        )
    else:
        removed = promotion.hidden_note()
        ctx.console.print(
            plain(
                f"promoted {count} claim{'s' if count != 1 else ''} into "
                f"{', '.join(promotion.notes)}" + (f"; {removed}" if removed else "")
            )
        )
    return 0


def cmd_quarantine_reject(ctx: Context) -> int:
    _target_args(ctx)
    session = ctx.session
    if ctx.args.source:
        rejected = session.reject_source(ctx.args.source, reason=ctx.args.reason)
    else:
        rejected = [session.reject(ctx.args.id, reason=ctx.args.reason)]
    if ctx.args.json:
        print_json({"rejected": [claim.id for claim in rejected]})
    else:
        ctx.console.print(
            f"rejected {len(rejected)} claim{'s' if len(rejected) != 1 else ''} (undo with: lore quarantine undo)"
        )
    return 0


def cmd_quarantine_undo(ctx: Context) -> int:
    result = ctx.session.undo()
    if ctx.args.json:
        print_json(result)
    else:
        claims = ", ".join(result["claims"])
        ctx.console.print(plain(f"undid {result['undone']} of {claims}; the claims are held again"))
    return 0


# -- audit and trust ----------------------------------------------------------------------------


def cmd_audit(ctx: Context) -> int:
    from rich.table import Table

    entries = ctx.session.audit_entries(since=ctx.args.since)
    if ctx.args.limit and ctx.args.limit > 0:
        entries = entries[-ctx.args.limit :]
    if ctx.args.json:
        print_json([entry.to_dict() for entry in entries])
        return 0
    if not entries:
        ctx.console.print("the audit log is empty")
        return 0
    table = Table(show_edge=False)
    for column in ("time", "claim", "gate", "verdict", "actor", "source", "reasons"):
        table.add_column(column)
    for entry in entries:
        table.add_row(
            plain(entry.time),
            plain(entry.claim_id),
            plain(entry.gate),
            plain(entry.verdict, OUTCOME_STYLE.get(entry.verdict, "")),
            plain(entry.actor),
            _short(entry.source, 40),
            _short("; ".join(entry.reasons), 60),
        )
    ctx.console.print(table)
    return 0


def cmd_trust_retier(ctx: Context) -> int:
    from rich.table import Table

    changes = ctx.session.retier(dry_run=ctx.args.dry_run)
    if ctx.args.json:
        print_json(
            {"dry_run": ctx.args.dry_run, "changes": [change.to_dict() for change in changes]}
        )
        return 0
    if not changes:
        ctx.console.print("every note already has the trust its rules give")
        return 0
    table = Table(
        title="dry run: nothing was changed" if ctx.args.dry_run else None, show_edge=False
    )
    for column in ("note", "source", "was", "now", "rule"):
        table.add_column(column)
    for change in changes:
        table.add_row(
            _short(change.title, 50),
            _short(change.source, 40),
            plain(change.old, TRUST_STYLE.get(change.old, "")),
            plain(change.new, TRUST_STYLE.get(change.new, "")),
            plain(change.why),
        )
    ctx.console.print(table)
    verb = "would change" if ctx.args.dry_run else "changed"
    ctx.console.print(f"{verb} the trust of {len(changes)} note{'s' if len(changes) != 1 else ''}")
    return 0
