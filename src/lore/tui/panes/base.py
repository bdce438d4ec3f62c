"""What every pane shares: the session it reads, when it first reads it, what it reloads on.

A pane reads nothing while the app starts: the vault is read the first time the pane is
shown, in workers, and again when a change it shows arrives. Workers never touch widgets;
each posts a Message the pane handles on the event loop, as any other event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.containers import Vertical
from textual.worker import Worker

from lore.tui.messages import VaultChanged
from lore.tui.panes.pane_support import report_worker_failure

if TYPE_CHECKING:
    from lore.core.session import LoreSession
    from lore.tui.palette import PaletteCommand


class LorePane(Vertical):
    """A pane of the app over one `LoreSession`."""

    # Shown by F1 above the app's own help.
    HELP: ClassVar[str] = ""
    # The kinds of change (see `VaultChanged`) this pane shows and reloads on.
    WATCHES: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, session: LoreSession, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.session = session
        self.started = False

    def on_show(self) -> None:
        if not self.started:
            self.started = True
            # Once this frame is drawn: the pane appears at once, its data a moment later. The
            # app holds the first pane's read until its first screen is whole, so reading
            # (and the modules it needs) never competes with drawing that screen.
            defer = getattr(self.app, "after_first_screen", self.call_after_refresh)
            defer(self.refresh_data)

    def refresh_data(self) -> None:
        """Read again what the pane shows (in workers: this returns at once)."""

    def on_vault_changed(self, message: VaultChanged) -> None:
        changed = message.kinds & self.WATCHES
        if self.started and changed:
            self.vault_changed(changed)

    def vault_changed(self, kinds: frozenset[str]) -> None:
        """`kinds` that this pane shows changed on disk; by default, read everything again."""
        self.refresh_data()

    def focus_default(self) -> None:
        """Focus what a person most likely wants when the pane comes to the front."""
        for child in self.query("*"):
            if child.focusable:
                child.focus()
                return

    def palette_commands(self) -> list[PaletteCommand]:
        """This pane's own entries in the command palette while it is in front."""
        return []

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        report_worker_failure(self, event.worker, event.state)
