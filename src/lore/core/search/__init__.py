"""The note index and its search fast path.

`NoteIndex` keeps a vault's notes in a whoosh index and answers searches with `SearchHit`s.
Everything else in this package is private to it, and `whoosh_private` alone reads whoosh's
own internals. Names are imported on first use, so a module that only needs one of them (the
stemmer, say) does not pay for opening whoosh's index machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.lazy_names import lazy_names
from lore.core.search.whoosh_import import import_whoosh_helpers

# Before any module of this package imports whoosh (see whoosh_import).
import_whoosh_helpers()

if TYPE_CHECKING:
    from lore.core.search.index import FileStat, NoteIndex, NoteLoader, ReconcileReport, SearchHit

_HOME_OF = {
    "FileStat": "lore.core.search.index",
    "NoteIndex": "lore.core.search.index",
    "NoteLoader": "lore.core.search.index",
    "ReconcileReport": "lore.core.search.index",
    "SearchHit": "lore.core.search.index",
}


__getattr__ = lazy_names(globals(), _HOME_OF)


__all__ = ["FileStat", "NoteIndex", "NoteLoader", "ReconcileReport", "SearchHit"]
