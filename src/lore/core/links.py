"""`[[Title]]` wiki links: finding them and rewriting them when a note is renamed.

A link inside an inline code span or a fenced code block is an example, not a link: it is
neither reported nor rewritten.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# [[Target]], [[Target#Section]], [[Target|alias]] and [[Target#Section|alias]]
WIKI_LINK = re.compile(r"\[\[([^\[\]|#\n]+)(#[^\[\]|\n]*)?(\|[^\[\]\n]*)?\]\]")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)
_BACKTICKS = re.compile(r"`+")


def link_key(title: str) -> str:
    """How link targets and titles are compared: case- and surrounding-space-insensitive."""
    return " ".join(title.split()).casefold()


def _fenced_blocks(text: str) -> list[tuple[int, int]]:
    blocks: list[tuple[int, int]] = []
    position = 0
    while True:
        opening = _FENCE_OPEN.search(text, position)
        if opening is None:
            return blocks
        fence = opening.group(1)
        line_end = text.find("\n", opening.end())
        if fence[0] == "`" and line_end != -1 and "`" in text[opening.end() : line_end]:
            # A backtick fence's info string has no backticks: this is an inline span.
            position = opening.end()
            continue
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M)
        found = None if line_end == -1 else closing.search(text, line_end + 1)
        end = len(text) if found is None else found.end()
        blocks.append((opening.start(), end))
        position = end


def code_ranges(text: str) -> list[tuple[int, int]]:
    """Sorted (start, end) offsets of fenced code blocks and inline code spans in `text`."""
    fences = _fenced_blocks(text)
    ranges = list(fences)
    segment_start = 0
    for fence_start, fence_end in [*fences, (len(text), len(text))]:
        ranges.extend(_code_spans(text, segment_start, fence_start))
        segment_start = fence_end
    ranges.sort()
    return ranges


def _code_spans(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    runs = list(_BACKTICKS.finditer(text, start, end))
    index = 0
    while index < len(runs):
        opening = runs[index]
        width = len(opening.group(0))
        for later in range(index + 1, len(runs)):
            if len(runs[later].group(0)) == width:
                yield opening.start(), runs[later].end()
                index = later
                break
        index += 1


def iter_links(text: str) -> Iterator[re.Match[str]]:
    """Every wiki link in `text` that is not inside code."""
    if "[[" not in text:
        return
    ranges = code_ranges(text) if "`" in text or "~~~" in text else []
    current = 0
    for match in WIKI_LINK.finditer(text):
        while current < len(ranges) and ranges[current][1] <= match.start():
            current += 1
        if current < len(ranges) and ranges[current][0] < match.end():
            continue
        yield match


def link_targets(body: str) -> list[str]:
    """Every distinct link target in order of first appearance."""
    seen: dict[str, str] = {}
    for match in iter_links(body):
        target = match.group(1).strip()
        if not target:
            continue
        seen.setdefault(link_key(target), target)
    return list(seen.values())


def rewrite_links(body: str, old_title: str, new_title: str) -> tuple[str, int]:
    """Point every link to `old_title` (with any #section or |alias) at `new_title`.

    Only the target of each link changes; every other character is kept as it was.
    """
    old_key = link_key(old_title)
    pieces: list[str] = []
    kept_until = 0
    count = 0
    for match in iter_links(body):
        if link_key(match.group(1)) != old_key:
            continue
        pieces.append(body[kept_until : match.start(1)])
        pieces.append(new_title)
        kept_until = match.end(1)
        count += 1
    pieces.append(body[kept_until:])
    return "".join(pieces), count
