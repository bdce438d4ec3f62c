"""Text from documents as Rich renderables, for the command line, the REPL and the app alike.

Nothing built here is parsed as markup, so a claim reading `[/bold]` or `![status](…)` shows
as written; hidden characters are spelled out (see `lore.core.display_text`), and only http,
https and file URIs become terminal hyperlinks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lore.core.public import linkable_uri, visible, visible_with_offsets

if TYPE_CHECKING:
    from rich.style import StyleType
    from rich.text import Text

    from lore.rich_markdown import SafeMarkdown as SafeMarkdown

# Rich is imported by the functions, not with this module: every command module imports this
# one to build the parser, and `lore --help` draws nothing. Markdown (and markdown-it) is
# loaded only where a note or an answer is rendered.


def plain(text: str, style: StyleType = "", *, multiline: bool = False) -> Text:
    """`text` shown as data: no markup, hidden characters spelled out."""
    from rich.text import Text

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
    from rich.text import Text

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
    from rich.style import Style

    text = plain(label, style)
    if linkable_uri(uri):
        text.stylize(Style(link=uri))
    return text


def __getattr__(name: str) -> Any:
    if name == "SafeMarkdown":
        from lore.rich_markdown import SafeMarkdown as SafeMarkdown

        return SafeMarkdown
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
