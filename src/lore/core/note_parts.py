"""Long sections filed as parts: "Moby Dick (part 2 of 23)", linked to the parts beside them.

A section longer than PART_WORDS becomes several notes of at most that many words, cut
between paragraphs or sentences. Each part's title says which part it is, and its body opens
with a line linking the previous and the next part, so a person can read on from one to the
next in any Markdown editor. The line is navigation, not knowledge: search still finds it,
but evidence leaves it out.
"""

from __future__ import annotations

import re

# About three printed pages: long enough to hold an argument, short enough to read.
PART_WORDS = 1500
_PART = re.compile(r"^(?P<base>.*\S)\s+\(part (?P<number>\d+) of (?P<total>\d+)\)$")
NAVIGATION = re.compile(r"^Part \d+ of \d+ · ", re.MULTILINE)


def part_title(base: str, number: int, total: int) -> str:
    return f"{base} (part {number} of {total})"


def split_part(title: str) -> tuple[str, int, int] | None:
    """(base, number, total) of a part's title; None for a title that is not a part."""
    match = _PART.match(title)
    if match is None:
        return None
    number, total = int(match.group("number")), int(match.group("total"))
    if not 1 <= number <= total:
        return None
    return match.group("base"), number, total


def navigation(title: str) -> str:
    """The line that opens a part's body: where it sits, and links to its neighbours."""
    found = split_part(title)
    if found is None:
        return ""
    base, number, total = found
    pieces = [f"Part {number} of {total}"]
    if number > 1:
        pieces.append(f"previous: [[{part_title(base, number - 1, total)}]]")
    if number < total:
        pieces.append(f"next: [[{part_title(base, number + 1, total)}]]")
    return " · ".join(pieces)
