"""Text and JSON written as UTF-8, whatever a Python string holds.

A string can hold lone surrogates, which no UTF-8 can: the bytes of an argument that are not
UTF-8 (Python keeps each one as a surrogate), or half of an emoji that a model server
escaped in one piece of its stream and the other half in the next. Encoded as they are, a
record holding one fails to be written: an answer lost, a compaction refused. JSON has an
escape for each (`\\udcff`), which every reader turns back into the same string, so such a
record is written with those escapes and nothing else about it changes. Text that is not
JSON (a note, an export in Markdown) has U+FFFD in place of each, as decoding the byte
would have made.
"""

from __future__ import annotations

import json
import re
from typing import Any


def json_bytes(value: Any, **options: Any) -> bytes:
    """`json.dumps(value, ensure_ascii=False, **options)` as UTF-8."""
    return utf8_json(json.dumps(value, ensure_ascii=False, **options))


def utf8_json(text: str) -> bytes:
    """JSON text as UTF-8, any lone surrogate in it escaped."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return surrogates_escaped(text).encode("utf-8")


def writable_json(text: str) -> str:
    """JSON text that encodes as UTF-8: `text`, or it with its lone surrogates escaped."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return surrogates_escaped(text)
    return text


def surrogates_escaped(text: str) -> str:
    """JSON text with each lone surrogate written as its escape.

    The encoder leaves a surrogate only inside a string, where its escape reads back as the
    same character; a backslash before it there is itself escaped, so none can join it."""
    return re.sub("[\ud800-\udfff]", lambda found: f"\\u{ord(found.group()):04x}", text)


def utf8_text(text: str) -> str:
    """`text` with U+FFFD in place of each lone surrogate, so that it encodes as UTF-8."""
    return text if text.isascii() else re.sub("[\ud800-\udfff]", "\ufffd", text)
