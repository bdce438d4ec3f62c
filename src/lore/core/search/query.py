"""Turning what a user types into a whoosh query, quickly for the common shapes.

Most queries are a few words, a "quoted phrase" or `tag:x` / `title:x`. whoosh's query parser
handles them all but costs most of a millisecond per query; `build_simple_query` builds the very
same query objects directly and returns None for anything else (operators, brackets,
wildcards), which then goes to the full parser.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from whoosh.analysis import StemmingAnalyzer
from whoosh.lang.porter import stem
from whoosh.query import Or, Query, Term

from lore.core.search.phrase import AdjacentPhrase

# The fields a bare word is looked up in, in the order whoosh's parser lists them.
SEARCH_FIELDS = ("title", "tags", "body")
TEXT_FIELDS = ("title", "body")
_PIECE = re.compile(
    r'\s*(?:(?P<field>[A-Za-z]+):(?P<value>[\w\-]+)|"(?P<phrase>[^"]*)"|(?P<word>\S+))'
)
_WORD = re.compile(r"\w+")
_OPERATORS = {"AND", "OR", "NOT", "ANDNOT", "ANDMAYBE", "TO"}
_FIELD_ALIASES = {"tag": "tags", "tags": "tags", "title": "title"}

# The analyzer of the title and body fields: it is also what turns query words into terms.
ANALYZER = StemmingAnalyzer()


def analyse(text: str) -> list[str]:
    return [token.text for token in ANALYZER(text)]


@lru_cache(maxsize=50_000)
def stem_word(word: str) -> str:
    """The term a single lowercase body word is indexed under."""
    return str(stem(word))


def _word_query(word: str) -> Query | None:
    terms = analyse(word)
    if len(terms) > 1:
        return None
    parts: list[Query] = []
    if terms:
        parts.append(Term("title", terms[0]))
    parts.append(Term("tags", word.lower()))
    if terms:
        parts.append(Term("body", terms[0]))
    return Or(parts) if len(parts) > 1 else parts[0]


def _phrase_query(text: str) -> Query | None:
    words = text.split()
    if not words or not all(_WORD.fullmatch(word) for word in words):
        return None
    if len(words) == 1:
        return _word_query(words[0])
    terms = analyse(text)
    if len(terms) < 2:
        return None
    return Or(
        [
            AdjacentPhrase("title", terms),
            Term("tags", " ".join(words).lower()),
            AdjacentPhrase("body", terms),
        ]
    )


def _field_query(field: str, value: str) -> Query | None:
    target = _FIELD_ALIASES.get(field.lower())
    if target is None or field != field.lower():
        return None
    if target == "tags":
        return Term("tags", value.lower())
    if not _WORD.fullmatch(value):
        return None
    terms = analyse(value)
    return Term("title", terms[0]) if len(terms) == 1 else None


def _pieces(text: str) -> Iterator[re.Match[str]]:
    position = 0
    while position < len(text):
        match = _PIECE.match(text, position)
        if match is None or match.end() == position:
            return
        position = match.end()
        if match.group(0).strip():
            yield match


def build_simple_query(text: str) -> Query | None:
    """The query whoosh's parser would build for plain words, phrases and tag:/title:, or None."""
    if text.count('"') % 2:
        return None
    parts: list[Query] = []
    for piece in _pieces(text):
        if piece.group("field") is not None:
            query = _field_query(piece.group("field"), piece.group("value"))
        elif piece.group("phrase") is not None:
            query = _phrase_query(piece.group("phrase"))
        else:
            word = piece.group("word")
            if word in _OPERATORS or not _WORD.fullmatch(word):
                return None
            query = _word_query(word)
        if query is None:
            return None
        parts.append(query)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else Or(parts)


def prefer_union_matchers(query: Query) -> Query:
    """Make every OR in `query` use whoosh's union tree, in place, and return it.

    On segments under 5,000 notes whoosh otherwise picks an array matcher that allocates and
    zero-fills 2,048 scores through a Python generator for every OR, every query: most of the
    cost of a search in a small vault, and of the newest segment in a big one.
    """
    if isinstance(query, Or):
        query.matcher_type = Or.DEFAULT_MATCHER
    for child in query.children():
        prefer_union_matchers(child)
    return query


def body_terms(query: Query) -> set[str]:
    """The body terms a query looks for: what a snippet should highlight."""
    terms: set[str] = set()
    for field, text in query.iter_all_terms(phrases=True):
        if field == "body":
            terms.add(text.decode("utf-8") if isinstance(text, bytes) else str(text))
    return terms
