"""The Quarantine pane's detail: one held claim shown so that nothing in it can hide.

Hidden characters (zero-width, bidirectional overrides, control codes, tag characters) are
spelled out in place, and the spans the gates flagged are marked in the text and numbered,
so a reviewer sees exactly what the gates saw before deciding.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Static

from lore.config import TrustLevel
from lore.core.public import OUTDATED_NOTICE, HeldClaim, is_hidden_char, make_visible, visible
from lore.tui.held_text import plain_content

TRUST_COLOUR_VARIABLES: dict[str, str] = {
    "trusted": "trust-trusted",
    "semi-trusted": "trust-semi",
    "untrusted": "trust-untrusted",
}


def trust_badge(trust: str, colours: Mapping[str, str]) -> Text:
    colour = colours.get(TRUST_COLOUR_VARIABLES.get(trust, "trust-untrusted"), "red")
    return Text(f" {trust} ", style=Style.parse(f"bold reverse {colour}"))


def marked_claim_text(held: HeldClaim, colours: Mapping[str, str]) -> Text:
    """The claim's text with hidden characters spelled out and flagged spans marked."""
    hidden_style = Style.parse(f"bold reverse {colours.get('warning', 'yellow')}")
    flag_style = Style.parse(f"underline {colours.get('error', 'red')}")
    text = Text()
    # Where each original character starts in the shown text, for the flag offsets.
    starts: list[int] = []
    for char in held.text:
        starts.append(len(text))
        if is_hidden_char(char):
            text.append(make_visible(char), style=hidden_style)
        else:
            text.append(char)
    starts.append(len(text))
    marker_style = Style.parse(f"bold {colours.get('error', 'red')}")
    markers: list[tuple[int, str]] = []
    for number, flag in enumerate(held.flags, 1):
        start = starts[min(max(flag.start, 0), len(held.text))]
        end = starts[min(max(flag.end, flag.start, 0), len(held.text))]
        if end > start:
            text.stylize(flag_style + Style(bold=True), start, end)
        markers.append((end, f"[{number}]"))
    # Numbers go in from the end backwards so each insertion leaves earlier offsets valid.
    for end, marker in sorted(markers, reverse=True):
        text = text[:end] + Text(marker, style=marker_style) + text[end:]
    return text


def _line(text: str) -> str:
    return visible(text, multiline=False)


def hidden_count(held: HeldClaim) -> int:
    return sum(1 for char in held.text if is_hidden_char(char))


class QuarantineDetail(VerticalScroll):
    """Claim, source, trust, gate, reasons, flags, and the related note, for one held claim."""

    DEFAULT_CSS = """
    QuarantineDetail {
        padding: 0 1;
    }
    QuarantineDetail .label {
        color: $text-muted;
        margin: 1 0 0 0;
    }
    QuarantineDetail #quarantine-compare {
        height: auto;
    }
    QuarantineDetail #quarantine-claim {
        width: 1fr;
        border: round $held;
        padding: 0 1;
    }
    QuarantineDetail #quarantine-related {
        width: 1fr;
        border: round $secondary;
        padding: 0 1;
    }
    QuarantineDetail #quarantine-related.-absent {
        display: none;
    }
    """

    def compose(self) -> ComposeResult:
        yield Static("", id="quarantine-badges")
        # The claim and the note it may duplicate or contradict, side by side.
        with Horizontal(id="quarantine-compare"):
            yield Static(
                "Nothing is held. Claims the gates doubt appear here.", id="quarantine-claim"
            )
            yield Static("", id="quarantine-related", classes="-absent")
        yield Static("", id="quarantine-facts")

    def show(
        self,
        held: HeldClaim | None,
        colours: Mapping[str, str],
        promote_as: TrustLevel | None = None,
        *,
        outdated: bool = False,
    ) -> None:
        claim = self.query_one("#quarantine-claim", Static)
        badges = self.query_one("#quarantine-badges", Static)
        facts = self.query_one("#quarantine-facts", Static)
        related = self.query_one("#quarantine-related", Static)
        if held is None:
            badges.update("")
            claim.border_title = ""
            claim.update("Nothing is held. Claims the gates doubt appear here.")
            facts.update("")
            related.update("")
            related.add_class("-absent")
            return
        line = Text.assemble(trust_badge(held.trust, colours), " ")
        line.append(
            f" held by {held.gate} ", style=Style.parse(f"reverse {colours.get('held', 'yellow')}")
        )
        if promote_as is not None:
            line.append("  promote as ")
            line.append_text(trust_badge(promote_as, colours))
        hidden = hidden_count(held)
        if hidden:
            line.append(f"  {hidden} hidden character{'s' if hidden != 1 else ''}", style="bold")
        if outdated:
            line.append("\n")
            line.append(OUTDATED_NOTICE, style=Style.parse(colours.get("warning", "yellow")))
        badges.update(line)
        claim.update(marked_claim_text(held, colours))
        claim.border_title = plain_content(f"Claim {held.id}")
        facts.update(self._facts(held))
        if held.related_path:
            related.remove_class("-absent")
            related.border_title = "Similar or conflicting note"
            shown = Text(visible(held.related_path, multiline=False) + "\n", style="dim")
            shown.append(make_visible(held.related_text or ""))
            related.update(shown)
        else:
            related.add_class("-absent")
        self.scroll_home(animate=False)

    @staticmethod
    def _facts(held: HeldClaim) -> Text:
        out = Text()
        out.append("Source  ", style="bold")
        out.append(_line(held.source_title or held.source_uri))
        if held.source_title and held.source_title != held.source_uri:
            out.append(f"\n        {_line(held.source_uri)}", style="dim")
        if held.source_sha256:
            out.append(f"\n        sha256 {_line(held.source_sha256[:16])}…", style="dim")
        if held.section:
            out.append("\nSection ", style="bold")
            out.append(_line(held.section))
        if held.held_at:
            out.append("\nHeld    ", style="bold")
            out.append(_line(held.held_at))
        out.append("\n\nWhy it was held\n", style="bold")
        for reason in held.reasons or ["(no reason recorded)"]:
            out.append(f"  • {make_visible(reason)}\n")
        if held.flags:
            out.append("\nFlags\n", style="bold")
            for number, flag in enumerate(held.flags, 1):
                out.append(f"  [{number}] {_line(flag.kind)}", style="bold")
                out.append(f": {make_visible(flag.detail)}\n")
        return out
