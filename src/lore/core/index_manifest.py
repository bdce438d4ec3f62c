"""What the index knows about each note file: its size, mtime, skip reason and card, by path.

Comparing this with a scan of notes/ is how the index notices edits made outside Lore. It is a
snapshot (`manifest.json`) plus a journal of later changes (`manifest.jsonl`): a one-note
write appends one line instead of rewriting ten thousand entries, and the journal is folded
into a new snapshot once it grows. Entries are absolute values, so replaying a journal over a
snapshot that already holds some of its lines gives the same result.

An entry also holds the note's card, what a list of notes shows of it. So when nothing
changed on disk since the manifest was written, the notes are listed from it alone, without
opening the index or importing whoosh. This module lives outside the search package for that
reason: that package's first import brings in whoosh.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lore.core.json_decode import decode_json
from lore.core.storage import append_record, atomic_write_text, iter_records

SCHEMA_VERSION = 3
# Schema 2 is schema 3 without cards: its entries get theirs when the index is next opened
# for writing, instead of the whole index being rebuilt.
READABLE_SCHEMAS = (2, 3)
COMPACT_AFTER = 500

# What a card holds, in order; with the path, the stored fields of a note in the index.
CARD_FIELDS = ("id", "title", "tags", "updated", "trust", "status")

# [size, mtime_ns, skip reason or None, card or None]; a card is None for a note not indexed.
Entry = list[Any]
# (path, size, mtime_ns), as a scan of the notes folder lists each note file.
FileStat = tuple[str, int, int]
Signature = tuple[tuple[int, int, int] | None, tuple[int, int, int] | None]
_CARDED_ENTRY_LENGTH = 4


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def card_of(document: dict[str, Any]) -> list[Any]:
    """The card of a note from its stored fields."""
    return [document[name] for name in CARD_FIELDS]


def _usable_entry(entry: Any) -> bool:
    return isinstance(entry, list) and len(entry) in (3, _CARDED_ENTRY_LENGTH)


class FileChanges:
    """How a scan of the notes folder differs from the manifest."""

    __slots__ = ("added", "changed", "removed", "stats")

    def __init__(self) -> None:
        self.added: list[str] = []
        self.changed: list[str] = []
        self.removed: list[str] = []
        # (size, mtime_ns) of each file added or changed.
        self.stats: dict[str, tuple[int, int]] = {}

    @property
    def touched(self) -> int:
        return len(self.added) + len(self.changed) + len(self.removed)


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
            data = decode_json(self.snapshot_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        if not isinstance(data, dict) or data.get("schema") not in READABLE_SCHEMAS:
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
            if _usable_entry(entry):
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

    def compare(self, stats: list[FileStat]) -> FileChanges:
        """What changed on disk since the manifest was written: runs on every open, so lean."""
        changes = FileChanges()
        known_files = self.files
        pending = changes.stats
        for relpath, size, mtime in stats:
            known = known_files.get(relpath)
            if known is None:
                changes.added.append(relpath)
            elif known[0] == size and known[1] == mtime:
                continue
            else:
                changes.changed.append(relpath)
            pending[relpath] = (size, mtime)
        if len(known_files) > len(stats) - len(changes.added):
            on_disk = {relpath for relpath, _, _ in stats}
            changes.removed = [path for path in known_files if path not in on_disk]
        return changes

    @property
    def has_every_card(self) -> bool:
        """False for a manifest written before entries held cards, until they are added."""
        return all(len(entry) == _CARDED_ENTRY_LENGTH for entry in self.files.values())

    def listing(self) -> list[dict[str, Any]] | None:
        """The stored fields of every indexed note, as the index holds them; None when some
        entry has no card yet."""
        documents = []
        for path, entry in self.files.items():
            if len(entry) != _CARDED_ENTRY_LENGTH:
                return None
            card = entry[3]
            if card is not None:
                # whoosh stores no field whose value is None.
                document = {
                    name: value
                    for name, value in zip(CARD_FIELDS, card, strict=True)
                    if value is not None
                }
                document["path"] = path
                documents.append(document)
        return documents

    def add_cards(self, documents: Iterable[dict[str, Any]]) -> None:
        """Give each entry without a card the card of its note in `documents`, the index's
        stored fields, or None when the index lacks the note."""
        cards = {document["path"]: card_of(document) for document in documents}
        for path, entry in self.files.items():
            if len(entry) != _CARDED_ENTRY_LENGTH:
                entry.append(None if entry[2] else cards.get(path))

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
