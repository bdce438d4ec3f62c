"""Noticing what other processes changed in a vault, by polling file sizes and times.

A `lore ingest` in a second terminal, an editor saving a note, or a `lore ask` appending a
turn all show up here as kinds of change ("notes", "history", "metrics", "quarantine",
"memory", "audit") so an open app can refresh just the panes that show them. What this
process wrote itself is not reported back: it tells the watcher with `absorb(kinds)` or
`note_own_write(path)`.

Polling is cheap on a large vault. The three JSONL files are one `stat` each. The folder
trees (notes, memory, quarantine) are watched by their folders: every poll stats each folder,
and a folder whose mtime moved (a file was created, removed or renamed into place) is listed
again at once. That catches every atomic save, which is how Lore and most editors write. An
editor that rewrites a file in place changes no folder, so the files are also swept a slice
per poll: each file is looked at again within `SWEEP_POLLS` polls (about a minute at the
app's 2 s), whatever the size of the vault. The trade-off is that an in-place edit may take
that long to show, where a rename-into-place shows on the next poll.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from lore.core.history import HistoryStore
from lore.core.vault import NOTE_SUFFIXES, Vault

Signature = tuple[object, ...]
FILE_KINDS = ("history", "metrics", "audit")
TREE_KINDS = ("notes", "memory", "quarantine")
# Every watched file is looked at again within this many polls, however many there are.
SWEEP_POLLS = 30
# And at least this many per poll, so a small vault is swept in a few polls.
SWEEP_MIN_BATCH = 8

# (size, mtime_ns, inode): what a write changes, whether in place or by a rename.
_FileSignature = tuple[int, int, int]


def _stat(path: str) -> _FileSignature | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ino)


def _folder_mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


class _Tree:
    """The files of one folder tree, by folder, and the mtime of each folder.

    Hidden names are skipped (the atomic-write helper's temporary files are hidden), and
    `accept` picks the files that count, such as Markdown files under notes/.
    """

    def __init__(self, root: Path, accept: Callable[[str], bool]) -> None:
        self.root = os.path.abspath(root)
        self.accept = accept
        # folder -> {file path -> signature}; a folder may be here before it is listed,
        # when this process wrote a file into a folder it had just made.
        self.files: dict[str, dict[str, _FileSignature]] = {}
        self.folders: dict[str, int] = {}
        self.subfolders: dict[str, set[str]] = {}
        self.stats = 0
        self._sweep: list[str] = []
        self._cursor = 0

    # -- looking -----------------------------------------------------------------------------

    def scan(self) -> None:
        """Read the whole tree again: the base later polls compare with."""
        self.files, self.folders, self.subfolders = {}, {}, {}
        self._list(self.root)
        self._sweep, self._cursor = [], 0

    def poll(self) -> bool:
        """Whether any file changed: changed folders listed again, then one sweep slice."""
        self.stats = 0
        moved = []
        for folder, mtime in list(self.folders.items()):
            self.stats += 1
            if _folder_mtime(folder) != mtime:
                moved.append(folder)
        if not self.folders:
            self.stats += 1
            if _folder_mtime(self.root) is not None:
                moved.append(self.root)
        changed = False
        for folder in moved:
            if folder in self.folders or folder == self.root:
                changed = self._list(folder, recurse=False) or changed
        return self._sweep_slice() or changed

    def _list(self, top: str, *, recurse: bool = True) -> bool:
        """List `top` (and every folder below it not yet known, or all with `recurse`) and
        record what is there; whether any file differs from what was recorded."""
        changed = False
        stack = [top]
        while stack:
            folder = stack.pop()
            self.stats += 1
            mtime = _folder_mtime(folder)
            scanner = None
            if mtime is not None:
                # The mtime is taken before listing: a file added while listing moves it
                # again, so the next poll lists the folder once more instead of missing it.
                with contextlib.suppress(OSError):
                    scanner = os.scandir(folder)
            if mtime is None or scanner is None:
                changed = self._forget(folder) or changed
                continue
            self.folders[folder] = mtime
            found: dict[str, _FileSignature] = {}
            below: set[str] = set()
            with scanner:
                for entry in scanner:
                    if entry.name.startswith("."):
                        continue
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            below.add(entry.path)
                            continue
                    except OSError:
                        continue
                    if not self.accept(entry.name):
                        continue
                    self.stats += 1
                    signature = _stat(entry.path)
                    if signature is not None:
                        found[entry.path] = signature
            if found != self.files.get(folder, {}):
                changed = True
            self.files[folder] = found
            for gone in self.subfolders.get(folder, set()) - below:
                changed = self._forget(gone) or changed
            self.subfolders[folder] = below
            stack.extend(sub for sub in below if recurse or sub not in self.folders)
        return changed

    def _forget(self, top: str) -> bool:
        """Drop a folder that is gone and everything below it; whether it held a file."""
        inside = top + os.sep
        held = False
        for folder in [name for name in self.files if name == top or name.startswith(inside)]:
            held = bool(self.files.pop(folder)) or held
        for folder in [name for name in self.folders if name == top or name.startswith(inside)]:
            del self.folders[folder]
            self.subfolders.pop(folder, None)
        return held

    def _sweep_slice(self) -> bool:
        if self._cursor >= len(self._sweep):
            self._sweep = sorted(path for found in self.files.values() for path in found)
            self._cursor = 0
        batch = max(SWEEP_MIN_BATCH, math.ceil(len(self._sweep) / SWEEP_POLLS))
        changed = False
        for path in self._sweep[self._cursor : self._cursor + batch]:
            found = self.files.get(os.path.dirname(path))
            known = found.get(path) if found is not None else None
            if found is None or known is None:
                continue  # gone already, and reported when its folder was listed
            self.stats += 1
            current = _stat(path)
            if current != known:
                changed = True
                if current is None:
                    del found[path]
                else:
                    found[path] = current
        self._cursor += batch
        return changed

    # -- this process's own writes -----------------------------------------------------------

    def holds(self, path: str) -> bool:
        if not path.startswith(self.root + os.sep):
            return False
        parts = path[len(self.root) + 1 :].split(os.sep)
        return not any(part.startswith(".") for part in parts) and self.accept(parts[-1])

    def take_as_seen(self, path: str) -> None:
        """Make `path` as it is now the base, leaving the rest of the tree as last seen.

        Its folder's mtime is left alone on purpose: the next poll lists that folder again,
        finds this file as recorded, and still reports any other file changed beside it.
        """
        found = self.files.setdefault(os.path.dirname(path), {})
        current = _stat(path)
        if current is None:
            found.pop(path, None)
        else:
            found[path] = current


class VaultWatcher:
    """Call `poll()` every few seconds from a worker thread; it returns what changed since.

    `absorb`, `note_own_write` and `writing` may be called from any thread: they tell the
    watcher that this process made a change, so the next poll does not report it back.
    """

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self._history = HistoryStore(vault)
        layout = vault.layout
        self._file_paths = {
            "history": str(self._history.path),
            "metrics": str(layout.metrics),
            "audit": str(layout.audit),
        }
        self._trees = {
            "notes": _Tree(layout.notes, lambda name: name.endswith(NOTE_SUFFIXES)),
            "memory": _Tree(layout.memory, lambda name: True),
            "quarantine": _Tree(layout.quarantine, lambda name: True),
        }
        # The single files as last seen; None until the first poll sets the base.
        self._seen: dict[str, Signature] | None = None
        self._writing: dict[str, int] = {}
        self._guard = threading.Lock()
        self.last_poll_stats = 0

    def _file_signature(self, kind: str) -> Signature:
        if kind == "history":
            return self._history.signature() or ()
        return _stat(self._file_paths[kind]) or ()

    def poll(self) -> frozenset[str]:
        """Kinds changed since the last call (nothing on the first call, which sets the base).

        When note files changed, the index is brought in line before returning, so a pane that
        refreshes on "notes" already finds the new note in search. `last_poll_stats` is how
        many files and folders the poll looked at.
        """
        with self._guard:
            if self._seen is None:
                self._seen = {kind: self._file_signature(kind) for kind in FILE_KINDS}
                for tree in self._trees.values():
                    tree.scan()
                self.last_poll_stats = len(FILE_KINDS) + sum(
                    tree.stats for tree in self._trees.values()
                )
                return frozenset()
            changed = set()
            for kind in FILE_KINDS:
                current = self._file_signature(kind)
                if current != self._seen[kind]:
                    self._seen[kind] = current
                    changed.add(kind)
            for kind, tree in self._trees.items():
                if tree.poll():
                    changed.add(kind)
            self.last_poll_stats = len(FILE_KINDS) + sum(
                tree.stats for tree in self._trees.values()
            )
            changed.difference_update(self._writing)
        if "notes" in changed:
            self.vault.reconcile()
        return frozenset(changed)

    # -- this process's own writes -----------------------------------------------------------

    def absorb(self, kinds: Iterable[str]) -> None:
        """Take the files of `kinds` as they are now as seen: call it just after writing them.

        The next poll reports these kinds only if they change again. For the JSONL kinds that
        is exact. For a tree ("notes", "memory", "quarantine") the whole tree is read again
        (one stat per file) and taken as seen, so a change another process made to it since
        the last poll is taken too; `note_own_write` with the paths written avoids that.
        Unknown kinds are ignored. Before the first poll there is nothing to absorb.
        """
        with self._guard:
            if self._seen is None:
                return
            for kind in kinds:
                if kind in self._file_paths:
                    self._seen[kind] = self._file_signature(kind)
                elif kind in self._trees:
                    self._trees[kind].scan()

    def note_own_write(self, *paths: Path | str) -> None:
        """Take each file written (or deleted) by this process, as it is now, as seen.

        Call it after the write. The next poll does not report these files, but still
        reports any other change, including another write to these files after this call.
        A path the watcher does not watch is ignored.
        """
        with self._guard:
            if self._seen is None:
                return
            for given in paths:
                path = os.path.abspath(given)
                for kind, known in self._file_paths.items():
                    if os.path.abspath(known) == path:
                        self._seen[kind] = self._file_signature(kind)
                for tree in self._trees.values():
                    if tree.holds(path):
                        tree.take_as_seen(path)

    @contextlib.contextmanager
    def writing(self, kinds: Iterable[str]) -> Iterator[None]:
        """Around a write of `kinds` by this process: no poll reports them meanwhile, and
        they are absorbed at the end. A change another process makes to them in the
        meantime is not reported either."""
        wanted = frozenset(kinds)
        with self._guard:
            for kind in wanted:
                self._writing[kind] = self._writing.get(kind, 0) + 1
        try:
            yield
        finally:
            self.absorb(wanted)
            with self._guard:
                for kind in wanted:
                    self._writing[kind] -= 1
                    if not self._writing[kind]:
                        del self._writing[kind]
