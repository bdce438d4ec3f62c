"""Colour themes as YAML files, and the remembered choice of theme.

A theme file names Textual's base colours (primary, background, …) plus Lore's own variables
(trust levels, held claims, citations). This module only reads and checks the files; the app
turns a `ThemeSpec` into a Textual theme. Built-in themes come from the package's `themes/`
folder, user themes from the data folder; a user theme with a built-in name replaces it.
"""

from __future__ import annotations

import re
from dataclasses import field
from pathlib import Path
from typing import Any

from lore.config import load_yaml_file
from lore.core.dataclass_lite import dataclass_own_init
from lore.core.storage import atomic_write_text
from lore.errors import ConfigError
from lore.paths import bundled_themes_dir, user_dirs

DEFAULT_THEME = "lore-dark"
BASE_COLOURS = (
    "primary",
    "secondary",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
    "warning",
    "error",
    "success",
)
# Lore's own colours: every stylesheet rule that shows trust, a held claim or a citation uses
# one of these, so a theme file can change them.
LORE_VARIABLES = ("trust-trusted", "trust-semi", "trust-untrusted", "held", "citation")

_HEX = re.compile(r"^#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$")
_FUNCTION = re.compile(r"^(?:rgb|rgba|hsl|hsla)\([\d\s.,%]+\)$")
_NAMED = re.compile(r"^[a-z][a-z_]*$")
_VARIABLE_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


@dataclass_own_init(frozen=True)
class ThemeSpec:
    """A checked theme file: its base colours, whether it is dark, Lore's own variables, and the
    file it was read from."""

    name: str
    colours: dict[str, str]
    dark: bool = True
    variables: dict[str, str] = field(default_factory=dict)
    source: Path | None = None


@dataclass_own_init
class ThemeCatalogue:
    """Every theme found, plus one line per file that could not be used."""

    themes: dict[str, ThemeSpec] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _colour(value: Any, where: str) -> str:
    text = str(value).strip() if isinstance(value, str | int) else ""
    if not (_HEX.match(text) or _FUNCTION.match(text) or _NAMED.match(text)):
        raise ConfigError(
            f"{where}: expected a colour like #1e2030 or rgb(30, 32, 48), got {value!r}"
        )
    return text


def parse_theme(data: Any, source: Path) -> ThemeSpec:
    """Check one theme file's contents; every problem is one ConfigError line."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a theme is a mapping of colours")
    known = {"name", "dark", "variables", *BASE_COLOURS}
    unknown = sorted(str(key) for key in data if key not in known)
    if unknown:
        raise ConfigError(f"{source}: unknown key {unknown[0]!r}")
    name = data.get("name") or source.stem
    if not isinstance(name, str) or not _VARIABLE_NAME.match(name):
        raise ConfigError(f"{source}: name: use lower-case letters, digits and dashes")
    if "primary" not in data:
        raise ConfigError(f"{source}: primary: a theme needs at least a primary colour")
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ConfigError(f"{source}: dark: expected true or false, got {dark!r}")
    colours = {
        key: _colour(data[key], f"{source}: {key}")
        for key in BASE_COLOURS
        if data.get(key) is not None
    }
    raw_variables = data.get("variables") or {}
    if not isinstance(raw_variables, dict):
        raise ConfigError(f"{source}: variables: expected a mapping of name to colour")
    variables = {}
    for key, value in raw_variables.items():
        if not isinstance(key, str) or not _VARIABLE_NAME.match(key):
            raise ConfigError(f"{source}: variables: {key!r} is not a variable name")
        variables[key] = _colour(value, f"{source}: variables.{key}")
    return ThemeSpec(name=name, colours=colours, dark=dark, variables=variables, source=source)


def load_theme_file(path: Path) -> ThemeSpec:
    return parse_theme(load_yaml_file(path), path)


def theme_files(folder: Path) -> list[Path]:
    try:
        return sorted(
            path for path in folder.iterdir() if path.suffix in (".yaml", ".yml") and path.is_file()
        )
    except OSError:
        return []


def load_themes(user_folder: Path | None = None) -> ThemeCatalogue:
    """Built-in themes, then the user's; a broken file is reported and skipped."""
    catalogue = ThemeCatalogue()
    folders = [bundled_themes_dir(), user_folder or user_dirs().themes]
    for folder in folders:
        for path in theme_files(folder):
            try:
                spec = load_theme_file(path)
            except ConfigError as exc:
                catalogue.problems.append(str(exc))
                continue
            catalogue.themes[spec.name] = spec
    return catalogue


# -- the remembered choice ---------------------------------------------------------------


def _read_state(path: Path) -> dict[str, Any]:
    try:
        data = load_yaml_file(path)
    except ConfigError:
        return {}
    return data if isinstance(data, dict) else {}


def remembered_theme(state_file: Path | None = None) -> str | None:
    value = _read_state(state_file or user_dirs().state_file).get("theme")
    return value if isinstance(value, str) and value else None


def remember_theme(name: str, state_file: Path | None = None) -> None:
    """Persist the chosen theme beside any other UI preferences already in the state file."""
    import yaml

    path = state_file or user_dirs().state_file
    state = _read_state(path)
    state["theme"] = name
    atomic_write_text(path, yaml.safe_dump(state, sort_keys=True, allow_unicode=True))
