"""Markdown from documents as a Rich renderable, for the command line, the REPL and the app.

Apart from `lore.rich_display` because Rich's Markdown loads markdown-it, which only the
commands that render a note or an answer need; `lore.rich_display.SafeMarkdown` names this.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from markdown_it.token import Token
from rich.markdown import Markdown

from lore.core.public import linkable_uri, visible


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
