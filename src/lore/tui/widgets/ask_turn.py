"""One question and its answer in the Ask transcript, with the figures of what it cost."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from lore.core.public import visible
from lore.rich_display import plain

if TYPE_CHECKING:
    from textual.widgets import Markdown

    from lore.core.public import ContextPack, Turn

NOTE_LINK = "note:"
_CODE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|`[^`\n]*`", re.DOTALL)
_SINGLE_CITATION = re.compile(r"(?<![\w\[\\])\[(\d{1,4})\](?![\(\[])")


def link_citations(answer: str, delivered: dict[int, str]) -> str:
    """`[n]` markers become links to the note delivered as number n; code is left alone."""

    def link(match: re.Match[str]) -> str:
        number = int(match.group(1))
        note_id = delivered.get(number)
        if note_id is None:
            return match.group(0)
        return f"[\\[{number}\\]]({NOTE_LINK}{note_id})"

    pieces: list[str] = []
    position = 0
    for code in _CODE.finditer(answer):
        pieces.append(_SINGLE_CITATION.sub(link, answer[position : code.start()]))
        pieces.append(code.group(0))
        position = code.end()
    pieces.append(_SINGLE_CITATION.sub(link, answer[position:]))
    return "".join(pieces)


def sources_markdown(turn: Turn, pack: ContextPack) -> str:
    """The notes the answer cited, each a link that opens it in the Notes pane."""
    cited = set(turn.cited)
    lines = []
    for item in pack.notes():
        if item.number is None or pack.delivered.get(item.number) not in cited:
            continue
        label = visible(item.label, multiline=False).replace("[", "\\[").replace("]", "\\]")
        trust = "" if item.trust in (None, "trusted") else f" *({item.trust})*"
        lines.append(f"[\\[{item.number}\\] {label}]({NOTE_LINK}{item.ref}){trust}")
    return ("**Sources:** " + " · ".join(lines)) if lines else ""


def turn_figures(turn: Turn) -> str:
    timings, usage = turn.timings, turn.usage
    sent = usage.prompt_tokens or usage.estimated_prompt_tokens
    received = usage.completion_tokens or usage.estimated_completion_tokens
    parts = [f"{sent:,} → {received:,} tokens"]
    if timings.first_token_ms is not None:
        parts.append(f"first token {timings.first_token_ms / 1000:.2f} s")
    parts.append(f"total {timings.total_ms / 1000:.2f} s")
    streaming_ms = timings.total_ms - (timings.first_token_ms or 0.0)
    if received and streaming_ms > 0:
        parts.append(f"{received / (streaming_ms / 1000):,.1f} tok/s")
    parts.append(f"{turn.provider}{' · ' + turn.model if turn.model else ''}")
    return " · ".join(parts)


class AskTurn(Vertical):
    DEFAULT_CSS = """
    AskTurn {
        height: auto;
        margin: 0 0 1 0;
    }
    AskTurn > .ask-question {
        color: $primary;
        text-style: bold;
        padding: 0 1;
    }
    AskTurn > Markdown {
        margin: 0;
        padding: 0 1;
        background: transparent;
    }
    AskTurn > .ask-figures {
        color: $text-muted;
        padding: 0 1;
    }
    AskTurn.-cancelled > .ask-figures {
        color: $warning;
    }
    AskTurn.-failed > .ask-figures {
        color: $error;
    }
    AskTurn.-command > .ask-question {
        color: $accent;
    }
    """

    def __init__(self, question: str, *, command: bool = False) -> None:
        super().__init__(classes="-command" if command else "")
        self.question = question
        self.answer_text = ""

    def compose(self) -> ComposeResult:
        yield Static(plain("› " + self.question, multiline=True), classes="ask-question")
        # Imported with the first turn: Markdown brings markdown-it, which the first screen
        # of the app has no use for.
        from textual.widgets import Markdown

        yield Markdown("", open_links=False, classes="ask-answer")
        yield Static("", classes="ask-figures")

    @property
    def answer(self) -> Markdown:
        from textual.widgets import Markdown

        return self.query_one(Markdown)

    def figures(self, text: str) -> None:
        self.query_one(".ask-figures", Static).update(plain(text, multiline=True))

    async def show_markdown(self, markdown: str) -> None:
        self.answer_text = markdown
        await self.answer.update(visible(markdown, multiline=True))

    async def finish(self, turn: Turn, pack: ContextPack) -> None:
        """Replace the streamed text with the checked answer, its citations as links."""
        text = link_citations(turn.answer, pack.delivered)
        sources = sources_markdown(turn, pack)
        await self.show_markdown(text + ("\n\n" + sources if sources else ""))
        self.figures(turn_figures(turn))

    def cancelled(self, partial: str) -> None:
        self.add_class("-cancelled")
        self.answer_text = partial
        self.figures("cancelled: the partial answer is kept in history, marked cancelled")

    def failed(self, message: str) -> None:
        self.add_class("-failed")
        self.figures(f"failed: {message}")
