"""Where Lore keeps things outside the vault, and how a vault is found.

`LORE_HOME` moves every per-user folder under one directory (tests point it at a temporary
folder); otherwise the XDG base-directory variables apply.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

CONFIG_FILE_NAME = "lore.yaml"
# The user's own defaults for every vault, in the XDG config folder; same schema as lore.yaml.
USER_CONFIG_FILE_NAME = "config.yaml"


class UserDirs(NamedTuple):
    config: Path
    data: Path
    cache: Path

    @property
    def user_config(self) -> Path:
        return self.config / USER_CONFIG_FILE_NAME

    @property
    def themes(self) -> Path:
        return self.data / "themes"

    @property
    def default_vault(self) -> Path:
        return self.data / "vault"

    @property
    def state_file(self) -> Path:
        """Small UI preferences (chosen theme, input history) that are not vault content."""
        return self.data / "state.yaml"


def _xdg(variable: str, fallback: str) -> Path:
    value = os.environ.get(variable)
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / fallback


def user_dirs() -> UserDirs:
    home = os.environ.get("LORE_HOME")
    if home:
        base = Path(home).expanduser()
        return UserDirs(config=base / "config", data=base / "data", cache=base / "cache")
    return UserDirs(
        config=_xdg("XDG_CONFIG_HOME", ".config") / "lore",
        data=_xdg("XDG_DATA_HOME", ".local/share") / "lore",
        cache=_xdg("XDG_CACHE_HOME", ".cache") / "lore",
    )


def find_vault_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` that holds a lore.yaml."""
    current = start.resolve()
    for folder in (current, *current.parents):
        if (folder / CONFIG_FILE_NAME).is_file():
            return folder
    return None


def discover_vault(explicit: str | os.PathLike[str] | None = None) -> tuple[Path, str]:
    """Pick the vault folder and say why it was picked.

    Order: an explicit path, then LORE_VAULT, then the nearest ancestor with a lore.yaml,
    then the per-user default vault.
    """
    if explicit:
        return Path(explicit).expanduser().resolve(), "--vault"
    from_env = os.environ.get("LORE_VAULT")
    if from_env:
        return Path(from_env).expanduser().resolve(), "LORE_VAULT"
    found = find_vault_root(Path.cwd())
    if found is not None:
        return found, f"{CONFIG_FILE_NAME} in an ancestor folder"
    return user_dirs().default_vault, "default vault"


def bundled_themes_dir() -> Path:
    """Built-in themes: inside the installed package, or the repository's themes/ folder."""
    packaged = Path(__file__).parent / "themes"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "themes"
