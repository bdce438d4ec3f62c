"""Themes read before, kept in the user's cache folder so the app starts without YAML.

The app must know its themes and the remembered choice before its first frame, and loading
the YAML library to read four small files was a noticeable part of that frame. After the
files are read, the themes, the problems found and the remembered theme go to
`themes.json` in the user's cache folder with the signature of what they came from: each
theme file's identity (inode, size, modification and change times, to the nanosecond) in the
built-in and the user's theme folders, the state file's, and this module's and the theme
reader's own source files. An app whose files have the same signature takes them from there;
a new, removed or edited file is a miss, and the files are read as before. A file changed
in the last two seconds is not cached, as its clock may not have ticked since.

The cache is derived data: written atomically, skipped where the folder cannot take it, and
a damaged or foreign one is a miss.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from lore.core import themes
from lore.core.json_decode import decode_json
from lore.core.storage import atomic_write_bytes, file_identity, read_regular_bytes, settled
from lore.core.themes import ThemeCatalogue, ThemeSpec
from lore.core.utf8_safe import json_bytes
from lore.paths import bundled_themes_dir, user_dirs

FORMAT = "lore-themes/1"
# Larger than any themes a person keeps; a bigger file is not ours.
MAX_CACHE_BYTES = 1_000_000


def signature(folders: list[Path], state_file: Path) -> list[Any]:
    """What the themes and the choice were read from; any change to it is a change."""
    return [
        FORMAT,
        [file_identity(Path(__file__)), file_identity(Path(themes.__file__))],
        [[file_identity(path) for path in themes.theme_files(folder)] for folder in folders],
        file_identity(state_file),
    ]


def _spec(data: dict[str, Any]) -> ThemeSpec:
    return ThemeSpec(
        name=str(data["name"]),
        colours={str(key): str(value) for key, value in data["colours"].items()},
        dark=bool(data["dark"]),
        variables={str(key): str(value) for key, value in data["variables"].items()},
        source=Path(data["source"]) if data.get("source") else None,
    )


def _read(path: Path, wanted: list[Any]) -> tuple[ThemeCatalogue, str | None] | None:
    try:
        data = read_regular_bytes(path, MAX_CACHE_BYTES)
        if len(data) > MAX_CACHE_BYTES:
            return None
        saved = decode_json(data)
        if not isinstance(saved, dict) or saved.get("signature") != wanted:
            return None
        catalogue = ThemeCatalogue(
            themes={spec.name: spec for spec in map(_spec, saved["themes"])},
            problems=[str(problem) for problem in saved["problems"]],
        )
        remembered = saved["remembered"]
        return catalogue, remembered if isinstance(remembered, str) and remembered else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _write(
    path: Path, wanted: list[Any], catalogue: ThemeCatalogue, remembered: str | None
) -> None:
    now = time.time_ns()
    files = [found for folder in wanted[2] for found in folder] + [wanted[3]]
    if not all(settled(found, now) for found in files):
        return
    saved = {
        "signature": wanted,
        "themes": [
            {
                "name": spec.name,
                "colours": spec.colours,
                "dark": spec.dark,
                "variables": spec.variables,
                "source": str(spec.source) if spec.source else None,
            }
            for spec in catalogue.themes.values()
        ],
        "problems": catalogue.problems,
        "remembered": remembered,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, json_bytes(saved))
    except OSError:
        # Read again next time; nothing is lost.
        pass


def themes_at_start(
    user_folder: Path | None = None,
    state_file: Path | None = None,
    cache_file: Path | None = None,
) -> tuple[ThemeCatalogue, str | None]:
    """Every theme, the problems with theme files, and the remembered choice of theme."""
    dirs = user_dirs()
    user_folder = user_folder or dirs.themes
    state_file = state_file or dirs.state_file
    cache_file = cache_file or dirs.cache / "themes.json"
    wanted = signature([bundled_themes_dir(), user_folder], state_file)
    cached = _read(cache_file, wanted)
    if cached is not None:
        return cached
    catalogue = themes.load_themes(user_folder)
    remembered = themes.remembered_theme(state_file)
    _write(cache_file, wanted, catalogue, remembered)
    return catalogue, remembered
