"""JSON decoded from a file or from outside, with every way it can be unreadable one error.

The standard decoder refuses malformed text with a ValueError (`json.JSONDecodeError`), but
gives up on arrays or objects nested deeper than it recurses with RecursionError: one such
line of a history, a damaged archive, a model server's reply. Read through `decode_json`,
that is the same JSONDecodeError, which every reader already takes as unreadable text.
"""

from __future__ import annotations

import json
from typing import Any


def decode_json(data: str | bytes | bytearray) -> Any:
    """`json.loads(data)`; `json.JSONDecodeError` for text nested too deeply to decode."""
    try:
        return json.loads(data)
    except RecursionError:
        document = data if isinstance(data, str) else bytes(data[:200]).decode(errors="replace")
        raise json.JSONDecodeError("nested too deeply to read", document[:200], 0) from None
