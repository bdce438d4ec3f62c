"""The Notes pane: the vault as a tree by folder and by tag, a Markdown viewer with backlinks,
search as you type, keys to edit a note in $EDITOR or start a new one, and a note's versions
to read and restore."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar
from urllib.parse import quote

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Label, Markdown, OptionList, Static, Tree
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from lore.core.public import WIKI_LINK, linkable_uri, visible
from lore.rich_display import highlighted, plain
from lore.tui.held_text import notify_plain
from lore.tui.messages import VaultWritten
from lore.tui.palette import PaletteCommand
from lore.tui.panes.base import LorePane
from lore.tui.panes.pane_support import run_editor
from lore.tui.widgets.note_versions import NoteVersionsScreen, version_time
from lore.tui.widgets.notes_new_note import NewNoteScreen
from lore.tui.widgets.notes_tree import NOTES_PREFIX, NotesCatalog, NotesTree, TreeEntry

if TYPE_CHECKING:
    from lore.core.public import Note, NoteVersion, RestoreResult, SearchHit
    from lore.core.session import LoreSession

NOTE_LINK_SCHEME = "note:"
SEARCH_DELAY_S = 0.2
PREVIEW_DELAY_S = 0.15
SEARCH_LIMIT = 50
_HEADING = re.compile(r"^\s*#\s")


def wiki_links_as_markdown(body: str) -> str:
    """Turn `[[Target#Section|alias]]` into Markdown links the viewer can follow."""

    def replace(match: re.Match[str]) -> str:
        target = match.group(1).strip()
        shown = (match.group(3) or "|")[1:].strip() or target
        shown = shown.replace("[", "(").replace("]", ")")
        return f"[{shown}]({NOTE_LINK_SCHEME}{quote(target)})"

    return WIKI_LINK.sub(replace, body)


@dataclass
class NoteView:
    """A note as the Notes pane shows it, with the notes that link to it."""

    note: Note
    backlinks: list[tuple[str, str]] = field(default_factory=list)  # (path, title)


def _document_for(note: Note) -> str:
    body = wiki_links_as_markdown(note.body)
    if not _HEADING.match(body):
        body = f"# {note.title}\n\n{body}"
    return visible(body, multiline=True)


def _meta_line(note: Note) -> Text:
    parts: list[Text] = [plain(note.trust, "bold")]
    if note.status != "active":
        parts.append(plain(note.status, "italic"))
    if note.tags:
        parts.append(plain(" ".join(f"#{tag}" for tag in note.tags)))
    for source in note.sources[:3]:
        parts.append(plain(f"source: {source.title or source.uri}"))
    if len(note.sources) > 3:
        parts.append(Text(f"+{len(note.sources) - 3} sources"))
    if note.updated:
        parts.append(plain(f"updated {note.updated}"))
    parts.append(plain(note.path, "dim"))
    for problem in note.problems:
        parts.append(plain(f"⚠ {problem}", "bold"))
    return Text(" · ").join(parts)


class NotesPane(LorePane):
    """Browse, search, read, edit and create notes."""

    HELP: ClassVar[str] = """\
## Notes

Browse the vault **by folder** or **by tag** on the left; the highlighted note shows on
the right with the notes that link to it (**backlinks**).

| Key | Does |
|---|---|
| `/` | Search as you type (full text, titles count most) |
| `Esc` | Clear the search and go back to the tree |
| `Enter` | Open the highlighted note, result or backlink |
| `e` | Open the note in `$EDITOR`; Lore reindexes it when the editor closes |
| `n` | New note: asks for a title, creates it, opens your editor |
| `b` | Jump to the backlinks list |
| `v` | Versions of the open note, newest first: read any of them, `r` restores one (asks first) |

Links between notes (`[[Title]]`) are clickable in the viewer.
Changes made by other programs appear here without a restart.
A restore is itself a version; the text it replaces is kept in `trash/`.
"""

    DEFAULT_CSS = """
    NotesPane {
        height: 1fr;
    }
    NotesPane #notes-body {
        height: 1fr;
    }
    NotesPane #notes-side {
        width: 38;
        min-width: 24;
        border-right: vkey $primary 30%;
    }
    NotesPane #notes-tree, NotesPane #notes-results {
        height: 1fr;
        border: none;
        background: $surface;
    }
    NotesPane #notes-results {
        display: none;
    }
    NotesPane.-searching #notes-results {
        display: block;
    }
    NotesPane.-searching #notes-tree {
        display: none;
    }
    NotesPane #notes-main {
        padding: 0 1;
    }
    NotesPane #notes-meta {
        color: $text-muted;
        height: auto;
    }
    NotesPane #notes-meta.trust-untrusted {
        color: $error;
    }
    NotesPane #notes-meta.trust-semi-trusted {
        color: $warning;
    }
    NotesPane #notes-scroll {
        height: 1fr;
    }
    NotesPane #notes-backlinks-title {
        color: $text-muted;
        margin-top: 1;
    }
    /* No more than a quarter of the height, so at 80x24 the note keeps room to be read. */
    NotesPane #notes-backlinks {
        height: auto;
        max-height: 25%;
        border: none;
    }
    """

    WATCHES: ClassVar[frozenset[str]] = frozenset({"notes"})

    class CatalogLoaded(Message):
        """Every note for the tree, and the note that was shown (`path`) read again:
        None when it is gone."""

        def __init__(self, catalog: NotesCatalog, view: NoteView | None, path: str | None) -> None:
            super().__init__()
            self.catalog = catalog
            self.view = view
            self.path = path

    class NoteRead(Message):
        """A note asked for by `open_note`, read with its backlinks."""

        def __init__(self, view: NoteView) -> None:
            super().__init__()
            self.view = view

    class SearchFound(Message):
        """The hits for the search `text`."""

        def __init__(self, text: str, hits: list[SearchHit]) -> None:
            super().__init__()
            self.text = text
            self.hits = hits

    class NoteCreated(Message):
        """A new note was written; the editor opens on it next."""

        def __init__(self, view: NoteView) -> None:
            super().__init__()
            self.view = view

    class VersionsListed(Message):
        """The versions of `note`, newest first, for the versions dialog."""

        def __init__(self, note: Note, versions: list[NoteVersion]) -> None:
            super().__init__()
            self.note = note
            self.versions = versions

    class NoteRestored(Message):
        """A note was brought back as it was in a version, and read again with its backlinks."""

        def __init__(self, view: NoteView, result: RestoreResult) -> None:
            super().__init__()
            self.view = view
            self.result = result

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "Search", id="notes.search", tooltip="Search notes as you type"),
        Binding(
            "escape",
            "clear_search",
            "Clear",
            id="notes.clear_search",
            tooltip="Clear the search and show the tree",
        ),
        Binding("e", "edit", "Edit", id="notes.edit", tooltip="Open this note in $EDITOR"),
        Binding("n", "new_note", "New note", id="notes.new", tooltip="Create a note"),
        Binding("b", "backlinks", "Backlinks", id="notes.backlinks", tooltip="Go to the backlinks"),
        Binding(
            "v",
            "versions",
            "Versions",
            id="notes.versions",
            tooltip="The versions of this note: read one, restore one",
        ),
    ]

    def __init__(self, session: LoreSession, **kwargs: object) -> None:
        super().__init__(session, **kwargs)
        self.current: NoteView | None = None
        self._search_timer: Timer | None = None
        self._preview_timer: Timer | None = None
        self._loaded = False

    def compose(self) -> ComposeResult:
        yield Input(placeholder="Search notes…  (/)", id="notes-search")
        with Horizontal(id="notes-body"):
            with Vertical(id="notes-side"):
                yield NotesTree(id="notes-tree")
                yield OptionList(id="notes-results")
            with Vertical(id="notes-main"):
                yield Static("", id="notes-meta")
                with VerticalScroll(id="notes-scroll"):
                    yield Markdown(
                        "*Pick a note on the left, or press* `/` *to search.*",
                        id="notes-viewer",
                        open_links=False,
                    )
                yield Label("Backlinks", id="notes-backlinks-title")
                yield OptionList(id="notes-backlinks")

    def focus_default(self) -> None:
        # The tree, so the pane's keys work at once; `/` reaches the search box.
        self.query_one(NotesTree).focus()

    # -- loading -----------------------------------------------------------------------------

    def refresh_data(self) -> None:
        """Re-read the notes (after another process or an editor changed them)."""
        self._load_catalog()

    @work(thread=True, exclusive=True, exit_on_error=False, group="notes-catalog")
    def _load_catalog(self) -> None:
        # reconcile() opens the index on first use and picks up edits made outside Lore.
        self.session.reconcile()
        catalog = NotesCatalog.from_documents(self.session.note_documents())
        current = self.current.note.path if self.current else None
        view = self._read_view(current) if current else None
        if not get_current_worker().is_cancelled:
            self.post_message(self.CatalogLoaded(catalog, view, current))

    def on_notes_pane_catalog_loaded(self, message: CatalogLoaded) -> None:
        view, path = message.view, message.path
        self.query_one(NotesTree).show_catalog(message.catalog)
        self._loaded = True
        # A note opened while the catalog was loading wins over the one it re-read.
        still_shown = self.current.note.path if self.current else None
        if path is not None and path == still_shown:
            if view is None:
                self.current = None
                self.query_one("#notes-meta", Static).update(plain(f"{path} is gone"))
                self.query_one(Markdown).update("*This note was moved or removed.*")
                self.query_one("#notes-backlinks", OptionList).clear_options()
            elif self.current is None or view.note != self.current.note:
                self._show_note(view)
            else:
                self.query_one(NotesTree).reveal(path)

    def _read_view(self, path: str) -> NoteView | None:
        note, _ = self.session.load_note(path)
        if note is None:
            return None
        return NoteView(note=note, backlinks=self._backlinks(note))

    def _backlinks(self, note: Note) -> list[tuple[str, str]]:
        linking = [path for path in self.session.backlinks(note.title) if path != note.path]
        titled = []
        for path in linking:
            found = self.session.lookup(path=path)
            titled.append((path, str(found[0]["title"]) if found else path))
        return titled

    # -- showing one note ----------------------------------------------------------------------

    def open_note(self, ref: str) -> None:
        """Show the note named by `ref` (id, title or path)."""
        self._open(ref)

    @work(thread=True, exclusive=True, exit_on_error=False, group="notes-open")
    def _open(self, ref: str) -> None:
        if ref.startswith("notes/") and self.session.resolve_inside(ref).is_file():
            note = self.session.read_note(ref)
        else:
            note = self.session.find_note(ref)
        view = NoteView(note=note, backlinks=self._backlinks(note))
        if not get_current_worker().is_cancelled:
            self.post_message(self.NoteRead(view))

    def on_notes_pane_note_read(self, message: NoteRead) -> None:
        self._show_note(message.view)

    def _show_note(self, view: NoteView) -> None:
        self.current = view
        self.query_one(NotesTree).reveal(view.note.path)
        note = view.note
        meta = self.query_one("#notes-meta", Static)
        meta.set_classes(f"trust-{note.trust}")
        meta.update(_meta_line(note))
        self.query_one(Markdown).update(_document_for(note))
        self.query_one("#notes-scroll", VerticalScroll).scroll_home(animate=False)
        backlinks = self.query_one("#notes-backlinks", OptionList)
        backlinks.clear_options()
        backlinks.add_options(Option(plain(title), id=path) for path, title in view.backlinks)
        title = self.query_one("#notes-backlinks-title", Label)
        title.update(f"Backlinks ({len(view.backlinks)})" if view.backlinks else "No backlinks")

    @on(Tree.NodeHighlighted, "#notes-tree")
    def _tree_highlighted(self, event: Tree.NodeHighlighted[TreeEntry]) -> None:
        entry = event.node.data
        if entry is None or entry.kind != "note":
            return
        if self.current is not None and self.current.note.path == entry.key:
            return  # already shown (the tree followed a note opened elsewhere)
        if self._preview_timer is not None:
            self._preview_timer.stop()
        # Holding an arrow key down should not start a read per row passed.
        self._preview_timer = self.set_timer(PREVIEW_DELAY_S, lambda: self.open_note(entry.key))

    @on(Tree.NodeSelected, "#notes-tree")
    def _tree_selected(self, event: Tree.NodeSelected[TreeEntry]) -> None:
        entry = event.node.data
        if entry is not None and entry.kind == "note":
            self.open_note(entry.key)

    @on(OptionList.OptionSelected, "#notes-backlinks, #notes-results")
    def _option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.open_note(event.option.id)

    @on(Markdown.LinkClicked, "#notes-viewer")
    def _link_clicked(self, event: Markdown.LinkClicked) -> None:
        event.stop()
        if event.href.startswith(NOTE_LINK_SCHEME):
            self.open_note(event.href[len(NOTE_LINK_SCHEME) :])
        elif event.href.startswith(("http://", "https://")) and linkable_uri(event.href):
            self.app.open_url(event.href)
        else:
            notify_plain(self, f"Not a link Lore can open: {event.href}", severity="warning")

    # -- search --------------------------------------------------------------------------------

    @on(Input.Changed, "#notes-search")
    def _search_changed(self, event: Input.Changed) -> None:
        if self._search_timer is not None:
            self._search_timer.stop()
        text = event.value.strip()
        self.set_class(bool(text), "-searching")
        if text:
            self._search_timer = self.set_timer(SEARCH_DELAY_S, lambda: self._search(text))
        else:
            self.query_one("#notes-results", OptionList).clear_options()

    @on(Input.Submitted, "#notes-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        results = self.query_one("#notes-results", OptionList)
        if results.option_count:
            results.focus()
            results.highlighted = 0

    @work(thread=True, exclusive=True, exit_on_error=False, group="notes-search")
    def _search(self, text: str) -> None:
        hits = self.session.search(text, limit=SEARCH_LIMIT, status=None, snippets=True)
        if not get_current_worker().is_cancelled:
            self.post_message(self.SearchFound(text, hits))

    def on_notes_pane_search_found(self, message: SearchFound) -> None:
        text, hits = message.text, message.hits
        if self.query_one("#notes-search", Input).value.strip() != text:
            return  # the user typed on; a newer search is on its way
        results = self.query_one("#notes-results", OptionList)
        results.clear_options()
        if not hits:
            results.add_option(Option(plain(f"No note matches {text!r}", "italic"), disabled=True))
            return
        for hit in hits:
            prompt = plain(hit.title, "bold")
            if hit.status != "active":
                prompt.append(f" ({hit.status})", style="dim")
            # Same length as the snippet, so the highlight offsets still line up.
            snippet = "".join(" " if char.isspace() else char for char in hit.snippet)[:160]
            if snippet:
                spans = [(start, end) for start, end in hit.highlights if end <= 159]
                prompt.append("\n")
                prompt.append_text(
                    highlighted(snippet, spans, "bold underline", style="dim", multiline=False)
                )
            results.add_option(Option(prompt, id=hit.path))

    # -- actions -------------------------------------------------------------------------------

    def action_search(self) -> None:
        self.query_one("#notes-search", Input).focus()

    def action_clear_search(self) -> None:
        search = self.query_one("#notes-search", Input)
        if search.value:
            search.value = ""
        self.query_one(NotesTree).focus()

    def action_backlinks(self) -> None:
        backlinks = self.query_one("#notes-backlinks", OptionList)
        if backlinks.option_count:
            backlinks.focus()
            if backlinks.highlighted is None:
                backlinks.highlighted = 0
        else:
            self.notify("No note links here.")

    def action_edit(self) -> None:
        if self.current is None:
            self.notify("Open a note first.", severity="warning")
            return
        self._edit(self.current.note.path)

    def _edit(self, relpath: str) -> None:
        try:
            self.session.ensure_writable()
            path = self.session.resolve_inside(relpath)
        except Exception as exc:
            notify_plain(self, str(exc), severity="error")
            return
        problem = run_editor(self.app, path)
        if problem:
            notify_plain(self, problem, severity="warning")
        self._record_edit(relpath)

    @work(thread=True, exclusive=True, exit_on_error=False, group="notes-edit")
    def _record_edit(self, relpath: str) -> None:
        """The editor's save is the person's edit (a version of its own in a versioned
        vault); whatever the editor did (saved, renamed, nothing), the vault is read back."""
        note, _ = self.session.load_note(relpath)
        if note is not None:
            self.session.record_edit(note)
        self.post_message(self.EditRecorded())

    class EditRecorded(Message):
        """The editor closed and what it saved is recorded."""

    def on_notes_pane_edit_recorded(self, message: EditRecorded) -> None:
        self.refresh_data()

    def action_new_note(self) -> None:
        folder = self._folder_at_cursor()

        def titled(title: str | None) -> None:
            if title:
                self._create(title, folder)

        self.app.push_screen(NewNoteScreen(folder), titled)

    def _folder_at_cursor(self) -> str:
        """The folder the tree cursor is in, so a new note lands beside what the user sees."""
        node = self.query_one(NotesTree).cursor_node
        entry = node.data if node is not None else None
        if entry is None:
            return ""
        if entry.kind == "folder":
            return entry.key
        if entry.kind == "note" and entry.key.startswith(NOTES_PREFIX):
            return entry.key[len(NOTES_PREFIX) :].rpartition("/")[0]
        return ""

    @work(thread=True, exclusive=True, exit_on_error=False, group="notes-create")
    def _create(self, title: str, folder: str = "") -> None:
        note = self.session.create_note(title, body=f"# {title}\n\n", folder=folder)
        self.post_message(self.NoteCreated(NoteView(note=note)))

    def on_notes_pane_note_created(self, message: NoteCreated) -> None:
        view = message.view
        self._show_note(view)
        notify_plain(self, f"Created {view.note.path}")
        self._edit(view.note.path)

    # -- versions ------------------------------------------------------------------------------

    def action_versions(self) -> None:
        if self.current is None:
            self.notify("Open a note first.", severity="warning")
            return
        self._list_versions(self.current.note)

    @work(thread=True, exclusive=True, exit_on_error=False, group="notes-versions")
    def _list_versions(self, note: Note) -> None:
        # An unversioned vault raises NotVersioned: one notification, by `LorePane`.
        versions = self.session.note_versions(note.path)
        if not get_current_worker().is_cancelled:
            self.post_message(self.VersionsListed(note, versions))

    def on_notes_pane_versions_listed(self, message: VersionsListed) -> None:
        note, versions = message.note, message.versions
        if not versions:
            notify_plain(self, f"No versions of {note.title} are committed yet.")
            return

        def chosen(rev: str | None) -> None:
            if rev:
                self._restore(note.path, rev)

        screen = NoteVersionsScreen(self.session, note.path, note.title, versions, _document_for)
        self.app.push_screen(screen, chosen)

    @work(thread=True, exclusive=True, exit_on_error=False, group="notes-restore")
    def _restore(self, path: str, rev: str) -> None:
        result = self.session.restore_note(path, rev)
        view = NoteView(note=result.note, backlinks=self._backlinks(result.note))
        self.post_message(self.NoteRestored(view, result))

    def on_notes_pane_note_restored(self, message: NoteRestored) -> None:
        result = message.result
        version = result.version
        title = result.note.title
        if not result.changed:
            notify_plain(self, f"{title} is already as it was in {version.short}.")
            return
        kept = ""
        if result.tombstone is not None:
            kept = f"; the text it replaced is in {self.session.relpath(result.tombstone)}"
        notify_plain(
            self,
            f"Restored {title} as it was in {version.short} ({version_time(version)}){kept}.",
            title="Versions",
        )
        self._show_note(message.view)
        self.refresh_data()
        self.post_message(VaultWritten(frozenset({"notes"}), origin=self))

    def palette_commands(self) -> list[PaletteCommand]:
        """What Ctrl+P offers while this pane is shown."""
        commands: list[PaletteCommand] = [
            ("New note", "Create a note and open it in $EDITOR", self.action_new_note),
            ("Search notes", "Full-text search as you type", self.action_search),
        ]
        if self.current is not None:
            title = self.current.note.title
            commands.insert(0, (f"Edit {title}", "Open it in $EDITOR", self.action_edit))
            commands.insert(
                1,
                (f"Versions of {title}", "Read its versions, restore one", self.action_versions),
            )
        return commands
