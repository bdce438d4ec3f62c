"""Text in a language the gates cannot read, inside a source they can.

Instructions translated into a language few filters know are a common way past them. The
review gate reads eight languages; a claim written in none of them, inside a source that is
otherwise in English or in another script (a Chinese translation), is held for a person to
read. A source written wholly in another language is left alone: it is a translation, not a
hiding place. Where no sentence is long
enough to tell a language by (short lines, the comments of a piece of code), the runs of
plain words in a paragraph are pooled and judged together; a short sentence is told by the
letters of its words. A source without enough prose to tell its own language by (a table,
an inbox) counts as English when most of its other words are, and a paragraph that is a
small part of its source's words is not the source's language, whatever the rest is. In a
source written in a language the rules read (an Italian translation), a paragraph is held
only when it is none of those languages beyond doubt: long, without their common words, and
spelt with runs of letters that neither the rest of the source nor English uses. A short
quotation is left out of the sentence around it: it is in the language it quotes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from statistics import fmean, median

from lore.core.gates.canonical import canonical

_WORD = re.compile(r"[^\W\d_]+")
_LATIN = re.compile(r"[a-z\u00c0-\u024f\u1e00-\u1eff]+")
_LATIN_LETTERS = re.compile(r"[a-zA-Z\u00c0-\u024f\u1e00-\u1eff]+")
_OTHER_LETTERS = re.compile(r"[^\W\d_a-zA-Z\u00c0-\u024f\u1e00-\u1eff]+")


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
# Their shortest common words, too short to tell one of them by but rare elsewhere: a
# sentence in one of them of MIN_WORDS words or more nearly always has one.
_READ_LANGUAGES_SHORT = _words("y se al el en es que un è et du au zu im von auch lo ha")
_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+")
# Enough words to tell a language by; a source counts as English on longer paragraphs.
MIN_WORDS = 9
MIN_ENGLISH_WORDS = 12
# Shorter sentences are told by the shape of their words instead (see `_unseen_share`): at
# least this many words, and this share of the letter triples of those of three letters or
# more unknown to English words (English sentences stay under a twentieth).
SHORT_WORDS = 5
SHORT_UNSEEN = 0.1
SHORT_UNSEEN_BESIDE_FAMILIAR = 0.25
_ENGLISH_SHORT = _words("a an is in i my me it no so us am")
# Marks of code in a sentence: `inl(), inw(), outb()` is a list of functions, not a language.
_CODE_MARK = re.compile(r"[()\[\]{}_=/<>\\`|#$]")
# Or this many words in English sentences of any length, most of the source's running text.
ENGLISH_SOURCE_WORDS = 24
# Or, with no running text to tell by, this many words in the rest of the source, this share
# of them English function words (names, addresses and figures around them).
PLAIN_WORDS = 30
PLAIN_SHARE = 0.1
# Paragraphs that may be another language, under this share of the source's words, are not
# its own language, whatever the rest (a table, a list of parts) is written in.
SMALL_PART = 0.2
# In a source in a language the rules read, this share of a paragraph's letter triples must
# be unknown to the rest of the source and to English alike (a paragraph of Gaelic inside an
# Italian translation has a fifth or more; Italian paragraphs of Italian sources under 0.13).
THIRD_LANGUAGE_UNSEEN = 0.16
# The rest of such a source must have this many distinct words to measure a paragraph by.
THIRD_LANGUAGE_CONTEXT = 50
# A character of Chinese or Japanese says about as much as this many Latin letters.
LETTERS_PER_CHARACTER = 3
# Shares of a paragraph's words that are English function words.
ENGLISH_SOURCE = 0.18
FOREIGN = 0.05
COMMON = 0.3
# Fewer words in a row than this are a name, a label or a phrase in code, not a language.
MIN_RUN_WORDS = 3
RUN_SHARE = 0.5
_QUOTES = "'\"“”‘’«»"
_LIST_ITEM = re.compile(r"[*+]\s")
# Words that end in a number name a format or a version in running text: base64, utf-8, x86.
_NAMED_FORMAT = re.compile(r"(?:[^\W\d_]+-)*[^\W\d_]+-?\d+")
_STOPS = ".,;:!?"
# A short quotation is in the language of what it quotes ("starting with 'You are'"), not of
# the sentence around it.
_QUOTATION = re.compile(
    r"(?<!\w)(?:'[^'\n]{1,40}'|\"[^\"\n]{1,40}\"|“[^”\n]{1,40}”|‘[^’\n]{1,40}’)(?!\w)"
)


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
    # Every sentence of running text, long or short: (its words, its share of English ones).
    running: list[tuple[int, float]] = []
    # Paragraphs with nothing in them that may be another language.
    plain: list[str] = []
    latin_letters = other_letters = source_words = 0
    texts = list(texts)
    for key, text in texts:
        source_words += len(_LATIN_LETTERS.findall(text))
        latin_letters += sum(map(len, _LATIN_LETTERS.findall(text)))
        other_letters += sum(map(len, _OTHER_LETTERS.findall(text)))
        for paragraph in _PARAGRAPH.split(text.strip("\n")):
            found = len(measured)
            pooled_before = len(pooled)
            if _is_running_text(paragraph):
                # Sentence by sentence: a translated instruction often ends in code or a link.
                for sentence in _SENTENCE_END.split(paragraph):
                    if not _is_prose(sentence):
                        continue
                    words = _WORD.findall(canonical(_QUOTATION.sub(" ", sentence)))
                    if not words:
                        continue
                    running.append((len(words), _share(words)))
                    # A short one must read as a sentence: a capital, if any, only first.
                    if _long_enough(words, common) and (
                        len(words) >= MIN_WORDS or _lower_after_first(sentence)
                    ):
                        measured.append((key, words, _share(words)))
            if len(measured) == found:
                runs = _word_runs(paragraph)
                words = _WORD.findall(canonical(" ".join(word for run in runs for word in run)))
                # Too few words pooled to be a sentence must be one run of them, not names
                # from several (`hdisp hsyncstart … vdisp vsyncstart …`).
                longest = max((len(run) for run in runs), default=0)
                if _long_enough(words, common) and (
                    len(words) >= MIN_WORDS or longest >= SHORT_WORDS
                ):
                    pooled.append((key, words, _share(words)))
            found_here = measured[found:] + pooled[pooled_before:]
            if all(share >= FOREIGN for _, _, share in found_here):
                plain.append(paragraph)
    measured += pooled
    if not any(share < FOREIGN for _, _, share in measured):
        return {}
    # A source largely in another script (a Chinese translation) is in no Latin-script
    # language, so a paragraph in one the review cannot read is not its own either.
    other_script = other_letters * LETTERS_PER_CHARACTER >= latin_letters
    in_read_language = False
    if (
        not other_script
        and not _english_source(running)
        and not _mostly_english(plain)
        and not _a_small_part(measured, source_words)
    ):
        if not _read_language_source(measured, source_words):
            return {}
        in_read_language = True
    held: dict[str, str] = {}
    for key, words, share in measured:
        if key in held or share >= FOREIGN:
            continue
        if sum(1 for word in words if _LATIN.fullmatch(word)) < len(words) * 0.8:
            continue
        if _in_a_read_language(words):
            continue
        longer = [word for word in words if len(word) >= 3]
        if common and sum(1 for word in longer if word in common) >= COMMON * len(longer):
            continue
        if in_read_language and not _a_third_language(key, words, texts, common):
            continue
        source = (
            "another script"
            if other_script
            else "a language the review reads"
            if in_read_language
            else "English"
        )
        held[key] = (
            f"written in a language the review cannot read, inside a source in {source} "
            f"({round(share * 100)}% of its words are English function words)"
        )
    return held


def _a_small_part(measured: list[tuple[str, list[str], float]], source_words: int) -> bool:
    """Whether the paragraphs that may be another language are a small part of the source:
    a translation is written in its language throughout, a hiding place is a paragraph. A
    source whose prose is mostly in a language the rules read (a German handbook) is that
    language's, however its paragraphs are cut."""
    foreign = sum(len(words) for _, words, share in measured if share < FOREIGN)
    read = sum(len(words) for _, words, _ in measured if _in_a_read_language(words))
    prose = sum(len(words) for _, words, _ in measured)
    return foreign <= SMALL_PART * source_words and read < 0.5 * prose


def _beyond_read_languages(words: list[str]) -> bool:
    return len(words) >= MIN_WORDS and not any(
        word in _READ_LANGUAGES or word in _READ_LANGUAGES_SHORT for word in words
    )


def _read_language_source(measured: list[tuple[str, list[str], float]], source_words: int) -> bool:
    """Whether the source's prose is mostly in a language the rules read, with paragraphs
    beyond those languages making up only a small part of it."""
    foreign = sum(
        len(words)
        for _, words, share in measured
        if share < FOREIGN and _beyond_read_languages(words)
    )
    read = sum(len(words) for _, words, _ in measured if _in_a_read_language(words))
    prose = sum(len(words) for _, words, _ in measured)
    return 0 < foreign <= SMALL_PART * source_words and read >= 0.5 * prose


def _a_third_language(
    key: str, words: list[str], texts: list[tuple[str, str]], common: frozenset[str]
) -> bool:
    """Whether `words`, from a source in a language the rules read, are spelt like neither
    the rest of that source nor English: a third language, not an odd paragraph of its own."""
    if not common or not _beyond_read_languages(words):
        return False
    rest = frozenset(
        word
        for other, text in texts
        if other != key
        for word in _WORD.findall(canonical(text))
        if len(word) >= 3
    )
    longer = [word for word in words if len(word) >= 3]
    if len(rest) < THIRD_LANGUAGE_CONTEXT or not longer:
        return False
    seen = _letter_triples(common) | _letter_triples(rest)
    return _unseen_share(longer, seen) >= THIRD_LANGUAGE_UNSEEN


def _in_a_read_language(words: list[str]) -> bool:
    return sum(1 for word in words if word in _READ_LANGUAGES) >= 2


def _english_source(running: list[tuple[int, float]]) -> bool:
    """Whether a source's running text is English: two long English sentences, or (for
    sources of short lines, as mail and calendars are) most of its words in English ones."""
    long_ones = [share for count, share in running if count >= MIN_ENGLISH_WORDS]
    if len(long_ones) >= 2 and median(long_ones) >= ENGLISH_SOURCE:
        return True
    english = sum(count for count, share in running if share >= ENGLISH_SOURCE)
    return english >= ENGLISH_SOURCE_WORDS and english >= 0.5 * sum(c for c, _ in running)


def _mostly_english(paragraphs: list[str]) -> bool:
    """Whether the words of these paragraphs, prose or not (a table of feedback, a list of
    events), are English: enough of them, with English's function words among them."""
    words = [
        word
        for paragraph in paragraphs
        for word in _WORD.findall(canonical(paragraph))
        if _LATIN.fullmatch(word)
    ]
    if len(words) < PLAIN_WORDS:
        return False
    return sum(1 for word in words if word in _ENGLISH) >= PLAIN_SHARE * len(words)


def _long_enough(words: list[str], common: frozenset[str]) -> bool:
    """Enough words to tell their language by: MIN_WORDS, or fewer that look foreign."""
    if len(words) >= MIN_WORDS:
        return True
    if len(words) < SHORT_WORDS or not common:
        return False
    # English's short words ("a", "is", "my") and those of the languages read ("le", "la")
    # turn up in other languages too: one asks for words that look much more foreign, two
    # are a language the review reads.
    familiar = sum(1 for word in words if word in _ENGLISH_SHORT or word in _READ_LANGUAGES)
    if familiar >= 2:
        return False
    # Common words are three letters or more, so shorter ones would all look foreign.
    longer = [word for word in words if len(word) >= 3]
    if len(longer) < SHORT_WORDS - 2:
        return False
    needed = SHORT_UNSEEN_BESIDE_FAMILIAR if familiar else SHORT_UNSEEN
    return _unseen_share(longer, _letter_triples(common)) >= needed


@lru_cache(maxsize=4)
def _letter_triples(common: frozenset[str]) -> frozenset[str]:
    """Every run of three letters in English's common words, with ^ and $ at their ends."""
    found: set[str] = set()
    for word in common:
        marked = f"^{word}$"
        found.update(marked[i : i + 3] for i in range(len(marked) - 2))
    return frozenset(found)


def _unseen_share(words: list[str], triples: frozenset[str]) -> float:
    """How much of the words' letter triples no common English word has, word by word.

    An English word, however rare or technical, is made of the letter runs of other English
    words; a word of Zulu, Gaelic or Albanian has many that none has.
    """

    def unseen(word: str) -> float:
        marked = f"^{word}$"
        runs = [marked[i : i + 3] for i in range(len(marked) - 2)]
        return sum(1 for run in runs if run not in triples) / len(runs)

    return fmean(unseen(word) for word in words)


def _is_running_text(paragraph: str) -> bool:
    """Lines of sentences: not a literal block, a prompt, a heading, a list or a table."""
    lines = [line for line in paragraph.split("\n") if line.strip()]
    if not lines or any(line.startswith(("  ", "\t")) for line in lines):
        return False
    if paragraph.lstrip().startswith((">>>", "...", "$ ", "#", "-", "=", "|", "..")):
        return False
    # A list item, not a line that opens with a row of marks (`*** NEW INSTRUCTIONS ***`).
    if _LIST_ITEM.match(paragraph.lstrip()):
        return False
    return sum(len(line.split()) for line in lines) >= 5 * len(lines)


def _word_runs(paragraph: str) -> list[list[str]]:
    """The runs of plain words in `paragraph`, wherever they stand.

    A language is told by its words, whether they fill one long sentence, several short lines
    or the comments and strings of a piece of code. Identifiers, numbers, options and markup
    break a run, and so does a capital letter, so a list of settings or of names yields nothing.
    """
    found: list[list[str]] = []
    for line in paragraph.split("\n"):
        tokens = line.split()
        runs: list[list[str]] = []
        run: list[str] = []
        for token in [*tokens, ""]:
            word = token.strip(_QUOTES).rstrip(_STOPS).strip(_QUOTES)
            if _is_word(word) and word.islower():
                run.append(word)
                if token.strip(_QUOTES) == word:
                    continue
            if len(run) >= MIN_RUN_WORDS:
                runs.append(run)
            run = []
        # A line mostly of other tokens is a list of names or paths that happens to hold a
        # few plain ones. Marks alone (`***`) and words in capitals (a shouted heading) are
        # neither: they do not count against the plain words.
        counted = [
            token
            for token in tokens
            if any(character.isalnum() for character in token)
            and not (token.isalpha() and token.isupper())
        ]
        if sum(len(run) for run in runs) >= RUN_SHARE * len(counted):
            found += runs
    return found


def _is_word(token: str) -> bool:
    """Letters, or letters joined by hyphens: Gaelic's `a-steach` and English's `well-known`."""
    return token.isalpha() or (
        "-" in token and not token.startswith("-") and token.replace("-", "").isalpha()
    )


def _lower_after_first(sentence: str) -> bool:
    if _CODE_MARK.search(sentence):
        return False
    # A word wholly in capitals is emphasis or an acronym, not an identifier like `VTimings`;
    # so is each part of a hyphenated one (`ID-në`, `i-ID`).
    return not any(
        character.isupper()
        for token in sentence.split()[1:]
        for part in token.strip(_QUOTES + _STOPS).split("-")
        if not part.isupper()
        for character in part
    )


def _is_prose(sentence: str) -> bool:
    """Words, mostly lower case: not code, identifiers or a list of names."""
    tokens = [token.strip(".,;:!?'\"()“”‘’«»") for token in sentence.split()]
    # Marks alone (`***`, `--`) are emphasis or rules, neither words nor code.
    tokens = [token for token in tokens if any(character.isalnum() for character in token)]
    if len(tokens) < SHORT_WORDS:
        return False
    words = [token for token in tokens if _is_word(token) or _NAMED_FORMAT.fullmatch(token)]
    # A word wholly in capitals is shouted, not a name.
    capitalised = sum(1 for word in words if word[0].isupper() and not word.isupper())
    return len(words) >= 0.9 * len(tokens) and capitalised <= 0.3 * len(words)
