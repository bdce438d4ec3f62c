"""`lore chat`: the line REPL. Questions stream their answers; `/commands` run from the registry.

The REPL is a thin face over a `LoreSession`: asking goes through `LoreSession.ask` (the same
events the full-screen app consumes) and every slash command comes from the session's
registry, so completion, help and behaviour match the app. Each ask runs in its own event loop, which makes
Ctrl-C simple: `asyncio.run` turns it into a cancellation of the ask, the engine records the
turn as `cancelled`, and the session goes on. Nothing a user types ends the session except
`/quit` or Ctrl-D.

When standard input is not a terminal, lines are read plainly, so `lore chat < questions.txt`
works in scripts.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion, ThreadedCompleter
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, History, InMemoryHistory, ThreadedHistory
from prompt_toolkit.input import Input
from prompt_toolkit.output import Output
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lore.core.public import (
    ApplyTheme,
    AskAgain,
    AskEvent,
    AskFinished,
    AskListener,
    AskNotice,
    AskStarted,
    ClearTranscript,
    CommandAction,
    CommandRegistry,
    CommandResult,
    Quit,
    Refresh,
    TableData,
    relay_ask,
    remember_theme,
    turn_summary,
    visible,
)
from lore.errors import LoreError
from lore.paths import user_dirs
from lore.rich_display import SafeMarkdown, plain

if TYPE_CHECKING:
    from lore.core.public import ContextPack, Turn
    from lore.core.session import LoreSession

HISTORY_FILE_NAME = "chat_history"
# Typed alone, these leave as /quit does: nobody means them as a question to the wiki.
QUIT_WORDS = frozenset({"exit", "quit", ":q"})
MAX_TITLE_COMPLETIONS = 50
# After this long without a first token, the REPL says what it is waiting for.
WAITING_NOTICE_S = 1.0


def input_history_path() -> Path:
    """Typed lines are kept per user, outside any vault, like a shell's history."""
    return user_dirs().data / HISTORY_FILE_NAME


# A line longer than this (a pasted document) is not worth keeping for Up-arrow recall, and
# would make every later session slower to start.
MAX_REMEMBERED_LINE_CHARS = 4000


class BoundedFileHistory(FileHistory):
    """Typed lines in a file, leaving out pastes too long to be worth recalling."""

    def store_string(self, string: str) -> None:
        if len(string) <= MAX_REMEMBERED_LINE_CHARS:
            super().store_string(string)


def open_input_history(path: Path) -> History:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    except OSError:
        return InMemoryHistory()  # A read-only home still gets a working session.
    # Loaded in a thread, so the prompt is ready before a long history is read.
    return ThreadedHistory(BoundedFileHistory(str(path)))


class SlashCompleter(Completer):
    """Completes `/commands` from the registry, best match first, each with its help; then
    the argument of `/help` (a command) and `/note` (a note title)."""

    def __init__(
        self, registry: CommandRegistry, note_titles: Callable[[], list[str]] | None = None
    ) -> None:
        self.registry = registry
        self._note_titles = note_titles
        self._titles: list[str] | None = None

    def forget_titles(self) -> None:
        """Notes were added or changed: read the titles again on the next completion."""
        self._titles = None

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/"):
            return
        name, separator, argument = text[1:].partition(" ")
        if not separator:
            for command in self.registry.complete(name):
                yield Completion(
                    f"/{command.name}",
                    start_position=-len(text),
                    display=command.usage,
                    display_meta=command.help,
                )
            return
        chosen = self.registry.get(name)
        if chosen is None:
            return
        if chosen.name == "help" and " " not in argument:
            for match in self.registry.complete(argument):
                yield Completion(match.name, -len(argument), display_meta=match.help)
        elif chosen.name == "note":
            for title in self._matching_titles(argument):
                yield Completion(title, -len(argument), display=visible(title, multiline=False))

    def _matching_titles(self, typed: str) -> list[str]:
        if self._note_titles is None:
            return []
        if self._titles is None:
            self._titles = sorted(set(self._note_titles()), key=str.lower)
        wanted = typed.strip().lower()
        starts = [t for t in self._titles if t.lower().startswith(wanted)]
        inside = [t for t in self._titles if wanted in t.lower() and t not in starts]
        return (starts + inside)[:MAX_TITLE_COMPLETIONS]


class ChatSession:
    """One conversation: a line in, an answer or a command's output out."""

    def __init__(self, session: LoreSession, console: Console) -> None:
        self.session = session
        self.console = console
        self.registry: CommandRegistry = session.commands
        self.completer = SlashCompleter(self.registry, self.note_titles)
        self._mid_line = False

    def note_titles(self) -> list[str]:
        return [str(doc["title"]) for doc in self.session.note_documents() if doc.get("title")]

    # -- one line ----------------------------------------------------------------------------

    def handle(self, line: str) -> bool:
        """Act on one line; False when the session should end."""
        text = line.strip()
        if not text:
            return True
        if text.lower() in QUIT_WORDS:
            return False
        if not text.startswith("/"):
            self.ask(text)
            return True
        try:
            return self.show(self.session.run_command(text))
        except LoreError as exc:
            self.error(exc.message)
        except KeyboardInterrupt:
            self.note("interrupted")
        except Exception as exc:
            self.internal_error(exc)
        return True

    def show(self, result: CommandResult) -> bool:
        if not result.ok:
            self.error(result.markdown or "that command failed")
            return True
        if result.markdown:
            self.console.print(SafeMarkdown(result.markdown))
        if result.table is not None and not table_shown_in(result.table, result.markdown):
            self.console.print(render_table(result.table))
        return self.perform(result.action)

    def perform(self, action: CommandAction | None) -> bool:
        """Carry out what a command asked of the face; False when the session should end.

        Panes and notes have no place in a line REPL: those actions are left out."""
        match action:
            case Quit():
                return False
            case Refresh():
                self.completer.forget_titles()
            case AskAgain(question=question) if question.strip():
                self.ask(question)
            case ClearTranscript():
                self.console.clear()
            case ApplyTheme(name=name) if name:
                remember_theme(name)
                self.note(f"the app will open with the theme {name}")
        return True

    # -- asking ------------------------------------------------------------------------------

    def ask(self, question: str) -> None:
        """Stream the answer to `question`; Ctrl-C cancels it and keeps the session."""
        try:
            asyncio.run(self._ask(question))
        except KeyboardInterrupt:
            self.note("cancelled: the turn is kept in the history as cancelled")
        except LoreError as exc:
            self.error(exc.message)
        except Exception as exc:
            self.internal_error(exc)

    async def _ask(self, question: str) -> None:
        listener = _ReplListener(self)
        try:
            await relay_ask(self.session.ask(question), listener)
        finally:
            listener.stop_waiting()
            # This loop ends with the ask; the provider's connections must not outlive it.
            await self.session.aclose()

    def _waiting_notice(self) -> None:
        provider = self.session.provider
        self.note(f"(waiting for {provider.name} {provider.model}… Ctrl-C cancels)")

    def _started(self, pack: ContextPack) -> None:
        if pack.followup and pack.resolved_question != pack.question:
            self.note(f"(read as: {pack.resolved_question})")

    def _notice(self, notice: AskNotice) -> None:
        if notice.level == "info":
            self.note(f"({notice.text})")
        else:
            self.error(notice.text)

    def _finished(self, event: AskFinished) -> None:
        turn, pack = event.turn, event.pack
        self._end_answer_line()
        sources = cited_sources(turn, pack)
        if sources:
            self.console.print(Text.assemble(("sources: ", "bold"), plain(sources)), soft_wrap=True)
        self.note(turn_summary(turn))

    # -- output ------------------------------------------------------------------------------

    def _write_answer(self, text: str) -> None:
        # Plain text as it arrives: Markdown cannot be laid out until the answer is whole.
        self.console.file.write(visible(text, multiline=True))
        self.console.file.flush()
        self._mid_line = not text.endswith("\n")

    def _end_answer_line(self) -> None:
        if self._mid_line:
            self.console.file.write("\n")
            self._mid_line = False

    def note(self, message: str) -> None:
        self._end_answer_line()
        self.console.print(plain(message, "dim", multiline=True), soft_wrap=True)

    def error(self, message: str) -> None:
        self._end_answer_line()
        # Never wrapped, so a script reading the output sees the error as one line.
        error = Text.assemble(("error: ", "bold red"), plain(message, multiline=True))
        self.console.print(error, soft_wrap=True)

    def internal_error(self, exc: Exception) -> None:
        """A bug, not a user's mistake: one line, and the session goes on."""
        if os.environ.get("LORE_DEBUG"):
            raise exc
        self.error(
            f"internal error: {type(exc).__name__}: {exc} (set LORE_DEBUG=1 for the traceback)"
        )

    def banner(self) -> str:
        provider = self.session.provider
        model = f" {provider.model}" if provider.model else ""
        return (
            f"Lore chat · vault {self.session.name} · {provider.name}{model} · "
            "/help lists commands · Ctrl-C cancels an answer · Ctrl-D quits"
        )


class _ReplListener(AskListener):
    """An ask as lines: the answer streams, then its sources and one line of figures."""

    def __init__(self, chat: ChatSession) -> None:
        self.chat = chat
        self.waiting: asyncio.TimerHandle | None = None

    def stop_waiting(self) -> None:
        if self.waiting is not None:
            self.waiting.cancel()
            self.waiting = None

    async def started(self, event: AskStarted) -> None:
        self.chat._started(event.pack)
        # A model loading can take a while: say what is being waited for.
        self.waiting = asyncio.get_running_loop().call_later(
            WAITING_NOTICE_S, self.chat._waiting_notice
        )

    async def delta(self, text: str) -> None:
        self.stop_waiting()
        self.chat._write_answer(text)

    async def finished(self, event: AskFinished) -> None:
        self.chat._finished(event)

    async def notice(self, notice: AskNotice, event: AskEvent) -> None:
        self.chat._notice(notice)


def cited_sources(turn: Turn, pack: ContextPack) -> str:
    """`[1] Title, [3] Title (untrusted)` for the delivered notes the answer cites."""
    cited = set(turn.cited)
    parts = []
    for item in pack.notes():
        if item.ref in cited and item.number is not None:
            flag = " (untrusted)" if item.trust == "untrusted" else ""
            parts.append(f"[{item.number}] {item.label}{flag}")
    return ", ".join(parts)


def table_shown_in(table: TableData, markdown: str | None) -> bool:
    """Whether the Markdown already lists every row, so the table would say it twice."""
    if not markdown or not table.rows:
        return False
    return all(row and str(row[0]) in markdown for row in table.rows)


def render_table(table: TableData) -> Table:
    rendered = Table(title=plain(table.title) if table.title else None, title_justify="left")
    for column in table.columns:
        rendered.add_column(plain(str(column)))
    for row in table.rows:
        rendered.add_row(*(plain("" if cell is None else str(cell)) for cell in row))
    return rendered


# -- the two ways of reading lines --------------------------------------------------------------


def run_interactive(
    session: ChatSession,
    *,
    input: Input | None = None,
    output: Output | None = None,
    history: History | None = None,
) -> int:
    """The prompt-toolkit loop: completion, persistent input history, a status line."""

    def status_line() -> str:
        provider = session.session.provider  # /model may switch it mid-session.
        return f" {provider.name} {provider.model} · vault {session.session.name}"

    prompt: PromptSession[str] = PromptSession(
        history=history if history is not None else open_input_history(input_history_path()),
        # In a thread, so reading note titles for the first time never holds up typing.
        completer=ThreadedCompleter(session.completer),
        complete_while_typing=True,
        bottom_toolbar=status_line,
        input=input,
        output=output,
    )
    session.note(session.banner())
    while True:
        try:
            line = prompt.prompt(f"{session.session.name}> ")
        except KeyboardInterrupt:
            # Ctrl-C at the prompt clears the line, as in a shell, and says how to leave.
            session.note("(Ctrl-D or /quit leaves)")
            continue
        except EOFError:
            return 0
        if not session.handle(line):
            return 0


def run_plain(session: ChatSession, lines: Iterable[str]) -> int:
    """Lines from a pipe or a file, one ask or command each."""
    try:
        for line in lines:
            if not session.handle(line):
                break
    except KeyboardInterrupt:
        return 130
    return 0


def run_chat(lore: LoreSession, console: Console, *, stdin: TextIO | None = None) -> int:
    session = ChatSession(lore, console)
    source = stdin or sys.stdin
    if not source.isatty():
        return run_plain(session, source)
    return run_interactive(session)
