"""A versioned vault: every operation that writes is one git commit, every note restorable.

`Vault.operation(...)` wraps each write (recorder.py); git.py runs git with a clean
environment; the catalog (catalog.py) answers "the versions of this note" without walking
the whole history; versions.py reads the history for every face. Names are imported from
their module when first asked for, so opening a vault loads no more than it uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lore.core.versioning.git import GitFailed
    from lore.core.versioning.recorder import (
        GITIGNORE,
        Operation,
        VaultVersions,
        start_versioning,
    )
    from lore.core.versioning.versions import (
        LoggedOperation,
        NoteAtVersion,
        NoteVersion,
        NotVersioned,
        RestoreResult,
        UnknownRevision,
        describe_versioning,
        note_at,
        note_versions,
        recent_operations,
        record_edit,
        restore_note,
    )

_HOMES = {
    "GitFailed": "git",
    "GITIGNORE": "recorder",
    "Operation": "recorder",
    "VaultVersions": "recorder",
    "start_versioning": "recorder",
    **dict.fromkeys(
        [
            "LoggedOperation",
            "NoteAtVersion",
            "NotVersioned",
            "NoteVersion",
            "RestoreResult",
            "UnknownRevision",
            "describe_versioning",
            "note_at",
            "note_versions",
            "recent_operations",
            "record_edit",
            "restore_note",
        ],
        "versions",
    ),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


__all__ = [
    "GITIGNORE",
    "GitFailed",
    "LoggedOperation",
    "NotVersioned",
    "NoteAtVersion",
    "NoteVersion",
    "Operation",
    "RestoreResult",
    "UnknownRevision",
    "VaultVersions",
    "describe_versioning",
    "note_at",
    "note_versions",
    "recent_operations",
    "record_edit",
    "restore_note",
    "start_versioning",
]
