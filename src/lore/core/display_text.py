"""Text read from documents, made safe to show: nothing in it can drive the terminal.

Titles, bodies, claims, questions, answers and URIs come from documents an attacker may have
written. A terminal obeys escape sequences (a clipboard write, a new window title, a cleared
screen) and bidirectional overrides reorder what a reader sees, so every face shows such
characters spelled out, e.g. ⟦U+001B ESC⟧, instead of writing them. The same test decides
what a title loses at ingest and what a promoted claim loses on its way into a note.
"""

from __future__ import annotations

import re
import urllib.parse
from functools import cache

_NAMES = {
    0x00: "NUL", 0x07: "BEL", 0x08: "BS", 0x09: "TAB", 0x0A: "LF", 0x0D: "CR", 0x1B: "ESC",
    0x7F: "DEL", 0x9B: "CSI", 0x9D: "OSC",
    0x200B: "ZWSP", 0x200C: "ZWNJ", 0x200D: "ZWJ", 0x200E: "LRM", 0x200F: "RLM",
    0x2060: "WJ", 0xFEFF: "BOM", 0x061C: "ALM", 0x2028: "LSEP", 0x2029: "PSEP",
    0x202A: "LRE", 0x202B: "RLE", 0x202C: "PDF", 0x202D: "LRO", 0x202E: "RLO",
    0x2066: "LRI", 0x2067: "RLI", 0x2068: "FSI", 0x2069: "PDI",
}  # fmt: skip
LINKABLE_SCHEMES = frozenset({"http", "https", "file"})

# Each pattern of this module is compiled when first used: their character classes span the
# whole of Unicode and took 0.3-0.5 ms each to compile, a millisecond and a half of every
# command's start, though most commands use one of them or none.


@cache
def _terminal_sequence() -> re.Pattern[str]:
    """Whole terminal sequences, removed from titles in one piece so no stray `]52;c;…` is
    left: OSC and the other string commands (ended by BEL or ST), CSI, and the two-character
    escapes; 7-bit and 8-bit forms."""
    return re.compile(
        r"(?:\x1b[\]P_^X]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
        r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
        r"|\x1b[ -/]*[0-~]?"
    )


def is_hidden_char(ch: str) -> bool:
    """Characters a reader cannot see or a terminal would act on (newline and tab aside),
    and lone surrogates, which no terminal's encoding can write (Python keeps each byte of
    an argument that is not UTF-8 as one)."""
    code = ord(ch)
    return (
        (code < 0x20 and ch not in "\n\t")
        or 0x7F <= code <= 0x9F
        or 0x200B <= code <= 0x200F
        or 0x202A <= code <= 0x202E
        or 0x2060 <= code <= 0x2069
        or code in (0xFEFF, 0x180E, 0x061C, 0x2028, 0x2029)
        or 0xFFF9 <= code <= 0xFFFB
        or 0xE0000 <= code <= 0xE007F
        or 0xD800 <= code <= 0xDFFF
    )


def _shown_as_is(ch: str, multiline: bool) -> bool:
    if ch in "\n\t":
        return multiline
    return not is_hidden_char(ch)


def spelled(ch: str) -> str:
    """One hidden character spelled out: ⟦U+202E RLO⟧."""
    name = _NAMES.get(ord(ch))
    return f"⟦U+{ord(ch):04X}{' ' + name if name else ''}⟧"


# What `is_hidden_char` accepts, as a character class: a regex scans a 4 MB note in
# milliseconds where a loop over its characters takes seconds.
_HIDDEN_CLASS = (
    "\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069"
    "\ufeff\u180e\u061c\u2028\u2029\ufff9-\ufffb\U000e0000-\U000e007f\ud800-\udfff"
)


@cache
def _hidden_pattern(multiline: bool) -> re.Pattern[str]:
    """The hidden characters; newline and tab are among them unless `multiline`."""
    controls = "\x00-\x08" if multiline else "\x00-\x0a"
    return re.compile(f"[{controls}{_HIDDEN_CLASS}]")


def visible(text: str, *, multiline: bool) -> str:
    """`text` with every hidden character spelled out; newlines and tabs kept if `multiline`."""
    if multiline:
        text = text.replace("\r\n", "\n")
    pattern = _hidden_pattern(multiline)
    if pattern.search(text) is None:
        return text
    return pattern.sub(lambda match: spelled(match.group()), text)


def visible_with_offsets(text: str, *, multiline: bool) -> tuple[str, list[int]]:
    """`visible(text)` and where each character of `text` starts in it (one more at the end),
    so spans found in the original (search highlights, flags) can be placed in what is shown."""
    pattern = _hidden_pattern(multiline)
    if pattern.search(text) is None:
        # Nearly every text: nothing to spell out, so each character stays where it is.
        return text, list(range(len(text) + 1))
    pieces: list[str] = []
    starts: list[int] = []
    length = 0
    for ch in text:
        starts.append(length)
        piece = ch if _shown_as_is(ch, multiline) else spelled(ch)
        pieces.append(piece)
        length += len(piece)
    starts.append(length)
    return "".join(pieces), starts


def hidden_count(text: str) -> int:
    return sum(1 for ch in text if is_hidden_char(ch))


def strip_hidden(text: str) -> tuple[str, int]:
    """`text` without its hidden characters, and how many were removed."""
    kept = "".join(ch for ch in text if not is_hidden_char(ch))
    return kept, len(text) - len(kept)


def clean_title(text: str) -> str:
    """A title with terminal sequences and hidden characters gone and spaces collapsed."""
    # A control between words parts them; a zero-width or bidi character inside a word
    # ("Ig\u200bnore") is simply dropped.
    kept = []
    for ch in _terminal_sequence().sub(" ", text):
        code = ord(ch)
        if code < 0x20 or 0x7F <= code <= 0x9F:
            kept.append(" ")
        elif not is_hidden_char(ch):
            kept.append(ch)
    return " ".join("".join(kept).split())


def linkable_uri(uri: str) -> bool:
    """Whether `uri` may become a terminal hyperlink: http, https or file, nothing hidden."""
    if not uri or any(is_hidden_char(ch) or ch.isspace() for ch in uri):
        return False
    try:
        parts = urllib.parse.urlsplit(uri)
    except ValueError:
        return False
    if parts.scheme.lower() not in LINKABLE_SCHEMES:
        return False
    return parts.scheme.lower() == "file" or bool(parts.netloc)


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


@cache
def _json_hidden() -> re.Pattern[str]:
    """What `is_hidden_char` accepts beyond the C0 controls json.dumps escapes itself."""
    return re.compile(
        "[\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u180e\u061c\u2028\u2029"
        "\ufff9-\ufffb\U000e0000-\U000e007f\ud800-\udfff]"
    )


def json_for_terminal(dumped: str) -> str:
    """JSON text with the hidden characters json.dumps leaves raw written as \\u escapes.

    The data is unchanged (any character in a JSON string may be escaped); only a terminal
    showing the output can no longer be driven by it. json.dumps already escapes C0 controls.
    """
    return _json_hidden().sub(_json_escape, dumped)
