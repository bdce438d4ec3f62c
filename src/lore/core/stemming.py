"""The stem of a word as the note index's analyzer makes it, without the search machinery.

Compaction and the evidence of an ask compare words by their stems and search nothing:
importing the search package sets up whoosh's query and index modules (about 55 ms of a
process's start), while the analyzer's stemmer, whoosh's Porter stemmer, needs only `re`.
"""

from __future__ import annotations

from functools import lru_cache

from whoosh.lang.porter import stem


@lru_cache(maxsize=50_000)
def stem_word(word: str) -> str:
    """The term a single lowercase body word is indexed under."""
    return str(stem(word))
