"""Search-hit snippets: the passage of a note where the query's words are densest.

whoosh's highlighter runs the full analyzer over every hit's body, which costs more than the
search itself. Here a body word can only match a query term if it starts with the term's first
two letters, so a regular expression finds the few candidates and only those are stemmed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

SNIPPET_CHARS = 220
LEAD_CHARS = 60
SCAN_CHARS = 50_000
WINDOW_CANDIDATES = 400
# Enough to fill any window that starts at one of the candidates (a window holds < 100 words).
MAX_MATCHES = WINDOW_CANDIDATES + 200

Span = tuple[int, int]


# The rest of a word as whoosh's tokenizer reads it: `os.path` is one word, `end.` is not.
_WORD_REST = re.compile(r"\w*(?:\.\w+)*")


def _prefix(term: str) -> str:
    # The stemmer only rewrites endings (a final y or e at most), so all but a term's last
    # letter, up to three, begin every word that indexes as it.
    return term[: max(1, min(3, len(term) - 1))]


def _word_starts(text: str, prefix: str) -> Iterator[int]:
    """Where a word beginning with `prefix` starts; str.find skips ahead in C."""
    position = text.find(prefix)
    while position != -1:
        if position == 0 or not (text[position - 1].isalnum() or text[position - 1] == "_"):
            yield position
        position = text.find(prefix, position + 1)


def find_matches(
    body: str, terms: set[str], stem: Callable[[str], str]
) -> list[tuple[int, int, str]]:
    """(start, end, term) of every word in the first SCAN_CHARS of `body` that indexes as a term."""
    if not terms:
        return []
    scanned = body[:SCAN_CHARS]
    lowered = scanned.lower()
    if len(lowered) != len(scanned):
        # A few letters (İ) lower to two characters; lower word by word to keep the offsets.
        lowered = "".join(char.lower()[0] for char in scanned)
    starts: set[int] = set()
    for prefix in {_prefix(term) for term in terms if term}:
        starts.update(_word_starts(lowered, prefix))
    matches = []
    for start in sorted(starts):
        end = _WORD_REST.match(lowered, start).end()  # type: ignore[union-attr]
        word = lowered[start:end]
        term = word if word in terms else stem(word)
        if term in terms:
            matches.append((start, end, term))
            if len(matches) >= MAX_MATCHES:
                break
    return matches


def _best_window(matches: list[tuple[int, int, str]]) -> int:
    """Index of the match that starts the window holding the most distinct terms."""
    best, best_score = 0, (-1, -1)
    right = 0
    for left in range(len(matches)):
        right = max(right, left)
        while (
            right + 1 < len(matches)
            and matches[right + 1][1] - matches[left][0] <= SNIPPET_CHARS - LEAD_CHARS
        ):
            right += 1
        window = matches[left : right + 1]
        score = (len({term for _, _, term in window}), len(window))
        if score > best_score:
            best, best_score = left, score
    return best


def _clip(body: str, start: int, end: int) -> tuple[int, int]:
    """Widen [start, end) to word boundaries so no word is cut in half."""
    while start > 0 and not body[start - 1].isspace() and start > end - SNIPPET_CHARS - 20:
        start -= 1
    while end < len(body) and not body[end].isspace() and end < start + SNIPPET_CHARS + 20:
        end += 1
    return start, end


def _collapse(body: str, start: int, end: int, spans: list[Span]) -> tuple[str, list[Span]]:
    """body[start:end] with runs of white space made single spaces and the ends trimmed, spans
    moved to match. A span holds no white space, so it keeps its length.
    """
    region = body[start:end]
    shifted: list[Span] = []
    for span_start, span_end in spans:
        before = region[: span_start - start]
        collapsed = " ".join(before.split())
        offset = len(collapsed) + 1 if collapsed and before[-1].isspace() else len(collapsed)
        shifted.append((offset, offset + span_end - span_start))
    return " ".join(region.split()), shifted


def make_snippet(body: str, terms: set[str], stem: Callable[[str], str]) -> tuple[str, list[Span]]:
    """About SNIPPET_CHARS of `body` around its densest run of query terms, with their spans.

    A note whose body never mentions a term (it matched on title or tags) shows its opening.
    """
    matches = find_matches(body, terms, stem)
    if not matches:
        opening, _ = _collapse(body, 0, min(len(body), SNIPPET_CHARS * 2), [])
        if len(opening) > SNIPPET_CHARS:
            opening = opening[:SNIPPET_CHARS].rsplit(" ", 1)[0] + " …"
        return opening, []
    # A word repeated thousands of times in a long note need not be weighed at every place.
    first = _best_window(matches[:WINDOW_CANDIDATES])
    start = max(0, matches[first][0] - LEAD_CHARS)
    end = min(len(body), start + SNIPPET_CHARS)
    start, end = _clip(body, start, end)
    spans = [(a, b) for a, b, _ in matches if a >= start and b <= end]
    text, shifted = _collapse(body, start, end, spans)
    if start > 0:
        text = "… " + text
        shifted = [(a + 2, b + 2) for a, b in shifted]
    if end < len(body):
        text += " …"
    return text, shifted
