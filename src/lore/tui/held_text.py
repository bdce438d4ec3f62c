"""Text from documents in Textual widgets: shown as data, never read as content markup.

Textual reads a plain `str` given to a notification, a label, a border title or a palette
entry as markup, so a title such as `[/bold]` would fail and `![status](…)` would lose its
brackets. These helpers build `Content` instead, with hidden characters spelled out.
"""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.content import Content
from textual.fuzzy import Matcher
from textual.widget import Widget

from lore.core.public import visible


def plain_content(text: str, *, multiline: bool = False) -> Content:
    return Content(visible(text, multiline=multiline))


def notify_plain(target: App[Any] | Widget, message: str, **kwargs: Any) -> None:
    """`target.notify(message)` with the message taken as text, whatever it quotes."""
    target.notify(visible(message, multiline=True), markup=False, **kwargs)


def highlight_plain(matcher: Matcher, candidate: str) -> Content:
    """As `Matcher.highlight`, with `candidate` read as text rather than markup."""
    shown = visible(candidate, multiline=False)
    content = Content(shown)
    score, offsets = matcher.fuzzy_search.match(matcher.query, shown)
    if not score:
        return content
    for offset in offsets:
        if not shown[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content
