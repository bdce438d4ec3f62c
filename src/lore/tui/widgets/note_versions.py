"""The versions of one note, newest first: read any of them, and pick one to restore.

The list comes ready from the Notes pane; a version's text is read from the history in a
worker when it is highlighted. Restoring is the pane's job: this screen returns the version
the person confirmed, or None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Label, Markdown, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import Worker, get_current_worker

from lore.rich_display import plain
from lore.tui.held_text import notify_plain, plain_content
from lore.tui.panes.pane_support import report_worker_failure
from lore.tui.widgets.quarantine_dialogs import ConfirmScreen

if TYPE_CHECKING:
    from lore.core.public import Note, NoteAtVersion, NoteVersion
    from lore.core.session import LoreSession

READ_DELAY_S = 0.15


def version_time(version: NoteVersion) -> str:
    """The version's time as "2025-03-01 14:05" (UTC, as git recorded it)."""
    return version.time.replace("T", " ")[:16]


def version_row(version: NoteVersion, operation_width: int, actor_width: int) -> Text:
    """One line of the list: rev, time, operation, actor, summary, in columns."""
    row = plain(version.short, "dim")
    row.append("  ")
    row.append_text(plain(version_time(version)))
    row.append("  ")
    row.append_text(plain(version.operation.ljust(operation_width), "bold"))
    row.append("  ")
    row.append_text(plain(version.actor.ljust(actor_width)))
    summary = version.summary
    if version.old_path:
        summary += f" (was {version.old_path})"
    if summary:
        row.append("  ")
        row.append_text(plain(summary, "italic"))
    return row


class NoteVersionsScreen(ModalScreen[str | None]):
    """Returns the rev of the version to restore, once confirmed, or None."""

    DEFAULT_CSS = """
    NoteVersionsScreen {
        align: center middle;
    }
    NoteVersionsScreen > Vertical {
        width: 110;
        max-width: 95%;
        height: 90%;
        padding: 0 1;
        border: round $primary;
        background: $surface;
    }
    NoteVersionsScreen #versions-list {
        height: auto;
        max-height: 40%;
        border: none;
        background: $surface;
    }
    NoteVersionsScreen #version-meta {
        color: $text-muted;
        height: auto;
        margin-top: 1;
    }
    NoteVersionsScreen #version-scroll {
        height: 1fr;
    }
    NoteVersionsScreen Label {
        width: 100%;
    }
    NoteVersionsScreen Label.hint {
        color: $text-muted;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "r",
            "restore",
            "Restore",
            id="notes.versions.restore",
            tooltip="Bring the note back as it was in this version (asks first)",
        ),
        Binding(
            "escape", "close", "Close", id="notes.versions.close", tooltip="Close, restore nothing"
        ),
    ]

    class VersionRead(Message):
        """The note as it was in the version `rev`."""

        def __init__(self, rev: str, shown: NoteAtVersion) -> None:
            super().__init__()
            self.rev = rev
            self.shown = shown

    def __init__(
        self,
        session: LoreSession,
        path: str,
        title: str,
        versions: list[NoteVersion],
        document_for: Callable[[Note], str],
    ) -> None:
        super().__init__()
        self.session = session
        self.path = path
        self.title = title
        self.versions = versions
        # How the Notes pane turns a note into the viewer's Markdown, so both show it alike.
        self._document_for = document_for
        self._read: dict[str, NoteAtVersion] = {}
        self._read_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        operation_width = max(len(version.operation) for version in self.versions)
        actor_width = max(len(version.actor) for version in self.versions)
        count = len(self.versions)
        with Vertical():
            yield Label(
                plain_content(f"{count} version{'s' if count != 1 else ''} of {self.title}"),
                id="versions-title",
            )
            yield OptionList(
                *(
                    Option(version_row(version, operation_width, actor_width), id=version.rev)
                    for version in self.versions
                ),
                id="versions-list",
            )
            yield Static("", id="version-meta")
            with VerticalScroll(id="version-scroll"):
                yield Markdown("", id="version-viewer", open_links=False)
            yield Label(
                "Enter shows a version · r restores it (asks first) · Esc closes", classes="hint"
            )

    def on_mount(self) -> None:
        versions = self.query_one("#versions-list", OptionList)
        versions.focus()
        versions.highlighted = 0

    def chosen(self) -> NoteVersion | None:
        """The version under the cursor."""
        index = self.query_one("#versions-list", OptionList).highlighted
        return self.versions[index] if index is not None else None

    # -- reading a version ---------------------------------------------------------------------

    @on(OptionList.OptionHighlighted, "#versions-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if self._read_timer is not None:
            self._read_timer.stop()
        version = self.versions[event.option_index]
        if version.rev in self._read or version.change == "removed":
            self._show(version)
            return
        self.query_one("#version-meta", Static).update(self._meta(version))
        self.query_one("#version-viewer", Markdown).update("*Reading this version…*")
        # Holding an arrow key down should not start a read of the history per row passed.
        self._read_timer = self.set_timer(READ_DELAY_S, lambda: self._read_version(version.rev))

    @on(OptionList.OptionSelected, "#versions-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        version = self.versions[event.option_index]
        if version.rev in self._read or version.change == "removed":
            self._show(version)
        else:
            self._read_version(version.rev)

    @work(thread=True, exclusive=True, exit_on_error=False, group="note-version-text")
    def _read_version(self, rev: str) -> None:
        shown = self.session.note_at(self.path, rev)
        if not get_current_worker().is_cancelled:
            self.post_message(self.VersionRead(rev, shown))

    def on_note_versions_screen_version_read(self, message: VersionRead) -> None:
        self._read[message.rev] = message.shown
        version = self.chosen()
        if version is not None and version.rev == message.rev:
            self._show(version)

    def _show(self, version: NoteVersion) -> None:
        self.query_one("#version-meta", Static).update(self._meta(version))
        viewer = self.query_one("#version-viewer", Markdown)
        shown = self._read.get(version.rev)
        if shown is None:
            viewer.update("*This version removed the note; choose an earlier one to read.*")
        else:
            viewer.update(self._document_for(shown.note()))
        self.query_one("#version-scroll", VerticalScroll).scroll_home(animate=False)

    @staticmethod
    def _meta(version: NoteVersion) -> Text:
        parts = [
            plain(version.short, "bold"),
            plain(version_time(version)),
            plain(f"{version.operation} by {version.actor}"),
            plain(version.change),
            plain(version.path, "dim"),
        ]
        return Text(" · ").join(parts)

    # -- restoring -----------------------------------------------------------------------------

    def action_restore(self) -> None:
        version = self.chosen()
        if version is None:
            return
        if version.change == "removed":
            notify_plain(
                self, "That version removed the note; choose an earlier one.", severity="warning"
            )
            return
        # Short enough for one line of the dialog at 80 columns: the list behind it says more.
        question = f"Restore the version {version.short} of {version_time(version)}?"

        def answered(yes: bool | None) -> None:
            if yes:
                self.dismiss(version.rev)

        self.app.push_screen(ConfirmScreen(question), answered)

    def action_close(self) -> None:
        self.dismiss(None)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        report_worker_failure(self, event.worker, event.state)
