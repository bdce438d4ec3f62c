"""Turning what a user types into a whoosh query, quickly for the common shapes, and safely.

Most queries are a few words, a "quoted phrase" or `tag:x` / `title:x`. whoosh's query parser
handles them all but costs most of a millisecond per query; `build_simple_query` builds the very
same query objects directly and returns None for anything else (operators, brackets,
wildcards), which then goes to the full parser.

Text a person pastes is not syntax: a line of code is full of brackets, quotes and colons, and
whoosh would read `[...]` as a range of every term in the index, thousands of term lookups
for one search. So the only syntax read is what a query is typed with (quoted phrases,
`tag:`/`title:`, AND/OR/NOT, parentheses, `word^2`); ranges, wildcards and `*:*` are words.
Text that cannot have been typed as a query (`typed_query`: several lines, or longer than any
query) is searched as its first MAX_QUERY_WORDS distinct words, and no query looks up more
than MAX_QUERY_TERMS terms (`term_lookups`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from whoosh.analysis import StemmingAnalyzer
from whoosh.query import And, Every, MultiTerm, NullQuery, Or, Phrase, Query, Term

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

# A query a person types is a few words; past either bound the text was pasted, and it is
# searched as its first MAX_QUERY_WORDS distinct words with every piece of syntax ignored.
# (Questions reach the index as at most 56 words, so they stay within both.)
MAX_QUERY_WORDS = 64
MAX_TYPED_CHARS = 1_000
# The most terms one query may look up: each word in three fields. A range or a prefix would
# stand for every term it covers, so a query holding one is read as words instead.
MAX_QUERY_TERMS = 3 * MAX_QUERY_WORDS
# A word as the analyzer's tokenizer reads it: `os.path` is one.
_TOKEN_WORD = re.compile(r"\w+(?:\.\w+)*")

# The analyzer of the title and body fields: it is also what turns query words into terms.
ANALYZER = StemmingAnalyzer()


def analyse(text: str) -> list[str]:
    return [token.text for token in ANALYZER(text)]


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


def plain_words(text: str, limit: int = MAX_QUERY_WORDS) -> list[str]:
    """The first `limit` distinct words of `text` (operators and field names too), in order."""
    words: dict[str, str] = {}
    for match in _TOKEN_WORD.finditer(text):
        word = match.group()
        words.setdefault(word.lower(), word)
        if len(words) >= limit:
            break
    return list(words.values())


def typed_query(text: str) -> bool:
    """Whether `text` could have been typed as a query, so that its syntax is meant: one line
    (a search box has no line breaks to type), short, and of few words."""
    if len(text) > MAX_TYPED_CHARS or "\n" in text.strip():
        return False
    # Words are parted by at least one other character: a short text cannot hold too many.
    return len(text) < 2 * MAX_QUERY_WORDS or (
        len(plain_words(text, MAX_QUERY_WORDS + 1)) <= MAX_QUERY_WORDS
    )


def words_query(words: list[str]) -> Query:
    """Each word looked up in the title, the tags and the body, OR'ed, as the parser reads
    plain words; no word is syntax (`NOT` is a word), and no words is NullQuery. Words past
    MAX_QUERY_TERMS lookups are left out."""
    parts: list[Query] = []
    lookups = 0
    for word in words:
        terms = analyse(word)
        looked_up: list[Query] = [Term("title", term) for term in terms]
        looked_up.append(Term("tags", word.lower()))
        looked_up.extend(Term("body", term) for term in terms)
        lookups += len(looked_up)
        if lookups > MAX_QUERY_TERMS:
            break
        parts.append(Or(looked_up) if len(looked_up) > 1 else looked_up[0])
    if not parts:
        return NullQuery
    return parts[0] if len(parts) == 1 else Or(parts)


def term_lookups(query: Query) -> int:
    """How many terms `query` looks up: one a term, one a word of a phrase. A range, prefix,
    wildcard or `*:*` counts as more than MAX_QUERY_TERMS, whatever the index holds."""
    count = 0
    for leaf in query.leaves():
        if isinstance(leaf, (MultiTerm, Every)):
            return MAX_QUERY_TERMS + 1
        count += sum(1 for _ in leaf.terms(phrases=True))
    return count


def phrases_in_text_fields(query: Query) -> Query:
    """`query` with each phrase outside the title and body made its terms, all required.

    The tags keep no word positions, and whoosh raises on a phrase there; the parser writes
    one for a quoted phrase with a comma in it (`"time, ctime"`), as the tags split at commas.
    """

    def unplaced(node: Query) -> bool:
        return isinstance(node, Phrase) and node.fieldname not in TEXT_FIELDS

    def as_terms(node: Query) -> Query:
        if not unplaced(node):
            return node
        return And([Term(node.fieldname, word, boost=node.boost) for word in node.words])

    if not any(unplaced(leaf) for leaf in query.leaves()):
        return query
    return query.accept(as_terms)


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
