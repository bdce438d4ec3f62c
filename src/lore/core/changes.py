"""Noticing what other processes changed in a vault, by polling file sizes and times.

A `lore ingest` in a second terminal, an editor saving a note, or a `lore ask` appending a
turn all show up here as kinds of change ("notes", "history", "metrics", "quarantine",
"memory", "audit") so an open app can refresh just the panes that show them.
"""

from __future__ import annotations

import os
from pathlib import Path

from lore.core.history import HistoryStore
from lore.core.vault import Vault

Signature = tuple[object, ...]


def _file_signature(path: Path) -> Signature:
    try:
        info = path.stat()
    except OSError:
        return ()
    return (info.st_size, info.st_mtime_ns, info.st_ino)


def _folder_signature(path: Path) -> Signature:
    """Names, sizes and times of the files in a folder tree (quarantine and memory are small)."""
    entries: list[tuple[str, int, int]] = []
    stack = [str(path)]
    while stack:
        folder = stack.pop()
        try:
            scanner = os.scandir(folder)
        except OSError:
            continue
        with scanner:
            for entry in scanner:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    else:
                        info = entry.stat(follow_symlinks=False)
                        entries.append((entry.path, info.st_size, info.st_mtime_ns))
                except OSError:
                    continue
    return tuple(sorted(entries))


class VaultWatcher:
    """Call `poll()` every few seconds from a worker thread; it returns what changed since."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self._history = HistoryStore(vault)
        self._seen: dict[str, Signature] | None = None

    def _signatures(self) -> dict[str, Signature]:
        layout = self.vault.layout
        return {
            "history": self._history.signature() or (),
            "metrics": _file_signature(layout.metrics),
            "audit": _file_signature(layout.audit),
            "quarantine": _folder_signature(layout.quarantine),
            "memory": _folder_signature(layout.memory),
            "notes": tuple(self.vault.scan_note_files()),
        }

    def poll(self) -> frozenset[str]:
        """Kinds changed since the last call (nothing on the first call, which sets the base).

        When note files changed, the index is brought in line before returning, so a pane that
        refreshes on "notes" already finds the new note in search.
        """
        current = self._signatures()
        previous, self._seen = self._seen, current
        if previous is None:
            return frozenset()
        changed = frozenset(kind for kind, value in current.items() if previous.get(kind) != value)
        if "notes" in changed:
            self.vault.reconcile()
        return changed
