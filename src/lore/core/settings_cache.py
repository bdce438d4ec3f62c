"""Settings validated before, kept in the vault so the next command need not validate them.

Reading YAML and validating it with pydantic was most of a short command's start-up, and the
settings rarely change. After a successful validation the result is written to
`.lore/state/settings.json` with the signature of everything it came from: each settings
file's path and whole text (None where there is no file), the `LORE_SECTION__KEY`
variables and their values, and the identity of the schema's own source file. A command
whose sources have the same signature takes the settings from there; any edit, a new or
removed file, another variable or another version of Lore is a miss, and the files are
validated as before. Keyed on the text itself, a file is cached from its first command on,
even one written the moment before (a clock's tick could hide such an edit from its times),
and no edit, however soon after, goes unseen. A broken settings file is never cached, so its
error is reported on every run until it is fixed.

The cache is derived data: written atomically under the vault lock when the lock is free at
once (a command never waits for an ingest to finish just to save it), skipped in a read-only
vault, and a damaged or foreign one is a miss.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lore.core.derived_state import read_saved, save
from lore.core.storage import file_identity

# Larger than the settings and the texts of two settings files of the largest size read
# (lore.config.MAX_SETTINGS_BYTES); a bigger file is not ours.
MAX_CACHE_BYTES = 8_000_000
FORMAT = "lore-settings/2"


class SettingsCache:
    """The settings cache of one vault; `path` in its state folder, `lock` the vault lock."""

    def __init__(self, path: Path, lock: Path) -> None:
        self.path = path
        self.lock = lock

    def signature(
        self, schema: Path, files: list[tuple[Path, str | None]], variables: Mapping[str, str]
    ) -> list[Any]:
        """What the settings were made from: the schema, each settings file's path and text
        (None for no file) and the variables; any change to it is a change of settings."""
        return [
            FORMAT,
            file_identity(schema),
            [[str(path), text] for path, text in files],
            sorted([name, value] for name, value in variables.items()),
        ]

    def read(self, signature: list[Any]) -> dict[str, Any] | None:
        """The settings data saved for exactly this signature, or None."""
        saved = read_saved(self.path, MAX_CACHE_BYTES)
        if saved is None or saved.get("signature") != signature:
            return None
        settings = saved.get("settings")
        return settings if isinstance(settings, dict) else None

    def write(self, signature: list[Any], settings: dict[str, Any]) -> None:
        """Save validated settings; quietly does nothing where the vault cannot take it."""
        save(self.path, self.lock, {"signature": signature, "settings": settings})
