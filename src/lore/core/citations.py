"""Citations in an answer: `[n]` markers checked against the notes the pack delivered.

A model can cite a note it was never shown, or a number that does not exist. Such markers
are removed from the answer and counted, so a reader never follows a citation to nothing.
Code spans and fenced blocks are left alone: `items[0]` is not a citation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field

from lore.core.dataclass_lite import dataclass_lite

# `[1]`, `[1, 3]`, `[2; 4]`, `[1-3]`; not `x[1]` (indexing) and not `[1](url)` (a link).
_CITATION = re.compile(r"(?<![\w\[])\[(\s*\d{1,4}(?:\s*(?:[,;]|[-–])\s*\d{1,4})*\s*)\](?!\()")
_NUMBER_RANGE = re.compile(r"(\d{1,4})\s*[-–]\s*(\d{1,4})|(\d{1,4})")
_CODE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|`[^`\n]*`", re.DOTALL)
_MAX_RANGE = 50


@dataclass_lite
class CitationCheck:
    """The answer with invalid citations removed, and what was kept and removed."""

    text: str
    cited_numbers: list[int] = field(default_factory=list)
    cited_note_ids: list[str] = field(default_factory=list)
    kept: int = 0
    removed: int = 0
    removed_numbers: list[int] = field(default_factory=list)


def _numbers(group: str) -> list[int]:
    numbers: list[int] = []
    for match in _NUMBER_RANGE.finditer(group):
        if match.group(3):
            numbers.append(int(match.group(3)))
            continue
        low, high = int(match.group(1)), int(match.group(2))
        if low <= high and high - low <= _MAX_RANGE:
            numbers.extend(range(low, high + 1))
        else:
            numbers.extend([low, high])
    return numbers


def parse_citations(text: str) -> list[int]:
    """Every citation number in `text`, in order of first appearance."""
    return check_citations(text, None).cited_numbers


def check_citations(text: str, delivered: Mapping[int, str] | None) -> CitationCheck:
    """Keep citations whose number is in `delivered` (number -> note id); drop the rest.

    With `delivered=None` nothing is removed (parsing only).
    """
    result = CitationCheck(text=text)
    seen: set[int] = set()

    def rewrite(match: re.Match[str]) -> str:
        kept: list[int] = []
        for number in _numbers(match.group(1)):
            if delivered is None or number in delivered:
                kept.append(number)
                result.kept += 1
                if number not in seen:
                    seen.add(number)
                    result.cited_numbers.append(number)
                    if delivered is not None:
                        result.cited_note_ids.append(delivered[number])
            else:
                result.removed += 1
                result.removed_numbers.append(number)
        if not kept:
            return ""
        return "".join(f"[{number}]" for number in dict.fromkeys(kept))

    def prose(piece: str) -> str:
        removed_before = result.removed
        piece = _CITATION.sub(rewrite, piece)
        if result.removed != removed_before:
            # A removed marker can leave "word ." or a double space behind.
            piece = re.sub(r"[ \t]+([.,;:!?])", r"\1", piece)
            piece = re.sub(r"(?<=\S)[ \t]{2,}", " ", piece)
        return piece

    pieces: list[str] = []
    position = 0
    for code in _CODE.finditer(text):
        pieces.append(prose(text[position : code.start()]))
        pieces.append(code.group(0))
        position = code.end()
    pieces.append(prose(text[position:]))
    result.text = "".join(pieces)
    return result
