"""The one function that turns a title into a safe file name inside the vault."""

from __future__ import annotations

import re
from collections.abc import Callable

MAX_SLUG_CHARS = 80
_NOT_WORD = re.compile(r"[^\w]+", re.UNICODE)
_WINDOWS_RESERVED = {
    "con", "prn", "aux", "nul",
    *(f"com{i}" for i in range(1, 10)),
    *(f"lpt{i}" for i in range(1, 10)),
}  # fmt: skip


def slugify(title: str) -> str:
    """A lowercase, hyphenated name with no separators, dots, controls or reserved words.

    Letters outside ASCII are kept (after NFKC normalisation) so that titles in any script
    stay readable; everything else collapses into single hyphens.
    """
    # Imported here: the vault module imports this one, and a search or a listing names no
    # file, while the Unicode database took longer to load than the rest of the module.
    import unicodedata

    text = unicodedata.normalize("NFKC", title)
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] not in {"C"})
    text = _NOT_WORD.sub("-", text.lower()).replace("_", "-")
    text = re.sub(r"-{2,}", "-", text).strip("-")
    if len(text) > MAX_SLUG_CHARS:
        text = text[:MAX_SLUG_CHARS].rstrip("-")
    if not text:
        return "untitled"
    if text in _WINDOWS_RESERVED:
        text = f"{text}-note"
    return text


def unique_name(slug: str, taken: Callable[[str], bool], suffix: str = ".md") -> str:
    """`slug` + suffix, or the first `slug-N` + suffix for which `taken` is false."""
    candidate = f"{slug}{suffix}"
    number = 2
    while taken(candidate):
        candidate = f"{slug}-{number}{suffix}"
        number += 1
    return candidate
