"""Which program opens a file for the user to edit: one rule for every face."""

from __future__ import annotations

import os
import shlex


def editor_command() -> list[str]:
    """The user's editor as an argv prefix: $VISUAL, then $EDITOR, then vi.

    A value that is not valid shell syntax (an unbalanced quote) is taken whole as the
    program's name, so the caller reports one clear "not found" instead of failing here.
    """
    raw = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        parts = shlex.split(raw)
    except ValueError:
        parts = [raw]
    return parts or ["vi"]
