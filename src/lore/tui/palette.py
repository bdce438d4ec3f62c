"""Ctrl+P: app commands, panes, themes and notes, offered only where they apply now."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from lore.tui.held_text import highlight_plain, plain_content

if TYPE_CHECKING:
    from lore.tui.app import LoreApp

PaletteCommand = tuple[str, str, Callable[[], Any]]


class LoreCommands(Provider):
    """One flat list of what can be done right now; notes are read in a thread at startup."""

    # Until the notes are read (or if they cannot be), the palette offers everything else.
    _note_titles: tuple[str, ...] = ()

    async def startup(self) -> None:
        app = self.lore_app
        try:
            documents = await asyncio.to_thread(app.note_documents)
        except Exception:
            # The palette still offers everything else; notes appear once the index opens.
            documents = []
        self._note_titles = tuple(sorted({doc["title"] for doc in documents if doc.get("title")}))

    @property
    def lore_app(self) -> LoreApp:
        return cast("LoreApp", self.app)

    def _commands(self) -> list[PaletteCommand]:
        app = self.lore_app
        commands: list[PaletteCommand] = []
        for pane_id, label in app.PANE_LABELS.items():
            if pane_id != app.active_pane:
                commands.append(
                    (f"Go to {label}", f"Show the {label} pane", partial(app.show_pane, pane_id))
                )
        commands.append(("Help", "Keys and help for the focused pane", app.action_help))
        commands.extend(app.pane_commands())
        for name in sorted(app.lore_theme_names()):
            if name != app.theme:
                commands.append(
                    (
                        f"Theme: {name}",
                        "Switch to this theme and remember it",
                        partial(app.apply_theme, name),
                    )
                )
        commands.append(("Quit", "Leave Lore", app.exit))
        return commands

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            # Names can quote a note title or a source: content, never markup.
            yield DiscoveryHit(plain_content(name), callback, text=name, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(
                    score, highlight_plain(matcher, name), callback, text=name, help=help_text
                )
        app = self.lore_app
        for title in self._note_titles:
            label = f"Note: {title}"
            score = matcher.match(label)
            if score > 0:
                yield Hit(
                    score,
                    highlight_plain(matcher, label),
                    partial(app.open_note, title),
                    text=label,
                    help="Open this note in the Notes pane",
                )
