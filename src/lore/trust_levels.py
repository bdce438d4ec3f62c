"""The trust levels a source or a note can have, most trusted first.

Here rather than in `lore.config`, which re-exports them, so that the command line's parser
can offer them as choices without loading the settings models (pydantic) first.
"""

from __future__ import annotations

from typing import Literal

TrustLevel = Literal["trusted", "semi-trusted", "untrusted"]

TRUST_LEVELS: tuple[TrustLevel, ...] = ("trusted", "semi-trusted", "untrusted")
