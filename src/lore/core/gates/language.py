"""Text in a language the gates cannot read, inside a source they can.

Instructions translated into a language few filters know are a common way past them. The
review gate reads eight languages; a claim written in none of them, inside a source that is
otherwise in English, is held for a person to read. A source written wholly in another
language is left alone: it is a translation, not a hiding place. Where no sentence is long
enough to tell a language by (short lines, the comments of a piece of code), the runs of
plain words in a paragraph are pooled and judged together.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from statistics import median

from lore.core.gates.canonical import canonical

_WORD = re.compile(r"[^\W\d_]+")
_LATIN = re.compile(r"[a-z\u00c0-\u024f\u1e00-\u1eff]+")


# English function words that few other Latin-script languages share; every English
# paragraph is full of them, whatever its subject.
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_ENGLISH = _words(
    "the and of to that for with this are be not or from by was were it its on as at have has had "
    "but which can will would should there their they you your we our if then than when what who "
    "how all any each more most some such only also into about these those been being does did "
    "may must one two so out up over after before between other where while because"
)
# Common words of the other languages the rules read, none of them English words.
_READ_LANGUAGES = _words(
    "le la les des est une dans pour qui pas sur avec sont nous vous "  # French
    "el los las por una con para del como pero sus "  # Spanish
    "os um uma não com para como mais pelo pela "  # Portuguese
    "il di che per non sono della nel gli "  # Italian
    "der die das und ist nicht ein eine mit für auf den dem sich"  # German
)
_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+")
# Enough words to tell a language by; a source counts as English on longer paragraphs.
MIN_WORDS = 9
MIN_ENGLISH_WORDS = 12
# Shares of a paragraph's words that are English function words.
ENGLISH_SOURCE = 0.18
FOREIGN = 0.05
COMMON = 0.3
# Fewer words in a row than this are a name, a label or a phrase in code, not a language.
MIN_RUN_WORDS = 3
RUN_SHARE = 0.5
_QUOTES = "'\"“”‘’«»"
_STOPS = ".,;:!?"


def _share(words: list[str]) -> float:
    return sum(1 for word in words if word in _ENGLISH) / len(words)


def unread_language(
    texts: Iterable[tuple[str, str]], common: frozenset[str] = frozenset()
) -> dict[str, str]:
    """Reasons per key for the texts holding a paragraph in a language the gates do not read.

    `texts` are (key, text) pairs of one source; `common`, when given, the commonest words of
    English documents, which a foreign paragraph must mostly lack too. Each paragraph is
    measured on its own, in canonical form: a claim can join several.
    """
    measured: list[tuple[str, list[str], float]] = []
    # Words pooled from short lines and code are evidence of a hidden language, never of the
    # source's own: a source counts as English on its running text alone.
    pooled: list[tuple[str, list[str], float]] = []
    for key, text in texts:
        for paragraph in _PARAGRAPH.split(text.strip("\n")):
            found = len(measured)
            if _is_running_text(paragraph):
                # Sentence by sentence: a translated instruction often ends in code or a link.
                for sentence in _SENTENCE_END.split(paragraph):
                    if not _is_prose(sentence):
                        continue
                    words = _WORD.findall(canonical(sentence))
                    if len(words) >= MIN_WORDS:
                        measured.append((key, words, _share(words)))
            if len(measured) == found:
                words = _WORD.findall(canonical(" ".join(_word_runs(paragraph))))
                if len(words) >= MIN_WORDS:
                    pooled.append((key, words, _share(words)))
    english = [share for _, words, share in measured if len(words) >= MIN_ENGLISH_WORDS]
    measured += pooled
    if len(english) < 2 or median(english) < ENGLISH_SOURCE:
        return {}
    held: dict[str, str] = {}
    for key, words, share in measured:
        if key in held or share >= FOREIGN:
            continue
        if sum(1 for word in words if _LATIN.fullmatch(word)) < len(words) * 0.8:
            continue
        if sum(1 for word in words if word in _READ_LANGUAGES) >= 2:
            continue
        longer = [word for word in words if len(word) >= 3]
        if common and sum(1 for word in longer if word in common) >= COMMON * len(longer):
            continue
        held[key] = (
            "written in a language the review cannot read, inside a source in English "
            f"({round(share * 100)}% of its words are English function words)"
        )
    return held


def _is_running_text(paragraph: str) -> bool:
    """Lines of sentences: not a literal block, a prompt, a heading, a list or a table."""
    lines = [line for line in paragraph.split("\n") if line.strip()]
    if not lines or any(line.startswith(("  ", "\t")) for line in lines):
        return False
    if paragraph.lstrip().startswith((">>>", "...", "$ ", "#", "-", "*", "=", "|", "..")):
        return False
    return sum(len(line.split()) for line in lines) >= 5 * len(lines)


def _word_runs(paragraph: str) -> list[str]:
    """The words of `paragraph` that come in runs of plain words, wherever they stand.

    A language is told by its words, whether they fill one long sentence, several short lines
    or the comments and strings of a piece of code. Identifiers, numbers, options and markup
    break a run, and so does a capital letter, so a list of settings or of names yields nothing.
    """
    found: list[str] = []
    for line in paragraph.split("\n"):
        tokens = line.split()
        runs: list[str] = []
        run: list[str] = []
        for token in [*tokens, ""]:
            word = token.strip(_QUOTES).rstrip(_STOPS).strip(_QUOTES)
            if word.isalpha() and word.islower():
                run.append(word)
                if token.strip(_QUOTES) == word:
                    continue
            runs += run if len(run) >= MIN_RUN_WORDS else []
            run = []
        # A line mostly of other tokens is a list of names or paths that happens to hold a
        # few plain ones.
        if len(runs) >= RUN_SHARE * len(tokens):
            found += runs
    return found


def _is_prose(sentence: str) -> bool:
    """Words, mostly lower case: not code, identifiers or a list of names."""
    tokens = [token.strip(".,;:!?'\"()“”‘’«»") for token in sentence.split()]
    tokens = [token for token in tokens if token]
    if len(tokens) < MIN_WORDS:
        return False
    words = [token for token in tokens if token.isalpha()]
    capitalised = sum(1 for word in words if word[0].isupper())
    return len(words) >= 0.9 * len(tokens) and capitalised <= 0.3 * len(words)
