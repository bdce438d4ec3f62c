"""Text from documents as Rich renderables, for the command line, the REPL and the app alike.

Nothing built here is parsed as markup, so a claim reading `[/bold]` or `![status](…)` shows
as written; hidden characters are spelled out (see `lore.core.display_text`), and only http,
https and file URIs become terminal hyperlinks.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from markdown_it.token import Token
from rich.markdown import Markdown
from rich.style import Style, StyleType
from rich.text import Text

from lore.core.public import linkable_uri, visible, visible_with_offsets


def plain(text: str, style: StyleType = "", *, multiline: bool = False) -> Text:
    """`text` shown as data: no markup, hidden characters spelled out."""
    return Text(visible(text, multiline=multiline), style=style)


def highlighted(
    text: str,
    spans: Iterable[tuple[int, int]],
    span_style: StyleType,
    *,
    style: StyleType = "",
    multiline: bool = True,
) -> Text:
    """As `plain`, with the spans of the original `text` (search hits, flags) styled."""
    shown, starts = visible_with_offsets(text, multiline=multiline)
    out = Text(shown, style=style)
    last = len(text)
    for start, end in spans:
        start, end = min(max(start, 0), last), min(max(end, 0), last)
        if end > start:
            out.stylize(span_style, starts[start], starts[end])
    return out


def linked(label: str, uri: str, style: StyleType = "") -> Text:
    """`label` as a hyperlink to `uri` when that is an http, https or file URI, else plain."""
    text = plain(label, style)
    if linkable_uri(uri):
        text.stylize(Style(link=uri))
    return text


def _tokens(tokens: Iterable[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        if token.children:
            yield from _tokens(token.children)


class SafeMarkdown(Markdown):
    """Rich Markdown of text from documents: hidden characters spelled out, and links and
    images that do not point at an http, https or file URI shown without a hyperlink."""

    def __init__(self, markup: str, **kwargs: Any) -> None:
        super().__init__(visible(markup, multiline=True), **kwargs)
        for token in _tokens(self.parsed):
            for attribute in ("href", "src"):
                target = token.attrs.get(attribute)
                if target is not None and not linkable_uri(str(target)):
                    token.attrs[attribute] = ""
