"""Derived data kept in the vault's state folder: read if whole and ours, saved if the vault
takes it at once.

Caches such as the validated settings (lore.core.settings_cache) and the view of the memory
archive an ask reads (lore.core.memory.PackView) are JSON files that can always be made
again from what they derive from. A missing, damaged, oversized or foreign file is a miss;
saving is atomic, under the vault lock when it is free at once (a command never waits for
an ingest just to save a cache), and quietly skipped where the vault cannot take it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lore.core.json_decode import decode_json
from lore.core.lock import VaultLock
from lore.core.storage import atomic_write_bytes, read_regular_bytes
from lore.core.utf8_safe import json_bytes
from lore.errors import LoreError


def read_saved(path: Path, max_bytes: int) -> dict[str, Any] | None:
    """The JSON object saved at `path`, or None for none, a damaged one or one over
    `max_bytes` (then not ours)."""
    try:
        data = read_regular_bytes(path, max_bytes)
        if len(data) > max_bytes:
            return None
        saved = decode_json(data)
    except (OSError, ValueError):
        return None
    return saved if isinstance(saved, dict) else None


def save(path: Path, lock: Path, value: dict[str, Any]) -> None:
    """Save `value` at `path` atomically under the vault lock `lock`; nothing when the lock
    is busy or the disk refuses (the data is made again next time, nothing is lost)."""
    data = json_bytes(value)
    try:
        with VaultLock(lock, timeout_s=0).hold():
            path.parent.mkdir(exist_ok=True)
            atomic_write_bytes(path, data)
    except (LoreError, OSError):
        pass
