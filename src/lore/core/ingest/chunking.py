"""Splitting a source into sections and chunks on heading, paragraph and sentence boundaries.

Nothing is dropped: every character of text ends up in some chunk (only whitespace between
paragraphs and reST label lines, which are markup, are left out). A paragraph longer than a
chunk is split between sentences, and a sentence longer than a chunk between words. A section
longer than `note_parts.PART_WORDS` words is cut, at the same boundaries, into parts that
become notes of their own: "Title (part 2 of 5)".
"""

from __future__ import annotations

import re
from dataclasses import field

from lore.core.dataclass_lite import dataclass_own_init
from lore.core.ingest.sources import Format
from lore.core.note_parts import PART_WORDS, part_title

_ATX = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_RST_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+_:.<>])\1{2,}\s*$")
_RST_LABEL = re.compile(
    r"^\.\.\s+_[^:]+:\s*$|^\.\.\s+(?:index|highlight|sectionauthor|moduleauthor)::.*$"
)
# A sentence ends at . ! ? (or their CJK forms), and any closing quotes or brackets, followed
# by space and an upper-case letter, a digit or an opening quote; abbreviations like "e.g. the"
# stay together.
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])([\"')\]]*)\s+(?=[\"'(\[]?[A-ZÀ-ÖØ-Þ0-9Α-ΩА-Я])")


def _sentences(text: str) -> list[str]:
    """`text` cut after each sentence; only the spaces between sentences are left out."""
    found: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        found.append(text[start : match.end(1)])
        start = match.end()
    found.append(text[start:])
    return [sentence for sentence in found if sentence]


@dataclass_own_init
class Section:
    """A titled section of a source and its paragraphs."""

    title: str
    paragraphs: list[str] = field(default_factory=list)


@dataclass_own_init
class Chunk:
    """Paragraphs of one section (or part of one) small enough to extract claims from at once;
    `number` is its place in the source."""

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
    for sentence in _sentences(text):
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


def _within_words(piece: str, limit: int) -> list[str]:
    """`piece` cut between sentences, then words, into runs of at most `limit` words."""
    if len(piece.split()) <= limit:
        return [piece]
    runs: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in _sentences(piece):
        words = sentence.split()
        while len(words) > limit:
            if current:
                runs.append(" ".join(current))
                current, count = [], 0
            runs.append(" ".join(words[:limit]))
            words = words[limit:]
        if current and count + len(words) > limit:
            runs.append(" ".join(current))
            current, count = [], 0
        if words:
            current.append(" ".join(words))
            count += len(words)
    if current:
        runs.append(" ".join(current))
    return runs


def chunk(
    text: str, fmt: Format, title: str, chunk_chars: int, part_words: int = PART_WORDS
) -> list[Chunk]:
    """Chunks of about `chunk_chars`, never crossing a section boundary, nor the boundary of a
    part of `part_words` words in a longer section."""
    chunks: list[Chunk] = []
    for section in sections(text, fmt, title):
        # (part, paragraphs) of each chunk of the section.
        planned: list[tuple[int, list[str]]] = []
        part = words_in_part = 0
        current: list[str] = []
        size = 0
        for paragraph in section.paragraphs:
            for piece in split_long(paragraph, chunk_chars):
                for run in _within_words(piece, part_words):
                    words = len(run.split())
                    full_part = words_in_part and words_in_part + words > part_words
                    if current and (size + len(run) > chunk_chars or full_part):
                        planned.append((part, current))
                        current, size = [], 0
                    if full_part:
                        part, words_in_part = part + 1, 0
                    current.append(run)
                    size += len(run) + 2
                    words_in_part += words
        if current:
            planned.append((part, current))
        parts = part + 1
        for number, paragraphs in planned:
            name = section.title if parts == 1 else part_title(section.title, number + 1, parts)
            chunks.append(Chunk(name, paragraphs, len(chunks)))
    return chunks
