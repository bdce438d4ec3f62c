"""A versioned vault: every operation that writes is one git commit, every note restorable.

`Vault.operation(...)` wraps each write (recorder.py); git.py runs git with a clean
environment; the catalog (catalog.py) answers "the versions of this note" without walking
the whole history; versions.py reads the history for every face. Names are imported from
their module when first asked for, so opening a vault loads no more than it uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.lazy_names import lazy_names

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


__getattr__ = lazy_names(globals(), {name: f"{__name__}.{home}" for name, home in _HOMES.items()})


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
