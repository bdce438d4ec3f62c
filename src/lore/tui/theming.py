"""Lore's YAML themes as Textual themes, and the fallbacks for Lore's own colour variables."""

from __future__ import annotations

from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

from lore.core.public import LORE_VARIABLES, ThemeCatalogue, ThemeSpec, load_themes
from lore.errors import ConfigError


def to_textual_theme(spec: ThemeSpec) -> Theme:
    """A Textual theme; colours Textual cannot parse are one ConfigError naming the file."""
    where = spec.source or spec.name
    for key, value in {**spec.colours, **spec.variables}.items():
        try:
            Color.parse(value)
        except ColorParseError:
            raise ConfigError(f"{where}: {key}: {value!r} is not a colour") from None
    colours: dict[str, Any] = dict(spec.colours)
    return Theme(name=spec.name, dark=spec.dark, variables=dict(spec.variables), **colours)


def lore_variable_defaults(theme: Theme) -> dict[str, str]:
    """Lore's colours for a theme that does not set them (any Textual theme, say)."""
    defaults = {
        "trust-trusted": theme.success or "green",
        "trust-semi": theme.warning or "yellow",
        "trust-untrusted": theme.error or "red",
        "held": theme.warning or "yellow",
        "citation": theme.accent or theme.primary,
    }
    assert set(defaults) == set(LORE_VARIABLES)
    return defaults


def load_textual_themes(catalogue: ThemeCatalogue | None = None) -> tuple[list[Theme], list[str]]:
    """Every usable theme of `catalogue` (read from the theme files when not given), and one
    line per theme file that could not be used."""
    catalogue = catalogue or load_themes()
    themes: list[Theme] = []
    problems = list(catalogue.problems)
    for spec in catalogue.themes.values():
        try:
            themes.append(to_textual_theme(spec))
        except ConfigError as exc:
            problems.append(str(exc))
    return themes, problems
