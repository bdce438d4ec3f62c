"""The one slash-command registry, shared by the line REPL, the full-screen app and its palette.

A command is a name, a line of help, an argument hint and a synchronous handler that calls
the session and returns a `CommandResult`: Markdown, a table, raw data, and optionally an
`action` the face carries out, one of the small `CommandAction` union (quit, clear the
transcript, apply a theme, ask a question, show a pane or a note, refresh, model switched).
Each face dispatches actions in one `match`, and leaves out those it has no place for. An unknown command or a bad argument is a result with
`ok=False` and one line of Markdown, never an exception, so a session always goes on.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lore.core.dataclass_lite import dataclass_own_init
from lore.errors import LoreError, UsageError

if TYPE_CHECKING:
    from lore.core.session import LoreSession


@dataclass_own_init(frozen=True)
class Quit:
    """Leave the face."""


@dataclass_own_init(frozen=True)
class ClearTranscript:
    """Clear what is on screen; the history keeps every turn."""


@dataclass_own_init(frozen=True)
class ApplyTheme:
    """Use the theme called `name`."""

    name: str


@dataclass_own_init(frozen=True)
class AskAgain:
    """Ask `question` as if it had been typed."""

    question: str


@dataclass_own_init(frozen=True)
class ShowPane:
    """Bring the pane called `pane` to the front."""

    pane: str


@dataclass_own_init(frozen=True)
class ShowNote:
    """Open the note `ref` names."""

    ref: str


@dataclass_own_init(frozen=True)
class Refresh:
    """The vault changed: whatever shows notes, held claims or the history reloads."""


@dataclass_own_init(frozen=True)
class ModelSwitched:
    """Answers now come from `model` of `provider`, for the rest of the session."""

    provider: str
    model: str


CommandAction = (
    Quit | ClearTranscript | ApplyTheme | AskAgain | ShowPane | ShowNote | Refresh | ModelSwitched
)


@dataclass_own_init
class TableData:
    """Rows to show as a table, under their column names."""

    columns: list[str]
    rows: list[list[str]]
    title: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "columns": self.columns, "rows": self.rows}


@dataclass_own_init
class CommandResult:
    """What a slash command gives back: Markdown or a table to show, raw data, an action for the
    face, and whether it succeeded."""

    markdown: str | None = None
    table: TableData | None = None
    data: Any = None
    action: CommandAction | None = None
    ok: bool = True


@dataclass_own_init
class CommandContext:
    """What a handler runs against: the session, and the registry that dispatched it."""

    session: LoreSession
    # Set by dispatch, so /help can list what the face actually offers.
    registry: CommandRegistry | None = None


Handler = Callable[[CommandContext, str], CommandResult]


@dataclass_own_init(frozen=True)
class SlashCommand:
    """One slash command: its name and aliases, a line of help, the hint for its arguments and
    its handler."""

    name: str
    help: str
    hint: str
    run: Handler
    aliases: tuple[str, ...] = ()

    @property
    def usage(self) -> str:
        return f"/{self.name}" + (f" {self.hint}" if self.hint else "")


def failure(message: str) -> CommandResult:
    return CommandResult(markdown=message, ok=False)


class CommandRegistry:
    def __init__(self) -> None:
        self._commands: dict[str, SlashCommand] = {}
        self._aliases: dict[str, str] = {}

    def register(self, command: SlashCommand) -> SlashCommand:
        self._commands[command.name] = command
        for alias in command.aliases:
            self._aliases[alias] = command.name
        return command

    def all(self) -> list[SlashCommand]:
        return sorted(self._commands.values(), key=lambda command: command.name)

    def get(self, name: str) -> SlashCommand | None:
        key = name.strip().lstrip("/").lower()
        key = self._aliases.get(key, key)
        return self._commands.get(key)

    def complete(self, prefix: str) -> list[SlashCommand]:
        """Commands matching `prefix` (with or without the slash), best first.

        Exact name, then name prefix, then alias prefix, then substring, then the letters in
        order (so "/hst" finds /history); shorter names first within each rank.
        """
        typed = prefix.strip().lstrip("/").split(" ", 1)[0].lower()
        if not typed:
            return self.all()
        ranked: list[tuple[int, int, str, SlashCommand]] = []
        for command in self._commands.values():
            rank = _match_rank(typed, command)
            if rank is not None:
                ranked.append((rank, len(command.name), command.name, command))
        ranked.sort(key=lambda item: item[:3])
        return [item[3] for item in ranked]

    def dispatch(self, ctx: CommandContext, line: str) -> CommandResult:
        """Run one slash-command line. Never raises for a user's mistake."""
        text = line.strip()
        if not text.startswith("/") or len(text) == 1:
            return failure("a command starts with / followed by its name (try /help)")
        name, _, args = text[1:].partition(" ")
        command = self.get(name)
        if command is None:
            guesses = self.complete(name)[:3]
            hint = f"; did you mean {', '.join('/' + g.name for g in guesses)}?" if guesses else ""
            return failure(f"unknown command /{name}{hint} (see /help)")
        ctx.registry = self
        try:
            return command.run(ctx, args.strip())
        except LoreError as exc:
            return failure(exc.message)
        except Exception as exc:  # a handler bug must not end the user's session
            return failure(f"/{command.name} failed: {type(exc).__name__}: {exc}")


def _match_rank(typed: str, command: SlashCommand) -> int | None:
    name = command.name
    if typed == name or typed in command.aliases:
        return 0
    if name.startswith(typed):
        return 1
    if any(alias.startswith(typed) for alias in command.aliases):
        return 2
    if typed in name:
        return 3
    position = 0
    for char in typed:
        position = name.find(char, position)
        if position < 0:
            return None
        position += 1
    return 4


# -- argument helpers --------------------------------------------------------------------------


def _split(args: str, usage: str) -> list[str]:
    try:
        return shlex.split(args)
    except ValueError as exc:
        raise UsageError(f"{exc}; usage: {usage}") from None


def _positive_int(text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{what} must be a whole number, got {text!r}") from None
    if value <= 0:
        raise UsageError(f"{what} must be at least 1, got {value}")
    return value


def _cell(value: Any, limit: int = 80) -> str:
    text = " ".join(str(value if value is not None else "-").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} ms"


# -- the commands ------------------------------------------------------------------------------


def cmd_help(ctx: CommandContext, args: str) -> CommandResult:
    registry = ctx.registry or build_registry()
    if args:
        command = registry.get(args)
        if command is None:
            return failure(f"no command /{args.lstrip('/')} (see /help)")
        aliases = ", ".join("/" + alias for alias in command.aliases)
        extra = f"\n\nAlso: {aliases}" if aliases else ""
        return CommandResult(
            markdown=f"`{command.usage}`: {command.help}{extra}", data=command.name
        )
    lines = [f"- `{command.usage}`: {command.help}" for command in registry.all()]
    return CommandResult(
        markdown="**Slash commands**\n\n" + "\n".join(lines),
        table=TableData(
            ["command", "what it does"],
            [[command.usage, command.help] for command in registry.all()],
            "Slash commands",
        ),
        data=[command.name for command in registry.all()],
    )


def cmd_search(ctx: CommandContext, args: str) -> CommandResult:
    if not args:
        raise UsageError("usage: /search WORDS")
    hits = ctx.session.search(args)
    if not hits:
        return CommandResult(markdown=f"No notes match {args!r}.", data=[])
    rows = [
        [str(number), hit.title, hit.trust, _cell(hit.snippet, 100), f"{hit.score:.2f}"]
        for number, hit in enumerate(hits, 1)
    ]
    return CommandResult(
        table=TableData(
            ["#", "title", "trust", "snippet", "score"],
            rows,
            f"{len(hits)} note{'s' if len(hits) != 1 else ''}",
        ),
        data=[hit.to_dict() for hit in hits],
    )


def cmd_history(ctx: CommandContext, args: str) -> CommandResult:
    history = ctx.session.history
    if not args or args.lstrip("+-").isdigit():
        count = _positive_int(args, "the number of turns") if args else 10
        turns = list(reversed(history.tail(count)))
        title = f"last {len(turns)} turns"
    else:
        turns = history.search(args, limit=20)
        title = f"{len(turns)} turns matching {args!r}"
    rows = [
        [turn.id, turn.time, turn.status, _cell(turn.question, 60), _ms(turn.timings.total_ms)]
        for turn in turns
    ]
    return CommandResult(
        markdown=None if turns else "No turns yet." if not args else f"No turns match {args!r}.",
        table=TableData(["id", "time", "status", "question", "total"], rows, title)
        if turns
        else None,
        data=[turn.to_record() for turn in turns],
        action=ShowPane("history"),
    )


def _figure(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}{unit}" if value >= 10 else f"{value:,.1f}{unit}"
    return f"{value:,}{unit}"


def _cost_markdown(data: dict[str, Any]) -> str:
    """The few figures people ask for: how many asks, tokens in and out, speed."""
    if not data.get("asks"):
        return "No asks recorded yet."
    reported = data.get("reported_prompt_tokens") or data.get("reported_completion_tokens")
    source = "as reported by the model" if reported else "estimated"
    return "\n".join(
        [
            f"- **{data['asks']:,} ask{'' if data['asks'] == 1 else 's'}**: "
            f"{data.get('ok', 0):,} answered, "
            f"{data.get('cancelled', 0):,} cancelled, {data.get('errors', 0):,} failed",
            f"- tokens: {_figure(data.get('prompt_tokens'))} in, "
            f"{_figure(data.get('completion_tokens'))} out ({source})",
            f"- latency p50 {_figure(data.get('latency_p50_ms'), ' ms')}, "
            f"p95 {_figure(data.get('latency_p95_ms'), ' ms')}; first token p50 "
            f"{_figure(data.get('first_token_p50_ms'), ' ms')}; "
            f"{_figure(data.get('tokens_per_second'))} tokens/s",
        ]
    )


_MODEL_COLUMNS = (
    ("asks", "asks", ""),
    ("errors", "failed", ""),
    ("latency_p50_ms", "p50", " ms"),
    ("latency_p95_ms", "p95", " ms"),
    ("first_token_p50_ms", "first token", " ms"),
    ("tokens_per_second", "tokens/s", ""),
    ("prompt_tokens", "tokens in", ""),
    ("completion_tokens", "tokens out", ""),
)


def cmd_tokens(ctx: CommandContext, args: str) -> CommandResult:
    data = ctx.session.metrics.summary(last=None).to_dict()
    pack = ctx.session.preview("")
    next_ask = (
        f"- next ask: {pack.total_tokens:,} of {pack.budget:,} tokens already taken by "
        "instructions, memory and recent turns"
    )
    return CommandResult(markdown=_cost_markdown(data) + "\n" + next_ask, data=data)


def cmd_metrics(ctx: CommandContext, args: str) -> CommandResult:
    last = _positive_int(args, "the number of asks") if args else None
    data = ctx.session.metrics.summary(last=last).to_dict()
    by_model = data.get("by_model") or {}
    rows = [
        [model] + [_figure(figures.get(key), unit) for key, _, unit in _MODEL_COLUMNS]
        for model, figures in by_model.items()
    ]
    table = TableData(
        ["model", *(label for _, label, _ in _MODEL_COLUMNS)],
        rows,
        f"last {last} asks by model" if last else "all asks by model",
    )
    return CommandResult(
        markdown=_cost_markdown(data),
        table=table if rows else None,
        data=data,
        action=ShowPane("metrics"),
    )


_DROPPED_SHOWN = 10


def context_markdown(pack: Any) -> str:
    """A readable account of a pack: sections against caps, items, and what was dropped."""
    lines = [f"**Next prompt: {pack.total_tokens} of {pack.budget} tokens**"]
    if pack.followup:
        lines.append(f"\nResolved as: _{pack.resolved_question}_")
    lines.append("")
    for section in pack.sections:
        cap = f" / {section.cap}" if section.cap is not None else ""
        lines.append(f"- **{section.name.replace('_', ' ')}**: {section.tokens}{cap} tokens")
        for item in section.items:
            if item.kind in ("instructions", "question"):
                continue
            number = f"[{item.number}] " if item.number is not None else ""
            notes = []
            if item.trimmed:
                notes.append("trimmed")
            if item.trust == "untrusted":
                notes.append("untrusted")
            suffix = f" ({', '.join(notes)})" if notes else ""
            why = f" — {item.why}" if item.why else ""
            lines.append(f"  - {number}{item.label}: {item.tokens} tokens{suffix}{why}")
    if pack.dropped:
        lines.append("\n**Dropped to fit** (lowest value first):")
        for dropped in pack.dropped[:_DROPPED_SHOWN]:
            lines.append(
                f"- {dropped.kind} {dropped.label}: {dropped.tokens} tokens, {dropped.reason}"
            )
        if len(pack.dropped) > _DROPPED_SHOWN:
            lines.append(
                f"- … and {len(pack.dropped) - _DROPPED_SHOWN} more (lore context lists all)"
            )
    return "\n".join(lines)


def cmd_context(ctx: CommandContext, args: str) -> CommandResult:
    pack = ctx.session.preview(args)
    return CommandResult(markdown=context_markdown(pack), data=pack.to_dict())


def cmd_compact(ctx: CommandContext, args: str) -> CommandResult:
    words = _split(args, "/compact [--dry-run]")
    if any(word not in ("--dry-run", "-n") for word in words):
        raise UsageError("usage: /compact [--dry-run]")
    dry_run = bool(words)
    report = ctx.session.compact(dry_run=dry_run)
    data = report.to_dict()
    verb = "would compact" if dry_run else "compacted"
    if report.compacted or (dry_run and report.turns_covered):
        text = (
            f"{verb} {report.turns_covered} turns: live history {report.live_tokens_before} → "
            f"{report.live_tokens_after} tokens; memory {report.memory_tokens_before} → "
            f"{report.memory_tokens_after} tokens."
        )
    else:
        text = f"Nothing to compact: {report.reason}."
    return CommandResult(markdown=text, data=data)


def cmd_ingest(ctx: CommandContext, args: str) -> CommandResult:
    targets = _split(args, "/ingest PATH|URL ...")
    if not targets:
        raise UsageError("usage: /ingest PATH|URL ...")
    data = ctx.session.ingest(targets).to_dict()
    return CommandResult(markdown=ingest_summary(data), data=data, action=Refresh())


def ingest_summary(data: dict[str, Any]) -> str:
    """One line per figure the user cares about: what happened to sources and to claims."""

    def figures(counts: Any) -> str:
        if not isinstance(counts, dict):
            return ""
        return ", ".join(f"{count} {kind}" for kind, count in counts.items() if count) or "none"

    lines = []
    if "counts" in data:
        lines.append(f"Sources: {figures(data['counts'])}")
    if "claims" in data:
        lines.append(f"Claims: {figures(data['claims'])}")
    for source in data.get("sources", []):
        reasons = "; ".join(source.get("reasons", [])[:2])
        if source.get("outcome") in ("held", "failed") and reasons:
            lines.append(f"- {source.get('target')}: {source.get('outcome')} ({reasons})")
    if data.get("dry_run"):
        lines.append("Dry run: nothing was written.")
    return "\n".join(lines) or "Ingest finished."


def cmd_quarantine(ctx: CommandContext, args: str) -> CommandResult:
    held = ctx.session.quarantine.list()
    if not held:
        return CommandResult(
            markdown="The quarantine is empty.", data=[], action=ShowPane("quarantine")
        )
    rows = [
        [claim.id, claim.trust, claim.gate, _cell(claim.text, 60), _cell("; ".join(claim.reasons))]
        for claim in held
    ]
    return CommandResult(
        table=TableData(["id", "trust", "gate", "claim", "reasons"], rows, f"{len(held)} held"),
        data=[claim.id for claim in held],
        action=ShowPane("quarantine"),
    )


def cmd_promote(ctx: CommandContext, args: str) -> CommandResult:
    words = _split(args, "/promote ID [--trust LEVEL]")
    trust = None
    if "--trust" in words:
        position = words.index("--trust")
        if position + 1 >= len(words):
            raise UsageError("usage: /promote ID [--trust trusted|semi-trusted|untrusted]")
        trust = words[position + 1]
        del words[position : position + 2]
        if trust not in ("trusted", "semi-trusted", "untrusted"):
            raise UsageError(f"--trust must be trusted, semi-trusted or untrusted, got {trust!r}")
    if len(words) != 1:
        raise UsageError("usage: /promote ID [--trust LEVEL]")
    promotion = ctx.session.promote(words[0], trust=trust)  # type: ignore[arg-type]
    written = ", ".join(promotion.notes)
    where = f" into {written}" if written else ""
    removed = f" ({promotion.hidden_note()})" if promotion.hidden_removed else ""
    return CommandResult(
        markdown=f"Promoted {words[0]}{where}{removed}.",
        data=_plain(promotion.notes),
        action=Refresh(),
    )


def cmd_reject(ctx: CommandContext, args: str) -> CommandResult:
    claim, _, reason = args.partition(" ")
    if not claim:
        raise UsageError("usage: /reject ID [REASON]")
    result = ctx.session.reject(claim, reason=reason.strip())
    return CommandResult(markdown=f"Rejected {claim}.", data=_plain(result), action=Refresh())


def _plain(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value if isinstance(value, str | int | float | bool | dict | list) else None


def cmd_note(ctx: CommandContext, args: str) -> CommandResult:
    if not args:
        raise UsageError("usage: /note TITLE|ID|PATH")
    note = ctx.session.find_note(args)
    header = f"# {note.title}\n\n_{note.path} · trust: {note.trust} · id: {note.id}_\n\n"
    return CommandResult(
        markdown=header + note.body,
        data={"id": note.id, "title": note.title, "path": note.path, "trust": note.trust},
        action=ShowNote(note.path),
    )


def cmd_model(ctx: CommandContext, args: str) -> CommandResult:
    settings = ctx.session.config.provider
    if args:
        provider, _, model = args.partition(":")
        if provider in ("offline", "ollama", "openai"):
            ctx.session.use_model(
                provider, model or ("" if provider == "offline" else settings.model)
            )
        elif ":" in args and provider:
            raise UsageError(f"unknown provider {provider!r}: use offline, ollama or openai")
        else:
            ctx.session.use_model(model=args)
    shown = f"{settings.name}" + (f" · {settings.model}" if settings.model else "")
    prefix = "Now answering with" if args else "Answering with"
    note = " (for this session; set provider: in lore.yaml to keep it)" if args else ""
    return CommandResult(
        markdown=f"{prefix} {shown}{note}.",
        data={"provider": settings.name, "model": settings.model},
        action=ModelSwitched(settings.name, settings.model) if args else None,
    )


def cmd_export(ctx: CommandContext, args: str) -> CommandResult:
    words = _split(args, "/export md|jsonl [FILE]")
    if not words or words[0] not in ("md", "markdown", "jsonl") or len(words) > 2:
        raise UsageError("usage: /export md|jsonl [FILE]")
    fmt: Literal["markdown", "jsonl"] = "jsonl" if words[0] == "jsonl" else "markdown"
    suffix = "jsonl" if fmt == "jsonl" else "md"
    target = Path(words[1]).expanduser() if len(words) == 2 else Path(f"lore-history.{suffix}")
    count = ctx.session.export_history(target, fmt)
    return CommandResult(markdown=f"Exported {count} turns to {target}.", data=str(target))


def cmd_save(ctx: CommandContext, args: str) -> CommandResult:
    turn = ctx.session.last_completed_turn()
    if turn is None:
        raise UsageError("there is no answer to save yet: ask something first")
    data = ctx.session.save_answer(turn, title=args or None)
    return CommandResult(markdown=ingest_summary(data), data=data, action=Refresh())


def cmd_quit(ctx: CommandContext, args: str) -> CommandResult:
    return CommandResult(action=Quit())


def cmd_clear(ctx: CommandContext, args: str) -> CommandResult:
    return CommandResult(action=ClearTranscript())


def cmd_theme(ctx: CommandContext, args: str) -> CommandResult:
    from lore.core.themes import load_themes

    catalogue = load_themes()
    names = sorted(catalogue.themes)
    if not args:
        return CommandResult(
            markdown="Themes: " + (", ".join(names) or "none found") + " (use /theme NAME)",
            data=names,
        )
    if names and args not in catalogue.themes:
        raise UsageError(f"no theme named {args!r}; choose one of {', '.join(names)}")
    return CommandResult(markdown=f"Theme: {args}", action=ApplyTheme(args), data=args)


def cmd_ask(ctx: CommandContext, args: str) -> CommandResult:
    if not args:
        raise UsageError("usage: /ask QUESTION")
    ctx.session.check_question(args)
    return CommandResult(action=AskAgain(args))


def build_registry() -> CommandRegistry:
    registry = CommandRegistry()
    for command in (
        SlashCommand("help", "list the commands, or explain one", "[COMMAND]", cmd_help, ("?",)),
        SlashCommand("ask", "ask a question (the same as typing it)", "QUESTION", cmd_ask),
        SlashCommand("search", "full-text search of the notes", "WORDS", cmd_search),
        SlashCommand("history", "recent turns, or turns matching words", "[N|WORDS]", cmd_history),
        SlashCommand("tokens", "what asks cost, and the next prompt's size", "", cmd_tokens),
        SlashCommand("metrics", "latency, time to first token, tokens/s by model", "[N]", cmd_metrics),
        SlashCommand("context", "preview exactly what the next ask would send", "[QUESTION]", cmd_context),
        SlashCommand("compact", "compress older turns into memory (never deletes)", "[--dry-run]", cmd_compact),
        SlashCommand("ingest", "read files, folders or URLs through the admission gates", "PATH|URL …", cmd_ingest),
        SlashCommand("quarantine", "list the claims held for review", "", cmd_quarantine),
        SlashCommand("promote", "admit a held claim into the notes", "ID [--trust LEVEL]", cmd_promote),
        SlashCommand("reject", "reject a held claim (a tombstone is kept)", "ID [REASON]", cmd_reject),
        SlashCommand("note", "show a note", "TITLE|ID", cmd_note),
        SlashCommand("model", "show or switch the provider and model", "[PROVIDER:MODEL|MODEL]", cmd_model),
        SlashCommand("export", "export the history as Markdown or JSONL", "md|jsonl [FILE]", cmd_export),
        SlashCommand("save", "file the last answer as a note, through the gates", "[TITLE]", cmd_save),
        SlashCommand("theme", "list themes or switch to one", "[NAME]", cmd_theme),
        SlashCommand("clear", "clear the screen (history is kept)", "", cmd_clear),
        SlashCommand("quit", "leave Lore", "", cmd_quit, ("exit", "q")),
    ):  # fmt: skip
        registry.register(command)
    return registry
