"""The Notes pane's tree: every note by folder and by tag, filled in as branches open.

A vault may hold tens of thousands of notes, so only the branches a user opens get nodes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from lore.core.public import visible
from lore.rich_display import plain

NOTES_PREFIX = "notes/"
EntryKind = Literal["folder", "tag", "note", "root"]


@dataclass(frozen=True)
class TreeEntry:
    """What a tree node stands for: the root, a folder, a tag or a note."""

    kind: EntryKind
    key: str  # folder path under notes/, tag name, or note path


@dataclass
class NoteListing:
    """A note as the tree lists it: path, title, trust and status."""

    path: str
    title: str
    trust: str = ""
    status: str = "active"


@dataclass
class NotesCatalog:
    """The notes grouped for the tree, built off the UI thread from the index's documents."""

    folders: dict[str, list[str]] = field(default_factory=dict)  # folder -> child folders
    notes_in: dict[str, list[NoteListing]] = field(default_factory=dict)  # folder -> notes
    tags: dict[str, list[NoteListing]] = field(default_factory=dict)
    count: int = 0

    @classmethod
    def from_documents(cls, documents: Iterable[Mapping[str, Any]]) -> NotesCatalog:
        notes_in: dict[str, list[NoteListing]] = defaultdict(list)
        folders: dict[str, set[str]] = defaultdict(set)
        tags: dict[str, list[NoteListing]] = defaultdict(list)
        count = 0
        for doc in documents:
            path = str(doc.get("path", ""))
            if not path:
                continue
            count += 1
            listing = NoteListing(
                path=path,
                title=str(doc.get("title") or path),
                trust=str(doc.get("trust") or ""),
                status=str(doc.get("status") or "active"),
            )
            inside = path[len(NOTES_PREFIX) :] if path.startswith(NOTES_PREFIX) else path
            folder = inside.rpartition("/")[0]
            notes_in[folder].append(listing)
            # Register every ancestor so empty-of-notes folders still lead somewhere.
            while folder:
                parent = folder.rpartition("/")[0]
                folders[parent].add(folder)
                folder = parent
            for tag in str(doc.get("tags") or "").split(","):
                if tag:
                    tags[tag].append(listing)
        by_title = lambda item: (item.title.casefold(), item.path)  # noqa: E731
        return cls(
            folders={key: sorted(value, key=str.casefold) for key, value in folders.items()},
            notes_in={key: sorted(value, key=by_title) for key, value in notes_in.items()},
            tags={key: sorted(value, key=by_title) for key, value in sorted(tags.items())},
            count=count,
        )


UNTRUSTED_MARK = " ·untrusted"
# Below this many cells a cut title says too little; the tree's own cropping is left to it.
NARROWEST_FIT = 12


def fit_title(title: str, room: int) -> str:
    """`title` in at most `room` cells, cut in the middle when it is longer.

    Notes cut from one document share its title and differ only at the end ("Guide to the
    Major Meteor Showers — How to watch"), so the end is kept and most of the cut falls in
    the shared start.
    """
    if room < NARROWEST_FIT or cell_len(title) <= room:
        return title
    head_room = (room - 1) * 2 // 5
    head = _fitting(title, head_room)
    tail = _fitting(title[::-1], room - 1 - head_room)[::-1]
    return f"{head.rstrip()}…{tail.lstrip()}"


def _fitting(text: str, room: int) -> str:
    """The longest start of `text` that fits in `room` cells."""
    used = 0
    for index, character in enumerate(text):
        used += cell_len(character)
        if used > room:
            return text[:index]
    return text


def _note_label(listing: NoteListing, room: int = 0) -> Text:
    untrusted = listing.trust == "untrusted"
    if room and untrusted:
        room -= cell_len(UNTRUSTED_MARK)
    title = visible(listing.title, multiline=False)
    label = Text(fit_title(title, room) if room else title)
    if listing.status == "superseded":
        label.stylize("strike dim")
    if untrusted:
        label.append(UNTRUSTED_MARK, style="dim")
    return label


class NotesTree(Tree[TreeEntry]):
    """Folders and tags as two branches; nodes are created when a branch is expanded."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("Notes", data=TreeEntry("root", ""), **kwargs)
        self.show_root = False
        self.catalog = NotesCatalog()
        self._filled: set[int] = set()  # ids of nodes whose children exist
        self._listings: dict[str, NoteListing] = {}  # the notes shown, by path
        self._fitted_width = 0

    def show_catalog(self, catalog: NotesCatalog) -> None:
        """Replace the tree's content, keeping the branches the user had open."""
        was_open = self._open_entries()
        cursor = self.cursor_node.data if self.cursor_node is not None else None
        self.catalog = catalog
        self._filled.clear()
        self._listings.clear()
        self.clear()
        folders = self.root.add(
            Text.assemble("Folders ", (f"({catalog.count})", "dim")),
            data=TreeEntry("folder", ""),
        )
        self.root.add(
            Text.assemble("Tags ", (f"({len(catalog.tags)})", "dim")),
            data=TreeEntry("tag", ""),
        )
        folders.expand()
        self._fill(folders)
        self._reopen(self.root, was_open)
        if cursor is not None:
            self._move_to(cursor)

    def _open_entries(self) -> set[TreeEntry]:
        opened: set[TreeEntry] = set()
        stack: list[TreeNode[TreeEntry]] = list(self.root.children)
        while stack:
            node = stack.pop()
            if node.is_expanded and node.data is not None:
                opened.add(node.data)
                stack.extend(node.children)
        return opened

    def _reopen(self, node: TreeNode[TreeEntry], was_open: set[TreeEntry]) -> None:
        for child in node.children:
            if child.data in was_open:
                self._fill(child)
                child.expand()
                self._reopen(child, was_open)

    def _move_to(self, entry: TreeEntry) -> None:
        stack: list[TreeNode[TreeEntry]] = list(self.root.children)
        while stack:
            node = stack.pop(0)
            if node.data == entry:
                # Lines are laid out on the next refresh; until then the node has none.
                self.call_after_refresh(self.move_cursor, node)
                return
            if node.is_expanded:
                stack.extend(node.children)

    def reveal(self, path: str) -> None:
        """Open the folders down to the note at `path` and put the cursor on it."""
        inside = path[len(NOTES_PREFIX) :] if path.startswith(NOTES_PREFIX) else path
        parts = inside.split("/")[:-1]
        if not self.root.children:
            return
        node = self.root.children[0]  # Folders
        for depth in range(len(parts) + 1):
            self._fill(node)
            node.expand()
            if depth == len(parts):
                break
            folder = "/".join(parts[: depth + 1])
            child = next((c for c in node.children if c.data == TreeEntry("folder", folder)), None)
            if child is None:
                return
            node = child
        leaf = next((c for c in node.children if c.data == TreeEntry("note", path)), None)
        if leaf is not None:
            self.call_after_refresh(self.move_cursor, leaf)

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[TreeEntry]) -> None:
        self._fill(event.node)

    def _label_room(self, parent: TreeNode[TreeEntry]) -> int:
        """Cells left for the label of a node under `parent`, after the guides (0: unknown)."""
        width = self._label_width()
        if width <= 0:
            return 0
        levels = 0
        node: TreeNode[TreeEntry] | None = parent
        while node is not None and node is not self.root:
            levels += 1
            node = node.parent
        return max(0, width - self.guide_depth * levels)

    def _label_width(self) -> int:
        # The scrollbar is counted in even before it shows: filling a branch is what makes
        # the tree overflow, and the labels are cut before that.
        width = self.scrollable_content_region.width
        if width <= 0:
            # Hidden behind another pane, the tree has no width: it most likely comes back
            # at the one it had, and a resize cuts the labels again if not.
            return self._fitted_width
        if not self.show_vertical_scrollbar:
            width -= self.styles.scrollbar_size_vertical
        return width

    def _add_note(self, node: TreeNode[TreeEntry], listing: NoteListing, room: int) -> None:
        self._listings[listing.path] = listing
        if room <= 0:
            # Filled before the tree was ever laid out: the first resize cuts the label.
            self._fitted_width = 0
        node.add_leaf(_note_label(listing, room), data=TreeEntry("note", listing.path))

    def on_resize(self, event: events.Resize) -> None:
        # Titles cut to the old width are cut again to the new one.
        width = self._label_width()
        if width == self._fitted_width:
            return
        self._fitted_width = width
        stack: list[TreeNode[TreeEntry]] = list(self.root.children)
        while stack:
            node = stack.pop()
            stack.extend(node.children)
            entry = node.data
            if entry is not None and entry.kind == "note" and node.parent is not None:
                listing = self._listings.get(entry.key)
                if listing is not None:
                    node.set_label(_note_label(listing, self._label_room(node.parent)))

    def _fill(self, node: TreeNode[TreeEntry]) -> None:
        entry = node.data
        if entry is None or node.id in self._filled:
            return
        self._filled.add(node.id)
        room = self._label_room(node)
        if entry.kind == "folder":
            for folder in self.catalog.folders.get(entry.key, []):
                name = folder.rpartition("/")[2]
                node.add(plain(f"{name}/"), data=TreeEntry("folder", folder))
            for listing in self.catalog.notes_in.get(entry.key, []):
                self._add_note(node, listing, room)
        elif entry.kind == "tag" and entry.key == "":
            for tag, listings in self.catalog.tags.items():
                node.add(
                    Text.assemble(plain(f"#{tag} "), (f"({len(listings)})", "dim")),
                    data=TreeEntry("tag", tag),
                )
        elif entry.kind == "tag":
            for listing in self.catalog.tags.get(entry.key, []):
                self._add_note(node, listing, room)
