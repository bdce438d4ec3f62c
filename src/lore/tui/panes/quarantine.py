"""The Quarantine pane: review held claims by key. Every decision is an operation of the
session, so it is filed, tombstoned, undoable and in the audit log exactly as from the
command line."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerState, get_current_worker

from lore.config import TRUST_LEVELS, TrustLevel
from lore.core.public import Promotion, is_hidden_char
from lore.rich_display import plain
from lore.tui.held_text import notify_plain
from lore.tui.messages import OpenNote, VaultWritten
from lore.tui.palette import PaletteCommand
from lore.tui.panes.base import LorePane
from lore.tui.widgets.quarantine_detail import QuarantineDetail, trust_badge
from lore.tui.widgets.quarantine_dialogs import ConfirmScreen, EditClaimScreen, RejectReasonScreen

if TYPE_CHECKING:
    from lore.core.public import HeldClaim
    from lore.core.session import LoreSession

ROW_TEXT_CHARS = 160
# The trust `t` cycles through for the next promotion; None keeps the claim's own.
TRUST_CHOICES: tuple[TrustLevel | None, ...] = (None, *TRUST_LEVELS)


def _hidden_removed(count: int) -> str:
    note = Promotion([], count).hidden_note()
    return f"; {note}" if note else ""


def _one_line(text: str) -> str:
    cleaned = "".join("⍰" if is_hidden_char(char) else char for char in text)
    return " ".join(cleaned.split())


class QuarantinePane(LorePane):
    """Held claims on the left, the highlighted one in full on the right."""

    HELP: ClassVar[str] = """\
## Quarantine

Claims the admission gates doubted: hidden or instruction-like text, an untrusted source,
a contradiction with a trusted note, a near-duplicate. Nothing here is in your notes until
you promote it. Hidden characters are spelled out (⟦U+200B ZWSP⟧) and flagged spans are
underlined and numbered in the claim.

| Key | Does |
|---|---|
| `p` | Promote: file the claim (or the selected claims) into the notes |
| `r` | Reject, with an optional reason; the claim is kept as a tombstone |
| `e` | Edit the text, then promote it (Ctrl+S in the editor) |
| `t` | Change the trust it (or the selection) will be promoted with: trusted, semi, untrusted |
| `Space` | Select or unselect for a batch; `Esc` clears the selection |
| `P` / `R` | Promote / reject every held claim from this claim's source (asks first) |
| `u` | Undo the last promotion or rejection |
| `o` | Open the similar or conflicting note |

Every action is written to the audit log.
"""

    DEFAULT_CSS = """
    QuarantinePane {
        height: 1fr;
    }
    QuarantinePane #quarantine-summary {
        height: auto;
        padding: 0 1;
        color: $text-muted;
    }
    QuarantinePane #quarantine-body {
        height: 1fr;
    }
    QuarantinePane #quarantine-list {
        width: 2fr;
        height: 1fr;
        border: none;
    }
    QuarantinePane QuarantineDetail {
        width: 3fr;
        border-left: vkey $held 40%;
    }
    """

    WATCHES: ClassVar[frozenset[str]] = frozenset({"quarantine"})

    class Loaded(Message):
        """The held claims, and the ids of those from an older version of their source."""

        def __init__(self, held: list[HeldClaim], outdated: set[str]) -> None:
            super().__init__()
            self.held = held
            self.outdated = outdated

    class Decided(Message):
        """A decision (or an undo) was made; `summary` says what it did."""

        def __init__(self, summary: str) -> None:
            super().__init__()
            self.summary = summary

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "promote", "Promote", id="quarantine.promote", tooltip="File into the notes"),
        Binding("r", "reject", "Reject", id="quarantine.reject", tooltip="Reject (with a reason)"),
        Binding("e", "edit", "Edit+promote", id="quarantine.edit", tooltip="Edit, then promote"),
        Binding(
            "t", "cycle_trust", "Trust", id="quarantine.trust", tooltip="Trust to promote with"
        ),
        Binding(
            "space", "toggle_select", "Select", id="quarantine.select", tooltip="Select for a batch"
        ),
        Binding(
            "escape",
            "clear_selection",
            "Unselect",
            show=False,
            id="quarantine.unselect",
            tooltip="Clear the selection",
        ),
        Binding(
            "P",
            "promote_source",
            "Promote source",
            id="quarantine.promote_source",
            tooltip="Promote every claim from this source",
        ),
        Binding(
            "R",
            "reject_source",
            "Reject source",
            id="quarantine.reject_source",
            tooltip="Reject every claim from this source",
        ),
        Binding("u", "undo", "Undo", id="quarantine.undo", tooltip="Undo the last decision"),
        Binding(
            "o",
            "open_related",
            "Related note",
            id="quarantine.related",
            tooltip="Open the related note",
        ),
    ]

    def __init__(self, session: LoreSession, **kwargs: object) -> None:
        super().__init__(session, **kwargs)
        self.held: list[HeldClaim] = []
        self.selected: set[str] = set()
        # Ids of held claims from a version of their source since read again.
        self.outdated: set[str] = set()
        self.promote_as: dict[str, TrustLevel] = {}
        self._loaded = False

    def compose(self) -> ComposeResult:
        yield Static("Reading the quarantine…", id="quarantine-summary")
        with Horizontal(id="quarantine-body"):
            yield OptionList(id="quarantine-list")
            yield QuarantineDetail()

    def on_mount(self) -> None:
        # Badges take their colours from the theme, so a theme switch redraws them.
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, _theme: object) -> None:
        if self._loaded:
            self._show(self.held)

    def focus_default(self) -> None:
        self.query_one("#quarantine-list", OptionList).focus()

    # -- loading -----------------------------------------------------------------------------

    def refresh_data(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, exit_on_error=False, group="quarantine-load")
    def _load(self) -> None:
        quarantine = self.session.quarantine
        held = quarantine.list()
        outdated = quarantine.outdated(held)
        if not get_current_worker().is_cancelled:
            self.post_message(self.Loaded(held, outdated))

    def on_quarantine_pane_loaded(self, message: Loaded) -> None:
        self._show(message.held, message.outdated)

    def _colours(self) -> dict[str, str]:
        return self.app.get_css_variables()

    def _show(self, held: list[HeldClaim], outdated: set[str] | None = None) -> None:
        options = self.query_one("#quarantine-list", OptionList)
        current = self.highlighted
        index = options.highlighted
        self.held = held
        if outdated is not None:
            self.outdated = outdated
        ids = {claim.id for claim in held}
        self.selected &= ids
        self.promote_as = {key: value for key, value in self.promote_as.items() if key in ids}
        colours = self._colours()
        options.clear_options()
        options.add_options(Option(self._row(claim, colours), id=claim.id) for claim in held)
        if held:
            keep = next((i for i, c in enumerate(held) if current and c.id == current.id), None)
            options.highlighted = keep if keep is not None else min(index or 0, len(held) - 1)
        self._loaded = True
        self._show_detail()
        self._update_summary()

    def _row(self, claim: HeldClaim, colours: dict[str, str]) -> Text:
        width = self.query_one("#quarantine-list", OptionList).scrollable_content_region.width
        width = max(24, width - 2) if width else 60
        mark = "●" if claim.id in self.selected else " "
        head = Text(f"{mark} ", style="bold")
        head.append_text(trust_badge(claim.trust, colours))
        head.append(f" {claim.gate}", style=Style.parse(f"bold {colours.get('held', 'yellow')}"))
        if claim.id in self.promote_as:
            head.append(f" → {self.promote_as[claim.id]}", style="italic")
        if claim.id in self.outdated:
            head.append(" older version", style=Style.parse(colours.get("warning", "yellow")))
        body = Text(f"  {_one_line(claim.text)[:ROW_TEXT_CHARS]}")
        source = plain(f"  {claim.source_title or claim.source_uri}", "dim")
        # Three lines per claim whatever the width: each ends in … rather than wrapping.
        for line in (head, body, source):
            line.truncate(width, overflow="ellipsis")
        return Text("\n").join([head, body, source])

    def on_resize(self) -> None:
        if self.held:
            colours = self._colours()
            options = self.query_one("#quarantine-list", OptionList)
            for claim in self.held:
                options.replace_option_prompt(claim.id, self._row(claim, colours))

    def _refresh_row(self, claim: HeldClaim) -> None:
        options = self.query_one("#quarantine-list", OptionList)
        options.replace_option_prompt(claim.id, self._row(claim, self._colours()))

    def _update_summary(self) -> None:
        sources = len({claim.source_uri for claim in self.held})
        if not self.held:
            line = "Nothing is held. Ingest documents and doubtful claims will wait here for you."
        else:
            line = f"{len(self.held):,} held from {sources:,} source{'s' if sources != 1 else ''}"
            if self.selected:
                line += f" · {len(self.selected):,} selected (p/r act on them)"
        self.query_one("#quarantine-summary", Static).update(line)

    # -- the highlighted claim ---------------------------------------------------------------

    @property
    def highlighted(self) -> HeldClaim | None:
        options = self.query_one("#quarantine-list", OptionList)
        index = options.highlighted
        if index is None or not 0 <= index < len(self.held):
            return None
        return self.held[index]

    @on(OptionList.OptionHighlighted, "#quarantine-list")
    def _highlight_changed(self) -> None:
        self._show_detail()

    def _show_detail(self) -> None:
        claim = self.highlighted
        trust = self.promote_as.get(claim.id) if claim else None
        outdated = claim is not None and claim.id in self.outdated
        self.query_one(QuarantineDetail).show(claim, self._colours(), trust, outdated=outdated)

    def _targets(self) -> list[HeldClaim]:
        """The selected claims, or the highlighted one when nothing is selected."""
        if self.selected:
            return [claim for claim in self.held if claim.id in self.selected]
        claim = self.highlighted
        if claim is None:
            self.notify("Nothing is held.", severity="warning")
            return []
        return [claim]

    # -- decisions ---------------------------------------------------------------------------

    def action_promote(self) -> None:
        targets = self._targets()
        if targets:
            self._decide(
                "promote", [(claim.id, self.promote_as.get(claim.id)) for claim in targets]
            )

    def action_reject(self) -> None:
        targets = self._targets()
        if not targets:
            return
        what = f"{len(targets)} claims" if len(targets) > 1 else f"claim {targets[0].id}"
        ids = [claim.id for claim in targets]

        def rejected(reason: str | None) -> None:
            if reason is not None:
                self._decide("reject", [(claim_id, None) for claim_id in ids], reason=reason)

        self.app.push_screen(RejectReasonScreen(what), rejected)

    def action_edit(self) -> None:
        claim = self.highlighted
        if claim is None:
            self.notify("Nothing is held.", severity="warning")
            return
        cleaned = "".join(char for char in claim.text if not is_hidden_char(char))
        removed = len(claim.text) - len(cleaned)
        trust = self.promote_as.get(claim.id)

        def edited(text: str | None) -> None:
            if text is not None:
                self._decide("promote", [(claim.id, trust)], text=text)

        self.app.push_screen(EditClaimScreen(cleaned, hidden_removed=removed), edited)

    def action_cycle_trust(self) -> None:
        claim = self.highlighted
        if claim is None:
            return
        current = self.promote_as.get(claim.id)
        following = TRUST_CHOICES[(TRUST_CHOICES.index(current) + 1) % len(TRUST_CHOICES)]
        # With a selection, the whole batch moves together, led by the highlighted claim.
        changed = [c for c in self.held if c.id in self.selected] if self.selected else [claim]
        for target in changed:
            if following is None:
                self.promote_as.pop(target.id, None)
            else:
                self.promote_as[target.id] = following
            self._refresh_row(target)
        self._show_detail()

    def action_toggle_select(self) -> None:
        claim = self.highlighted
        if claim is None:
            return
        self.selected ^= {claim.id}
        self._refresh_row(claim)
        self._update_summary()
        options = self.query_one("#quarantine-list", OptionList)
        if options.highlighted is not None and options.highlighted < len(self.held) - 1:
            options.highlighted += 1

    def action_clear_selection(self) -> None:
        if not self.selected:
            return
        was = [claim for claim in self.held if claim.id in self.selected]
        self.selected.clear()
        for claim in was:
            self._refresh_row(claim)
        self._update_summary()

    def action_promote_source(self) -> None:
        self._whole_source("promote")

    def action_reject_source(self) -> None:
        self._whole_source("reject")

    def _whole_source(self, verb: str) -> None:
        claim = self.highlighted
        if claim is None:
            self.notify("Nothing is held.", severity="warning")
            return
        uri = claim.source_uri
        count = sum(1 for held in self.held if held.source_uri == uri)
        question = f"{verb.capitalize()} all {count} held claims from {claim.source_title or uri}?"

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._decide_source(verb, uri)

        self.app.push_screen(ConfirmScreen(question), confirmed)

    def action_undo(self) -> None:
        self._act(lambda: self._describe_undo(self.session.undo()))

    def action_open_related(self) -> None:
        claim = self.highlighted
        if claim is None or not claim.related_path:
            self.notify("This claim has no similar or conflicting note.")
            return
        self.post_message(OpenNote(claim.related_path))

    def palette_commands(self) -> list[PaletteCommand]:
        """What Ctrl+P offers while this pane is shown: the decisions that apply now."""
        claim = self.highlighted
        commands: list[PaletteCommand] = []
        if claim is not None:
            many = f"the {len(self.selected)} selected claims" if self.selected else "this claim"
            source = claim.source_title or claim.source_uri
            commands += [
                (f"Promote {many}", "File into the notes", self.action_promote),
                (f"Reject {many}", "Keep a tombstone, with a reason", self.action_reject),
                ("Edit then promote", "Change the text first", self.action_edit),
                (f"Promote everything from {source}", "Asks first", self.action_promote_source),
                (f"Reject everything from {source}", "Asks first", self.action_reject_source),
            ]
        commands.append(
            ("Undo the last quarantine decision", "Promotion or rejection", self.action_undo)
        )
        return commands

    # -- running decisions in the session ----------------------------------------------------

    def _decide(
        self,
        verb: str,
        targets: list[tuple[str, TrustLevel | None]],
        *,
        reason: str = "",
        text: str | None = None,
    ) -> None:
        def run() -> str:
            notes: list[str] = []
            hidden = 0
            for claim_id, trust in targets:
                if verb == "promote":
                    promotion = self.session.promote(claim_id, trust=trust, text=text)
                    notes += promotion.notes
                    hidden += promotion.hidden_removed
                else:
                    self.session.reject(claim_id, reason=reason)
            count = f"{len(targets)} claims" if len(targets) > 1 else "the claim"
            # Each claim is its own decision in the session, so undo takes them back one by one.
            undo = "u undoes them one at a time." if len(targets) > 1 else "u undoes."
            if verb == "promote":
                filed = ", ".join(sorted(set(notes))) or "no note (a duplicate)"
                return f"Promoted {count} into {filed}{_hidden_removed(hidden)}. {undo}"
            return f"Rejected {count}. {undo}"

        self.selected.clear()
        self._act(run)

    def _decide_source(self, verb: str, uri: str) -> None:
        def run() -> str:
            if verb == "promote":
                promotion = self.session.promote_source(uri)
                into = (
                    f"{len(set(promotion.notes))} notes{_hidden_removed(promotion.hidden_removed)}"
                )
                return f"Promoted every claim from {uri} into {into}. u undoes."
            rejected = self.session.reject_source(uri)
            return f"Rejected {len(rejected)} claims from {uri}. u undoes."

        self._act(run)

    @staticmethod
    def _describe_undo(result: dict[str, object]) -> str:
        claims = result.get("claims") or []
        count = len(claims) if isinstance(claims, list) else 0
        return f"Undid the last {result.get('undone')} ({count} claim{'s' if count != 1 else ''} held again)."

    @work(thread=True, exit_on_error=False, group="quarantine-action")
    def _act(self, action: Callable[[], str]) -> None:
        # Decisions run one after another: each takes the vault lock in the session.
        self.post_message(self.Decided(action()))

    def on_quarantine_pane_decided(self, message: Decided) -> None:
        notify_plain(self, message.summary, title="Quarantine")
        self.refresh_data()
        # The app tells every other pane: the notes changed, the count in the tab too.
        self.post_message(VaultWritten(frozenset({"quarantine", "notes", "audit"}), origin=self))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # `LorePane` reports the failure too: Textual runs each class's handler in turn.
        if event.worker.group == "quarantine-action" and event.state == WorkerState.ERROR:
            # A failed decision may have changed nothing or part of a batch: show the truth.
            self.refresh_data()
