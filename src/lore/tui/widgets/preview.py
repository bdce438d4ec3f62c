"""The Ask pane's side panel: what the question being typed would send, section by section."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from lore.rich_display import plain

if TYPE_CHECKING:
    from lore.core.public import ContextPack

SECTION_TITLES = {
    "instructions": "Instructions",
    "memory": "Compressed memory",
    "recent_turns": "Recent turns",
    "evidence": "Evidence (notes)",
    "question": "Question",
}
TRUST_STYLES = {"trusted": "", "semi-trusted": "yellow", "untrusted": "red"}


def render_pack(pack: ContextPack) -> RenderableType:
    """Sections with their token counts against caps, what went in, and what was dropped."""
    parts: list[RenderableType] = []
    share = pack.total_tokens / pack.budget if pack.budget else 1.0
    total_style = "red" if share >= 0.9 else "yellow" if share >= 0.6 else "green"
    parts.append(
        Text.assemble(
            ("Next prompt ", "bold"),
            (f"{pack.total_tokens:,}", f"bold {total_style}"),
            f" / {pack.budget:,} tokens",
            f"  (+{pack.reply_tokens:,} for the reply)" if pack.reply_tokens else "",
        )
    )
    if pack.followup and pack.resolved_question != pack.question:
        parts.append(Text.assemble(("Read as: ", "dim"), plain(pack.resolved_question)))
    for section in pack.sections:
        cap = f" / {section.cap:,}" if section.cap is not None else ""
        parts.append(Text(""))
        parts.append(
            Text.assemble(
                (SECTION_TITLES.get(section.name, section.name), "bold"),
                (f"  {section.tokens:,}{cap} tokens", "dim"),
            )
        )
        if not section.items and section.name not in ("instructions", "question"):
            parts.append(Text("  (nothing)", style="dim"))
        for item in section.items:
            if item.kind in ("instructions", "question"):
                continue
            label = Text("  ")
            if item.number is not None:
                label.append(f"[{item.number}] ", style="bold")
            label.append_text(plain(item.label, TRUST_STYLES.get(item.trust or "", "")))
            label.append(f"  {item.tokens:,}", style="dim")
            if item.trimmed:
                label.append(" trimmed", style="yellow")
            parts.append(label)
            if item.why:
                parts.append(Text.assemble("    ", plain(item.why, "dim")))
    if pack.dropped:
        parts.append(Text(""))
        parts.append(
            Text(f"Dropped to fit ({len(pack.dropped)}), lowest value first", style="bold")
        )
        table = Table.grid(padding=(0, 1))
        table.add_column()
        table.add_column(justify="right", style="dim")
        for dropped in pack.dropped:
            table.add_row(
                Text.assemble(plain("  " + dropped.label), plain(f"  {dropped.reason}", "dim")),
                f"{dropped.tokens:,}",
            )
        parts.append(table)
    return Group(*parts)


class ContextPreview(VerticalScroll):
    """Shows a pack, a hint while nothing is typed, or the reason a pack cannot be built."""

    DEFAULT_CSS = """
    ContextPreview {
        width: 44;
        border-left: vkey $panel;
        padding: 0 1;
        background: $surface;
    }
    ContextPreview > #preview-body { width: 1fr; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.pack: ContextPack | None = None

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static(
            Text("Type a question to see what it would send.", style="dim"), id="preview-body"
        )

    @property
    def body(self) -> Static:
        return self.query_one("#preview-body", Static)

    def show_pack(self, pack: ContextPack) -> None:
        self.pack = pack
        self.body.update(render_pack(pack))

    def show_message(self, message: str) -> None:
        self.pack = None
        self.body.update(plain(message, "dim", multiline=True))
