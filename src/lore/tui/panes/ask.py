"""The Ask pane: the session's transcript, the prompt, and what the next question would send.

Answers stream from `LoreSession.ask` in an async worker; the transcript follows the bottom
unless the user scrolls up. Slash commands go through the core registry in a thread worker.
The context preview (and the header's meter) is recomputed in a thread a moment after typing
stops. Only the newest turns stay mounted, so a long session stays light.
"""

from __future__ import annotations

import asyncio
import time
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.command import SimpleCommand
from textual.containers import VerticalScroll
from textual.markup import escape
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Static
from textual.worker import Worker, WorkerState, get_current_worker

from lore.core.public import (
    ApplyTheme,
    AskAgain,
    ClearTranscript,
    CommandAction,
    CommandResult,
    ModelSwitched,
    Quit,
    Refresh,
    ShowNote,
    TableData,
    linkable_uri,
    visible,
)
from lore.core.public import ShowPane as ShowPaneAction
from lore.core.session import LoreSession
from lore.errors import LoreError
from lore.tui.held_text import notify_plain
from lore.tui.messages import (
    ContextUsage,
    ModelChanged,
    OpenNote,
    ShowPane,
    ThemeChosen,
    VaultWritten,
)
from lore.tui.palette import PaletteCommand
from lore.tui.panes.base import LorePane
from lore.tui.panes.pane_support import report_worker_failure
from lore.tui.widgets.ask_turn import NOTE_LINK, AskTurn
from lore.tui.widgets.completion import SlashCompletions
from lore.tui.widgets.preview import ContextPreview
from lore.tui.widgets.prompt import PromptArea

if TYPE_CHECKING:
    from textual.widgets import Markdown

    from lore.core.public import ContextPack

PREVIEW_DELAY_S = 0.4
MAX_MOUNTED_TURNS = 40
RECALL_TURNS = 200
ALL_KINDS = frozenset({"notes", "history", "metrics", "quarantine", "memory", "audit"})

WELCOME = (
    "Ask a question about the notes in this vault. Enter sends, Ctrl+J adds a line, "
    "Up/Down recall earlier questions, / lists commands, {preview} shows what the next "
    "question would send, {sources} opens a note the last answer cited, {cancel} stops an answer."
)


def key_label(keys: str) -> str:
    """How a binding's first key is written for people: "f2,ctrl+o" is "F2"."""
    first = keys.split(",")[0].strip()
    names = {"escape": "Esc", "enter": "Enter", "space": "Space", "tab": "Tab"}
    return "+".join(
        names.get(part, part.upper() if len(part) == 1 else part.capitalize())
        for part in first.split("+")
    )


def table_markdown(table: TableData) -> str:
    def cell(value: str) -> str:
        return " ".join(str(value).split()).replace("|", "\\|")

    lines = []
    if table.title:
        lines.append(f"**{table.title}**\n")
    lines.append("| " + " | ".join(cell(column) for column in table.columns) + " |")
    lines.append("|" + "---|" * len(table.columns))
    lines.extend("| " + " | ".join(cell(value) for value in row) + " |" for row in table.rows)
    return "\n".join(lines)


class AskPane(LorePane):
    HELP: ClassVar[str] = """\
Ask questions; answers come from the notes and cite them as **[n]** links. Click a citation,
or press **F3** and pick one of the notes the last answer cited, to read it in the Notes pane.

- **Enter** sends; **Ctrl+J** (or Shift/Alt+Enter where the terminal passes it) adds a line.
- **Up / Down** on the first / last line recall earlier questions.
- **/** opens the slash commands: Up/Down choose, Tab or Enter completes, Esc closes.
  `/help` lists them all; they are the same as in `lore chat`.
- **Esc** stops an answer: the partial text stays, marked cancelled, and the question returns
  to the prompt.
- **F2** shows the context preview: the sections the next question would send, their token
  counts against the budget, and what was dropped to fit. The header's meter shows the total.

While an answer streams the status line shows the elapsed time, the time to the first token
and tokens per second. The transcript follows new text unless you scroll up.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape", "cancel", "Stop", id="ask.cancel", tooltip="Stop the answer being written"
        ),
        Binding(
            "f2,ctrl+o",
            "toggle_preview",
            "Context",
            id="ask.preview",
            tooltip="Show or hide what the next question would send",
        ),
        Binding(
            "f3",
            "open_source",
            "Sources",
            id="ask.sources",
            tooltip="Open a note the last answer cited",
        ),
        Binding(
            "ctrl+l",
            "clear",
            "Clear",
            id="ask.clear",
            tooltip="Clear the transcript (history is kept)",
        ),
    ]

    DEFAULT_CSS = """
    AskPane { height: 1fr; }
    AskPane #ask-transcript { height: 1fr; padding: 0 1; }
    AskPane #ask-welcome { color: $text-muted; padding: 1 1; }
    AskPane #ask-status { height: 1; padding: 0 1; color: $text-muted; }
    AskPane #ask-status.-busy { color: $accent; }
    AskPane ContextPreview { dock: right; height: 1fr; display: none; }
    AskPane.-preview ContextPreview { display: block; }
    """

    # What the next question would send depends on these.
    WATCHES: ClassVar[frozenset[str]] = frozenset({"notes", "memory", "history"})

    class RecallLoaded(Message):
        """Earlier questions, oldest first, for Up/Down in the prompt."""

        def __init__(self, questions: list[str]) -> None:
            super().__init__()
            self.questions = questions

    class CommandDone(Message):
        def __init__(self, line: str, result: CommandResult) -> None:
            super().__init__()
            self.line = line
            self.result = result

    class PreviewReady(Message):
        """What `text` would send, or why it cannot be worked out."""

        def __init__(self, text: str, pack: ContextPack | str) -> None:
            super().__init__()
            self.text = text
            self.pack = pack

    def __init__(self, session: LoreSession, **kwargs: Any) -> None:
        super().__init__(session, **kwargs)
        self.registry = session.commands
        self.asking: Worker[None] | None = None
        # (number, title, note id) of the notes the last answer cited.
        self.last_sources: list[tuple[int, str, str]] = []
        self._preview_timer: Timer | None = None
        self._status_timer: Timer | None = None
        self._previewed: str | None = None
        self._live: dict[str, float | int | None] = {}

    def compose(self) -> ComposeResult:
        # No wrapper containers: every full-height one is drawn on the first frame. The
        # preview panel docks to the right when first shown.
        with VerticalScroll(id="ask-transcript"):
            yield Static(Text(self._welcome()), id="ask-welcome")
        yield Static("", id="ask-status")
        # The completion list and the preview panel are mounted when first needed:
        # neither is on the first screen.
        yield PromptArea(id="ask-prompt")

    def refresh_data(self) -> None:
        self._load_recall()
        self._refresh_preview(self.prompt.text)

    # -- parts -------------------------------------------------------------------------------

    @property
    def prompt(self) -> PromptArea:
        return self.query_one(PromptArea)

    @property
    def transcript(self) -> VerticalScroll:
        return self.query_one("#ask-transcript", VerticalScroll)

    @property
    def completions(self) -> SlashCompletions:
        return self.query_one(SlashCompletions)

    @property
    def preview(self) -> ContextPreview:
        return self.query_one(ContextPreview)

    @property
    def status(self) -> Static:
        return self.query_one("#ask-status", Static)

    def _welcome(self) -> str:
        """The welcome line, naming the keys as `keymap:` in lore.yaml set them."""
        keymap = self.session.config.keymap
        defaults = {
            binding.id: binding.key for binding in self.BINDINGS if isinstance(binding, Binding)
        }

        def key(binding_id: str) -> str:
            return key_label(keymap.get(binding_id) or defaults.get(binding_id) or "")

        return WELCOME.format(
            preview=key("ask.preview"), sources=key("ask.sources"), cancel=key("ask.cancel")
        )

    def focus_default(self) -> None:
        # At once, not deferred like `focus()`, so a pane switch cannot slip in between.
        self.screen.set_focus(self.prompt)

    @property
    def is_asking(self) -> bool:
        return self.asking is not None and self.asking.state in (
            WorkerState.PENDING,
            WorkerState.RUNNING,
        )

    # -- the prompt --------------------------------------------------------------------------

    @on(PromptArea.Changed, "#ask-prompt")
    async def _prompt_changed(self) -> None:
        text = self.prompt.text
        if text.startswith("/") and not self.query(SlashCompletions):
            completions = SlashCompletions(self.registry, id="ask-completions")
            await self.mount(completions, before=self.prompt)
        if self.query(SlashCompletions):
            self.prompt.completing = self.completions.update_for(text)
        if self._preview_timer is not None:
            self._preview_timer.stop()
        if not text.lstrip().startswith("/"):
            self._preview_timer = self.set_timer(
                PREVIEW_DELAY_S, lambda: self._refresh_preview(text)
            )

    @on(PromptArea.CompletionMove)
    def _completion_move(self, event: PromptArea.CompletionMove) -> None:
        self.completions.move(event.step)

    @on(PromptArea.CompletionAccept)
    def _completion_accept(self) -> None:
        command = self.completions.chosen()
        self.completions.close()
        self.prompt.completing = False
        if command is not None:
            self.prompt.set_prompt(f"/{command.name}" + (" " if command.hint else ""))
            if not command.hint:
                self.submit(self.prompt.text)

    @on(PromptArea.CompletionDismiss)
    def _completion_dismiss(self) -> None:
        self.completions.close()
        self.prompt.completing = False

    @on(PromptArea.Submitted)
    def _prompt_submitted(self, event: PromptArea.Submitted) -> None:
        self.submit(event.text)

    def submit(self, text: str) -> None:
        line = text.strip()
        if not line:
            return
        if line.startswith("/"):
            self._run_command(line)
            return
        if self.is_asking:
            self.notify("Lore is still answering; press Esc to stop it first", severity="warning")
            return
        try:
            # Refused here, before a turn is drawn: the text stays in the prompt to shorten.
            self.session.check_question(line)
        except LoreError as exc:
            self.notify(exc.message, severity="error")
            return
        self.prompt.remember(line)
        self.prompt.set_prompt("")
        self.ask(line)

    def put_question(self, question: str, *, submit: bool = False) -> None:
        """Fill the prompt (from History: open in Ask, ask again); `submit` sends it."""
        self.prompt.set_prompt(question)
        self.prompt.focus()
        if submit:
            self.submit(question)

    @work(thread=True, exclusive=True, exit_on_error=False, group="ask-recall")
    def _load_recall(self) -> None:
        questions = [turn.question for turn in self.session.history.tail(RECALL_TURNS)]
        self.post_message(self.RecallLoaded(questions))

    def on_ask_pane_recall_loaded(self, message: RecallLoaded) -> None:
        # Questions asked in this session while history loaded come after the older ones.
        asked_meanwhile = list(self.prompt.recall)
        self.prompt.recall = []
        for question in [*message.questions, *asked_meanwhile]:
            self.prompt.remember(question)

    # -- asking ------------------------------------------------------------------------------

    def ask(self, question: str) -> None:
        self.asking = self._ask(question)

    async def _mount_turn(self, turn: AskTurn) -> None:
        welcome = self.query("#ask-welcome")
        if welcome:
            await welcome.remove()
        await self.transcript.mount(turn)
        turns = list(self.transcript.query(AskTurn))
        if len(turns) > MAX_MOUNTED_TURNS:
            await self.transcript.remove_children(turns[: len(turns) - MAX_MOUNTED_TURNS])
        self.transcript.anchor()

    @work(exclusive=True, exit_on_error=False, group="ask")
    async def _ask(self, question: str) -> None:
        # The ask machinery loads with the first question, not with the first screen.
        from lore.core.public import relay_ask
        from lore.tui.panes.ask_listener import TurnListener

        view = AskTurn(question)
        await self._mount_turn(view)
        listener = TurnListener(self, view)
        self._live = {"started": time.monotonic(), "first": None, "tokens": 0, "sent": None}
        self._start_status()
        try:
            await relay_ask(self.session.ask(question), listener)
        except asyncio.CancelledError:
            view.cancelled(listener.answer)
            if not self.prompt.text.strip():
                self.prompt.set_prompt(question)
            self.notify("Answer stopped; the question is back in the prompt", timeout=3)
            raise
        except LoreError as exc:
            view.failed(exc.message)
            notify_plain(self, exc.message, severity="error")
        finally:
            await listener.stream.stop()
            self._stop_status()
            self._refresh_preview(self.prompt.text, force=True)
            self.post_message(VaultWritten(frozenset({"history", "metrics"})))

    def action_cancel(self) -> None:
        if self.is_asking and self.asking is not None:
            self.asking.cancel()

    def remember_sources(self, pack: ContextPack, cited: list[str]) -> None:
        self.last_sources = [
            (item.number, item.label, item.ref)
            for item in pack.notes()
            if item.number is not None and item.ref in cited
        ]

    # -- live status -------------------------------------------------------------------------

    def _start_status(self) -> None:
        self.status.add_class("-busy")
        self._update_status()
        self._status_timer = self.set_interval(0.1, self._update_status)

    def _stop_status(self) -> None:
        if self._status_timer is not None:
            self._status_timer.stop()
            self._status_timer = None
        self.status.remove_class("-busy")
        self.status.update("")

    def _update_status(self) -> None:
        live = self._live
        started = float(live.get("started") or time.monotonic())
        now = time.monotonic()
        parts = [f"answering · {now - started:.1f} s"]
        first = live.get("first")
        sent = live.get("sent")
        if sent is not None:
            parts.append(f"{int(sent):,} tokens sent")
        if first is None:
            parts.append("waiting for the first token")
        else:
            parts.append(f"first token {float(first) - started:.2f} s")
            streaming = now - float(first)
            tokens = int(live.get("tokens") or 0)
            if streaming > 0.05:
                parts.append(f"{tokens / streaming:,.1f} tok/s")
        parts.append("Esc stops")
        self.status.update(" · ".join(parts))

    # -- slash commands ----------------------------------------------------------------------

    @work(thread=True, exit_on_error=False, group="ask-command")
    def _run_command(self, line: str) -> None:
        self.post_message(self.CommandDone(line, self.session.run_command(line)))

    async def on_ask_pane_command_done(self, message: CommandDone) -> None:
        line, result = message.line, message.result
        if not result.ok:
            # The line stays in the prompt so the user can fix it.
            notify_plain(self, result.markdown or f"{line} failed", severity="error")
            return
        if self.prompt.text.strip() == line:
            self.prompt.set_prompt("")
        self.prompt.remember(line)
        shown = "\n\n".join(
            part
            for part in (result.markdown, table_markdown(result.table) if result.table else None)
            if part
        )
        if shown:
            view = AskTurn(line, command=True)
            await self._mount_turn(view)
            await view.show_markdown(shown)
        await self._carry_out(result.action)

    async def _carry_out(self, action: CommandAction | None) -> None:
        match action:
            case Quit():
                self.app.exit()
            case ClearTranscript():
                await self.transcript.remove_children()
            case ApplyTheme(name=name):
                self.post_message(ThemeChosen(name))
            case AskAgain(question=question):
                self.prompt.set_prompt("")
                self.ask(question)
            case ShowPaneAction(pane=pane):
                self.post_message(ShowPane(pane))
            case ShowNote(ref=ref):
                self.post_message(OpenNote(ref))
            case Refresh():
                self.post_message(VaultWritten(ALL_KINDS))
            case ModelSwitched(provider=provider, model=model):
                self.post_message(ModelChanged(provider, model))

    def action_clear(self) -> None:
        self.transcript.remove_children()

    # -- citations ---------------------------------------------------------------------------

    def on_markdown_link_clicked(self, event: Markdown.LinkClicked) -> None:
        event.stop()
        if event.href.startswith(NOTE_LINK):
            self.post_message(OpenNote(event.href[len(NOTE_LINK) :]))
        elif linkable_uri(event.href):
            self.app.open_url(event.href)
        else:
            notify_plain(self, f"Not a link Lore can open: {event.href}", severity="warning")

    def action_open_source(self) -> None:
        if not self.last_sources:
            self.notify("The last answer cited no notes.", severity="warning")
            return
        self.app.search_commands(
            [
                SimpleCommand(
                    escape(visible(f"[{number}] {title}", multiline=False)),
                    partial(self._open_cited, ref),
                    "Open in the Notes pane",
                )
                for number, title, ref in self.last_sources
            ],
            placeholder="Open a note the last answer cited…",
        )

    def _open_cited(self, ref: str) -> None:
        self.post_message(OpenNote(ref))

    def palette_commands(self) -> list[PaletteCommand]:
        commands: list[PaletteCommand] = []
        if self.is_asking:
            commands.append(
                ("Stop the answer", "Cancel the answer being written", self.action_cancel)
            )
        commands.append(
            (
                "Toggle context preview",
                "What the next question would send",
                self.action_toggle_preview,
            )
        )
        commands.append(("Clear transcript", "History is kept", self.action_clear))
        for number, title, ref in self.last_sources:
            commands.append(
                (
                    f"Open cited note [{number}] {title}",
                    "Cited by the last answer",
                    partial(self._open_cited, ref),
                )
            )
        return commands

    # -- the context preview -----------------------------------------------------------------

    async def action_toggle_preview(self) -> None:
        if not self.query(ContextPreview):
            await self.mount(ContextPreview(id="ask-preview"))
        self.toggle_class("-preview")
        if self.has_class("-preview"):
            self._refresh_preview(self.prompt.text, force=True)

    def _refresh_preview(self, text: str, *, force: bool = False) -> None:
        if text.lstrip().startswith("/"):
            return
        if not force and text == self._previewed:
            return
        self._previewed = text
        self._compute_preview(text)

    @work(thread=True, exclusive=True, exit_on_error=False, group="ask-preview")
    def _compute_preview(self, text: str) -> None:
        try:
            pack: ContextPack | str = self.session.preview(text)
        except LoreError as exc:
            pack = exc.message
        if not get_current_worker().is_cancelled:
            self.post_message(self.PreviewReady(text, pack))

    def on_ask_pane_preview_ready(self, message: PreviewReady) -> None:
        pack = message.pack
        panel = self.preview if self.query(ContextPreview) else None
        if isinstance(pack, str):
            if panel is not None:
                panel.show_message(pack)
            self.post_message(ContextUsage(None))
            return
        if panel is not None:
            panel.show_pack(pack)
        self.post_message(ContextUsage(pack.total_tokens))

    # -- outside changes ---------------------------------------------------------------------

    def vault_changed(self, kinds: frozenset[str]) -> None:
        if not self.is_asking:
            self._refresh_preview(self.prompt.text, force=True)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        event.stop()
        report_worker_failure(self, event.worker, event.state)  # type: ignore[arg-type]
