"""`[[Title]]` wiki links: finding them and rewriting them when a note is renamed."""

from __future__ import annotations

import re

# [[Target]], [[Target#Section]], [[Target|alias]] and [[Target#Section|alias]]
WIKI_LINK = re.compile(r"\[\[([^\[\]|#\n]+)(#[^\[\]|\n]*)?(\|[^\[\]\n]*)?\]\]")


def link_key(title: str) -> str:
    """How link targets and titles are compared: case- and surrounding-space-insensitive."""
    return " ".join(title.split()).casefold()


def link_targets(body: str) -> list[str]:
    """Every distinct link target in order of first appearance."""
    seen: dict[str, str] = {}
    for match in WIKI_LINK.finditer(body):
        target = match.group(1).strip()
        if not target:
            continue
        seen.setdefault(link_key(target), target)
    return list(seen.values())


def rewrite_links(body: str, old_title: str, new_title: str) -> tuple[str, int]:
    """Point every link to `old_title` (with any #section or |alias) at `new_title`."""
    old_key = link_key(old_title)
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        if link_key(match.group(1)) != old_key:
            return match.group(0)
        count += 1
        return f"[[{new_title}{match.group(2) or ''}{match.group(3) or ''}]]"

    return WIKI_LINK.sub(replace, body), count
