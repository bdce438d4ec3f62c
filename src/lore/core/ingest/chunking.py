"""Splitting a source into sections and chunks on heading, paragraph and sentence boundaries.

Nothing is dropped: every character of text ends up in some chunk (only whitespace between
paragraphs and reST label lines, which are markup, are left out). A paragraph longer than a
chunk is split between sentences, and a sentence longer than a chunk between words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lore.core.ingest.sources import Format

_ATX = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_RST_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+_:.<>])\1{2,}\s*$")
_RST_LABEL = re.compile(
    r"^\.\.\s+_[^:]+:\s*$|^\.\.\s+(?:index|highlight|sectionauthor|moduleauthor)::.*$"
)
# A sentence ends at . ! ? (or their CJK forms) followed by space and an upper-case letter,
# a digit or an opening quote; abbreviations like "e.g. the" stay together.
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])[\"')\]]*\s+(?=[\"'(\[]?[A-ZÀ-ÖØ-Þ0-9Α-ΩА-Я])")


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)


@dataclass
class Chunk:
    section: str
    paragraphs: list[str]
    number: int

    @property
    def text(self) -> str:
        return "\n\n".join(self.paragraphs)


def sections(text: str, fmt: Format, default_title: str) -> list[Section]:
    """The text cut at its headings, each part split into paragraphs."""
    lines = text.split("\n")
    found: list[Section] = [Section(default_title)]
    current: list[str] = []
    in_fence = False

    def flush() -> None:
        found[-1].paragraphs.extend(paragraphs("\n".join(current)))
        current.clear()

    number = 0
    while number < len(lines):
        line = lines[number]
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            heading = _heading(lines, number, fmt)
            if heading is not None:
                title, used = heading
                flush()
                found.append(Section(title))
                number += used
                continue
            if fmt == "rst" and _RST_LABEL.match(line):
                number += 1
                continue
        current.append(line)
        number += 1
    flush()
    return [section for section in found if section.paragraphs]


def _heading(lines: list[str], number: int, fmt: Format) -> tuple[str, int] | None:
    """(title, lines used) when a heading starts at `lines[number]`."""
    line = lines[number]
    if fmt in ("markdown", "html"):
        match = _ATX.match(line)
        return (match.group(2).strip(), 1) if match else None
    if fmt != "rst":
        return None
    following = lines[number + 1] if number + 1 < len(lines) else ""
    if (
        _RST_ADORNMENT.match(line)
        and following.strip()
        and number + 2 < len(lines)
        and _RST_ADORNMENT.match(lines[number + 2])
        and not _RST_ADORNMENT.match(following)
    ):
        return following.strip(), 3
    if (
        line.strip()
        and not line.startswith((" ", "\t"))
        and not _RST_ADORNMENT.match(line)
        and _RST_ADORNMENT.match(following)
        and len(following.strip()) >= min(len(line.strip()), 3)
    ):
        return line.strip(), 2
    return None


def paragraphs(text: str) -> list[str]:
    """Blocks separated by blank lines; a fenced code block stays one block."""
    blocks: list[str] = []
    current: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        if not line.strip() and not in_fence:
            if current:
                blocks.append("\n".join(current).strip("\n"))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current).strip("\n"))
    return [block for block in blocks if block.strip()]


def split_long(text: str, limit: int) -> list[str]:
    """`text` in pieces of at most `limit` characters, cut between sentences, then words."""
    if len(text) <= limit:
        return [text]
    parts: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        parts.extend(_split_words(sentence, limit) if len(sentence) > limit else [sentence])
    return _pack(parts, limit)


def _split_words(text: str, limit: int) -> list[str]:
    words: list[str] = []
    for word in text.split(" "):
        # A word longer than the limit (a URL, a hash) is cut into limit-sized slices.
        while len(word) > limit:
            words.append(word[:limit])
            word = word[limit:]
        words.append(word)
    return _pack(words, limit)


def _pack(parts: list[str], limit: int) -> list[str]:
    """Join `parts` with spaces, in order, into pieces of at most `limit` characters."""
    pieces: list[str] = []
    current = ""
    for part in parts:
        if current and len(current) + 1 + len(part) > limit:
            pieces.append(current)
            current = part
        else:
            current = f"{current} {part}" if current else part
    if current:
        pieces.append(current)
    return pieces


def chunk(text: str, fmt: Format, title: str, chunk_chars: int) -> list[Chunk]:
    """Chunks of about `chunk_chars`, never crossing a section boundary."""
    chunks: list[Chunk] = []
    for section in sections(text, fmt, title):
        current: list[str] = []
        size = 0
        for paragraph in section.paragraphs:
            for piece in split_long(paragraph, chunk_chars):
                if current and size + len(piece) > chunk_chars:
                    chunks.append(Chunk(section.title, current, len(chunks)))
                    current, size = [], 0
                current.append(piece)
                size += len(piece) + 2
        if current:
            chunks.append(Chunk(section.title, current, len(chunks)))
    return chunks
