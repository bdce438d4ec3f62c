"""The note index and its search fast path.

`NoteIndex` keeps a vault's notes in a whoosh index and answers searches with `SearchHit`s.
Everything else in this package is private to it, and `whoosh_private` alone reads whoosh's
own internals. Names are imported on first use, so a module that only needs one of them (the
stemmer, say) does not pay for opening whoosh's index machinery.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lore.core.search.index import FileStat, NoteIndex, NoteLoader, ReconcileReport, SearchHit

_HOME_OF = {
    "FileStat": "lore.core.search.index",
    "NoteIndex": "lore.core.search.index",
    "NoteLoader": "lore.core.search.index",
    "ReconcileReport": "lore.core.search.index",
    "SearchHit": "lore.core.search.index",
}


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = ["FileStat", "NoteIndex", "NoteLoader", "ReconcileReport", "SearchHit"]
