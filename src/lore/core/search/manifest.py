"""What the index knows about each note file: `(size, mtime_ns, skip reason)` by path.

Comparing this with a scan of notes/ is how the index notices edits made outside Lore. It is a
snapshot (`manifest.json`) plus a journal of later changes (`manifest.jsonl`): a one-note
write appends one line instead of rewriting ten thousand entries, and the journal is folded
into a new snapshot once it grows. Entries are absolute values, so replaying a journal over a
snapshot that already holds some of its lines gives the same result.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lore.core.storage import append_record, atomic_write_text, iter_records

SCHEMA_VERSION = 2
COMPACT_AFTER = 500

# [size, mtime_ns, skip reason or None]
Entry = list[Any]
Signature = tuple[tuple[int, int, int] | None, tuple[int, int, int] | None]


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


class Manifest:
    def __init__(self, folder: Path) -> None:
        self.snapshot_path = folder / "manifest.json"
        self.journal_path = folder / "manifest.jsonl"
        self.files: dict[str, Entry] = {}
        self._journal_lines = 0
        self._loaded: Signature | None = None

    def signature(self) -> Signature:
        """Changes whenever any process writes the manifest: one stat per file."""
        return (_stat(self.snapshot_path), _stat(self.journal_path))

    def load(self) -> bool:
        """Read the snapshot and replay the journal; False when there is no usable snapshot."""
        signature = self.signature()
        try:
            data = json.loads(self.snapshot_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        if not isinstance(data, dict) or data.get("schema") != SCHEMA_VERSION:
            return False
        files = data.get("files")
        if not isinstance(files, dict):
            return False
        lines = 0
        for record in iter_records(self.journal_path):
            path, entry = record.get("path"), record.get("entry")
            if not isinstance(path, str):
                continue
            lines += 1
            if isinstance(entry, list) and len(entry) == 3:
                files[path] = entry
            else:
                files.pop(path, None)
        self.files = files
        self._journal_lines = lines
        self._loaded = signature
        return True

    def reload_if_changed(self) -> None:
        """Another process may have written since we read it; re-reading is not free."""
        if self.signature() != self._loaded:
            self.load()

    def save(self) -> None:
        """A fresh snapshot of `files`, and an empty journal. The caller holds the vault lock."""
        data = {"schema": SCHEMA_VERSION, "files": self.files}
        # Compact JSON goes through the C encoder; an indented dump is many times slower.
        atomic_write_text(self.snapshot_path, json.dumps(data, separators=(",", ":")))
        try:
            os.unlink(self.journal_path)
        except FileNotFoundError:
            pass
        self._journal_lines = 0
        self._loaded = self.signature()

    def record(self, path: str, entry: Entry | None) -> None:
        """Note one file's new entry (None: gone). The caller holds the vault lock."""
        if entry is None:
            self.files.pop(path, None)
        else:
            self.files[path] = entry
        if self._journal_lines >= COMPACT_AFTER:
            self.save()
            return
        append_record(self.journal_path, {"path": path, "entry": entry})
        self._journal_lines += 1
        self._loaded = self.signature()
