"""F1: the focused pane's help, plus the keys that work everywhere.

Help texts name keys as written for people, marked as code or bold (`p`, **F2**). A key
remapped under `keymap:` in lore.yaml is named as remapped: each mention of a binding's
default key is rewritten to its key from the keymap, so the help never names a key that no
longer does what it says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.keys import format_key
from textual.screen import ModalScreen
from textual.widgets import Markdown

# How named keys are written in help text; other keys are their character (`/`, `P`) or
# capitalised (F2, Ctrl+L).
KEY_NAMES = {
    "escape": "Esc",
    "enter": "Enter",
    "space": "Space",
    "tab": "Tab",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "home": "Home",
    "end": "End",
    "backspace": "Backspace",
    "delete": "Delete",
}
# A key named in help: between backticks or double asterisks, on one line.
_MARKED_KEY = re.compile(r"(`|\*\*)([^`*\n]{1,24}?)\1")


def key_name(key: str) -> str:
    """One key as help text writes it: "f2" is "F2", "ctrl+l" is "Ctrl+L", "p" stays "p"."""
    *modifiers, base = key.strip().split("+")
    if base in KEY_NAMES:
        shown = KEY_NAMES[base]
    else:
        character = format_key(base)
        if len(character) != 1:
            shown = base.capitalize()
        else:
            # Alone, a letter's case is part of the key (`p` and `P` differ); after Ctrl it is not.
            shown = character.upper() if modifiers else character
    return "+".join([*(modifier.capitalize() for modifier in modifiers), shown])


def _spellings(key: str) -> set[str]:
    """The ways help text may name `key`: as people write it, as bound, as the footer shows."""
    *modifiers, base = key.strip().split("+")
    footer = format_key(base)
    if modifiers == ["ctrl"]:
        footer = f"^{footer}"
    elif modifiers:
        footer = "+".join([*modifiers, footer])
    return {key_name(key), key.strip(), footer}


def node_bindings(nodes: Iterable[DOMNode]) -> Iterator[Binding]:
    """The bindings with an id that the nodes' classes declare, as declared (not remapped)."""
    seen: set[type[DOMNode]] = set()
    for node in nodes:
        for cls in type(node).__mro__:
            if cls in seen:
                continue
            seen.add(cls)
            for binding in cls.__dict__.get("BINDINGS", []):
                if isinstance(binding, Binding) and binding.id:
                    yield binding


def keys_as_mapped(markdown: str, bindings: Iterable[Binding], keymap: Mapping[str, str]) -> str:
    """`markdown` with each key it names that `keymap` moved named by its new key.

    A key two bindings share is rewritten only when the keymap moves both to the same key,
    since the text may mean either.
    """
    if not keymap:
        return markdown
    moved_to: dict[str, set[str | None]] = {}
    for binding in bindings:
        keys = keymap.get(binding.id or "")
        new_name = key_name(keys.split(",")[0]) if keys and keys.strip() else None
        for key in binding.key.split(","):
            for spelling in _spellings(key):
                moved_to.setdefault(spelling, set()).add(new_name)
    renamed = {
        spelling: next(iter(names))
        for spelling, names in moved_to.items()
        if len(names) == 1 and None not in names
    }
    if not renamed:
        return markdown

    def rename(match: re.Match[str]) -> str:
        mark, key = match.group(1), match.group(2)
        new_name = renamed.get(key)
        return match.group(0) if new_name is None else f"{mark}{new_name}{mark}"

    return _MARKED_KEY.sub(rename, markdown)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,q", "close", "Close", id="help.close", tooltip="Close the help"),
    ]

    def __init__(self, markdown: str) -> None:
        super().__init__()
        self.markdown = markdown

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Markdown(self.markdown)

    def action_close(self) -> None:
        self.dismiss(None)
