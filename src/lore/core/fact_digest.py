"""Offline summaries that keep what a turn established: its names, numbers and cited notes.

Without a model to write summaries, a turn is reduced to what a later question could need: the
question's own words, then the answer's sentences richest in facts (numbers, names, the
question's words), written telegraphically (stopwords left out, negations and comparisons
kept), and the titles of the notes the answer cited:

    Mars moons? → Two: Phobos Deimos. (notes: Mars, Phobos and Deimos)

Summaries of summaries keep each part's densest line first, so every stretch of the past is
still named, then as many further lines as fit, in the order they were asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from functools import lru_cache
from itertools import chain, repeat
from operator import add, itemgetter
from typing import NamedTuple, TypeVar

from lore.core.dataclass_lite import dataclass_own_init
from lore.core.passages import STOPWORDS, words
from lore.core.stemming import stem_word
from lore.core.tokens import estimate_from_counts, estimate_tokens, text_counts

_LEAD = re.compile(r"^\s*From the notes:\s*", re.IGNORECASE)
_UNVERIFIED = " (from an unverified source)"
_EDGE_PUNCTUATION = re.compile(r"^\W+|\W+$")
# The ASCII characters that are not word characters: those `_EDGE_PUNCTUATION` strips.
_ASCII_EDGES = "".join(chr(code) for code in range(128) if not re.match(r"\w", chr(code)))
# Small words that change what a fact says, kept when the rest are left out.
_KEPT_TEXT = "no not nor never without than more less most least only all none"
_KEPT = frozenset(_KEPT_TEXT.split())
# A turn's question takes at most this share of its digest, its cited notes this much.
_QUESTION_SHARE = 0.35
_NOTES_SHARE = 0.25
_MAX_CITED = 3
_V = TypeVar("_V")


class _Read(dict[str, _V]):
    """What `read` makes of each text, made once: a dict, emptied when it holds `limit`.

    A history repeats its words and sentences, and a digest looks each up again and
    again: a plain dict's lookup costs half of an LRU cache's, and a long history's words
    and sentences fit within the limit, so none is ever read twice."""

    def __init__(self, read: Callable[[str], _V], limit: int) -> None:
        super().__init__()
        self.read = read
        self.limit = limit

    def __missing__(self, text: str) -> _V:
        if len(self) >= self.limit:
            self.clear()
        value = self[text] = self.read(text)
        return value


# Sentences, tokens and stems a digest has read, as many as a history of 100,000 turns of
# real notes holds: past that they are read again, which costs far more than they weigh.
_MAX_SENTENCES = 1 << 17
_MAX_TOKENS = 1 << 17
_MAX_STEMS = 1 << 17
_MAX_QUESTIONS = 1 << 16
_known_stems: _Read[str] = _Read(stem_word, _MAX_STEMS)
_stem = _known_stems.__getitem__

_Size = tuple[int, int, int]


def _size(text: str) -> _Size:
    """What `estimate_tokens` counts in `text`: characters, words, characters outside ASCII."""
    characters = len(text)
    outside = 0 if text.isascii() else characters - len(text.encode("ascii", "ignore"))
    return characters, len(text.split()), outside


@dataclass_own_init(slots=True)
class _Tally:
    """The estimate of parts joined by one space or newline each, kept as parts are added.

    The estimate of a join depends only on its total characters, words and characters
    outside ASCII, so a greedy choice tries each candidate in constant time instead of
    joining and counting the whole trial again.
    """

    parts: int = 0
    characters: int = 0
    words: int = 0
    outside: int = 0

    def tokens_with(self, size: _Size) -> int:
        characters = self.characters + size[0] + (1 if self.parts else 0)
        words = self.words + size[1]
        # estimate_tokens: max(ceil(characters / 4), ceil(words * 1.3), outside ASCII).
        return max(-(-characters // 4), -(-words * 13 // 10), self.outside + size[2])

    def add(self, size: _Size) -> None:
        self.characters += size[0] + (1 if self.parts else 0)
        self.words += size[1]
        self.outside += size[2]
        self.parts += 1


class _Token(NamedTuple):
    """What a digest asks of one whitespace-separated token, worked out once per token.

    Sentences are lists of these, and what a sentence weighs and measures is summed by
    `map` over the fields below, so no Python code runs per word once it was seen.
    """

    # First the two fields reading a sentence takes from each of its tokens, so that both
    # are in the cache line holding the tuple's start.
    # Its characters, characters outside ASCII and weight in one number (see `_FIELD_BITS`),
    # so that a sentence sums the three in one pass over its tokens.
    packed: int
    # The stems of its words, of those that are not stopwords (`content_stems`), and the
    # stem and capital of the token without its edges (where that is several words of
    # ASCII, its lowercase text: what a question's word can match is the same, as neither
    # is a word's stem).
    stems: tuple[str, ...]
    text: str
    characters: int
    outside: int
    # Not a stopword once its edge punctuation is stripped, or one of the words kept.
    telling: bool
    digit: bool
    capital: bool
    content_stems: tuple[str, ...]
    bare_stem: str
    bare_capital: bool
    # Where `_densest_words` ranks it when it is not one of the question's words.
    rank: int
    # What it adds to the weight of a sentence it is not the first word of: two for a
    # number, one for a name.
    weight: int


_PACKED, _STEMS, _TEXT, _CHARACTERS, _OUTSIDE, _TELLING, _DIGIT, _CAPITAL, _CONTENT_STEMS = map(
    itemgetter, range(9)
)
_BARE_STEM = itemgetter(9)
_RANK = itemgetter(11)
_WEIGHT = itemgetter(12)

# A token's characters, characters outside ASCII and weight, each in a field of this many
# bits of one number. In a text shorter than a field holds, no sum of them over its tokens
# carries from one field into the next: characters and characters outside ASCII are at most
# the text's length, and weight at most three for every two characters.
_FIELD_BITS = 21
_FIELD = (1 << _FIELD_BITS) - 1
_PACKED_TEXT = 1 << (_FIELD_BITS - 1)
_CHARACTERS_SHIFT = 2 * _FIELD_BITS

# The order in which `_densest_words` keeps a sentence's words; a word of the question is
# ranked _QUESTION_RANK[True] unless it is a number.
_NUMBER_RANK, _QUESTION_WORD_RANK, _NAME_RANK, _OTHER_RANK = range(4)
_QUESTION_RANK = (_OTHER_RANK, _QUESTION_WORD_RANK)


# A named tuple's constructor is a function of Python calling this one: each of the 100,000s
# of words and sentences read is made without that call.
_new_token = _new_sentence = tuple.__new__


def _read_token(text: str) -> _Token:
    characters = len(text)
    if text.isascii():
        outside = 0
        if text.isalnum():
            # One word, its own bare form: most tokens are read here.
            lowered = text.lower()
            stem = _stem(lowered)
            telling = lowered not in STOPWORDS or lowered in _KEPT
            # Letters and digits only: a digit wherever it is not all letters.
            digit = not text.isalpha()
            capital = text[0].isupper()
            stems = _one_stem(stem)
            return _new_token(
                _Token,
                (
                    _shared((characters << _CHARACTERS_SHIFT) | (2 * digit + capital)),
                    stems,
                    text,
                    characters,
                    0,
                    telling,
                    digit,
                    capital,
                    stems if lowered not in STOPWORDS else (),
                    stem,
                    capital,
                    _NUMBER_RANK if digit else _NAME_RANK if capital else _OTHER_RANK,
                    2 * digit + capital,
                ),
            )
        # What `_EDGE_PUNCTUATION` strips from the edges of ASCII.
        bare = text.strip(_ASCII_EDGES)
        if bare and bare.isalnum():
            # One word in punctuation ("(word", "word,"): all but its text, its size and
            # its capital are the bare word's, read once for every punctuation around it.
            word = _token(bare)
            capital = text[0].isupper()
            weight = 2 * word.digit + capital
            return _new_token(
                _Token,
                (
                    _shared((characters << _CHARACTERS_SHIFT) | weight),
                    word.stems,
                    text,
                    characters,
                    0,
                    word.telling,
                    word.digit,
                    capital,
                    word.content_stems,
                    word.bare_stem,
                    word.capital,
                    word.rank,
                    weight,
                ),
            )
    else:
        outside = characters - len(text.encode("ascii", "ignore"))
        # A token of word characters only has no edge punctuation to strip.
        bare = text if text.isalnum() else _EDGE_PUNCTUATION.sub("", text)
    lowered = bare.lower()
    found = words(text)
    # Several words of ASCII ("os.path"): no word of a question stems to these characters,
    # nor to their stem, which keeps the characters between the words.
    several = text.isascii() and lowered and found != [lowered]
    bare_stem = lowered if several else _stem(lowered)
    # Each once, in a tuple: the garbage collector soon stops looking at a tuple of strings,
    # where a set stays in its view.
    stems = tuple(set(map(_stem, found)))
    content = [word for word in found if word not in STOPWORDS]
    digit = _has_digit(text)
    capital = text[:1].isupper()
    bare_capital = bare[:1].isupper()
    return _new_token(
        _Token,
        (
            _shared(
                (characters << _CHARACTERS_SHIFT) | (outside << _FIELD_BITS) | (2 * digit + capital)
            ),
            stems,
            text,
            characters,
            outside,
            lowered not in STOPWORDS or lowered in _KEPT,
            digit,
            capital,
            stems if len(content) == len(found) else tuple(set(map(_stem, content))),
            bare_stem,
            bare_capital,
            _NUMBER_RANK if digit else _NAME_RANK if bare_capital else _OTHER_RANK,
            2 * digit + capital,
        ),
    )


_known_tokens: _Read[_Token] = _Read(_read_token, _MAX_TOKENS)
_token = _known_tokens.__getitem__
# One object for each packed number, and for each stem alone in a tuple, however many
# tokens share it: reading a sentence sums and gathers these for each of its tokens, and a
# few hundred numbers stay in the processor's cache where 100,000s of copies would not.
_known_numbers: dict[int, int] = {}
_known_one_stems: _Read[tuple[str, ...]] = _Read(lambda stem: (stem,), _MAX_STEMS)
_one_stem = _known_one_stems.__getitem__


def _shared(number: int) -> int:
    if len(_known_numbers) >= _MAX_TOKENS:
        _known_numbers.clear()  # as `_Read` does: a history of every size of token
    return _known_numbers.setdefault(number, number)


# A sentence ends at a line break, or at a full stop, question or exclamation mark followed
# by whitespace: the rule of `lore.core.passages.split_sentences`, which a test holds this to.
# A pattern that starts with the mark is found by a fast scan where a look-behind is tried
# at every character.
_SENTENCE_MARK = re.compile(r"([.!?。！？])\s+")
# The same rule for text whose only mark is the full stop, most answers: the scan for a
# pattern that starts with one character is a tight loop, where one that starts with a set
# of characters calls a function for each character.
_FULL_STOP = re.compile(r"(\.)\s+")


def _sentences(text: str) -> list[str]:
    """`split_sentences(text)`, in a fraction of its time."""
    return list(filter(None, map(str.strip, _sentence_pieces(text))))


def _sentence_pieces(text: str) -> list[str]:
    """The sentences of `text` with their edge whitespace, and empty pieces between them."""
    # Text, mark, text, mark, …, text: each sentence keeps its mark, and the sentences are
    # put on lines of their own, so that one split cuts at the marks and the line breaks.
    if text.isascii() and "!" not in text and "?" not in text:
        pieces = _FULL_STOP.split(text)
    else:
        pieces = _SENTENCE_MARK.split(text)
    marks = pieces[1::2]
    marks.append("")
    sentences = map(add, pieces[::2], marks)
    if "\n" not in text:
        return list(sentences)
    return "\n".join(sentences).split("\n")


def _telling_tokens(text: str) -> list[_Token]:
    return list(filter(_TELLING, map(_token, text.split())))


def telegraphic(text: str) -> str:
    """`text` without its stopwords; numbers, names, negations and comparisons stay."""
    return " ".join(map(_TEXT, _telling_tokens(text)))


def _has_digit(token: str) -> bool:
    # Letters are never digits: most tokens are decided without looking at each character.
    return not token.isalpha() and any(map(str.isdigit, token))


class _Sentence(NamedTuple):
    """What a digest asks of one sentence of an answer, worked out once per sentence.

    Answers quote notes, so a history holds the same sentences many times, and a long one
    100,000 different ones: each is kept as no more than what weighs and measures it, so
    that every sentence of a long history stays read at once in a few tens of MB.
    """

    # Its telling tokens: what a digest writes of it, whole or its densest words. A tuple
    # of the tokens already read weighs no more than their text joined, and a sentence too
    # long for its digest is cut from it without reading its words again.
    tokens: tuple[_Token, ...]
    # The `_size` of its tokens joined by spaces.
    characters: int
    words: int
    outside: int
    # How much it states before the question's words are counted (three each): two for
    # each number, one for each name after its first word.
    weight: int
    # The stems of its tokens' words, for the words it shares with the question.
    stems: tuple[str, ...]

    @property
    def text(self) -> str:
        """Its telling tokens joined by spaces: what a digest writes when it fits."""
        return " ".join(map(_TEXT, self.tokens))


def _read_sentence(text: str) -> _Sentence | None:
    """The sentence `text` as a digest reads it; None if it has no telling word."""
    tokens = tuple(filter(_TELLING, map(_token, text.split())))
    if not tokens:
        return None
    if len(text) < _PACKED_TEXT:
        packed = sum(map(_PACKED, tokens))
        characters = packed >> _CHARACTERS_SHIFT
        outside = (packed >> _FIELD_BITS) & _FIELD
        weight = packed & _FIELD
    else:
        characters = sum(map(_CHARACTERS, tokens))
        outside = sum(map(_OUTSIDE, tokens))
        weight = sum(map(_WEIGHT, tokens))
    return _new_sentence(
        _Sentence,
        (
            tokens,
            characters + len(tokens) - 1,
            len(tokens),
            outside,
            weight - tokens[0].capital,
            tuple(chain.from_iterable(map(_STEMS, tokens))),
        ),
    )


_known_sentences: _Read[_Sentence | None] = _Read(_read_sentence, _MAX_SENTENCES)
_sentence = _known_sentences.__getitem__


# A citation, found by the bracket it starts with; the whitespace before it goes with it.
_CITATION = re.compile(r"\[\d+(?:\s*,\s*\d+)*\]")


def _without_citations(text: str) -> str:
    """`text` without its citation marks ("[2]", "[1, 3]") and one whitespace before each."""
    if "[" not in text:
        return text
    pieces = _CITATION.split(text)
    if len(pieces) == 1:
        return text
    last = pieces.pop()
    # What came before each citation, without the whitespace character just before it.
    kept = [piece[:-1] if piece[-1:].isspace() else piece for piece in pieces]
    kept.append(last)
    return "".join(kept)


def _fits(text: str, limit: int) -> str:
    """The longest prefix of whole words of `text` within `limit` tokens ("" if none)."""
    if estimate_tokens(text) <= limit:
        return text
    return " ".join(map(_TEXT, _fitting(list(map(_token, text.split())), limit)))


def _fitting(tokens: list[_Token], limit: int) -> list[_Token]:
    """The longest prefix of `tokens` whose texts joined by spaces fit `limit` tokens.

    Each term of the estimate only grows with each word, so the prefix ends before the
    first word that breaks one: no more than `limit / 1.3` words, `4 * limit` characters
    with the spaces, and `limit` characters outside ASCII.
    """
    tokens = tokens[: max(0, limit * 10 // 13)]
    # What the characters may still grow by: the first word needs no space before it.
    room = 4 * limit + 1
    outside = 0
    kept = 0
    for token in tokens:
        room -= token.characters + 1
        outside += token.outside
        if room < 0 or outside > limit:
            break
        kept += 1
    return tokens[:kept]


def _densest_words(sentence: _Sentence, limit: int, question_terms: AbstractSet[str]) -> str:
    """The words of a sentence that say most (numbers, the question's words, names), in
    their order, within `limit` tokens."""
    tokens = sentence.tokens
    ranks = list(map(_RANK, tokens))
    if question_terms and not question_terms.isdisjoint(map(_BARE_STEM, tokens)):
        # A word of the question ranks after the numbers and before the names.
        asked = map(question_terms.__contains__, map(_BARE_STEM, tokens))
        ranks = list(map(min, ranks, map(_QUESTION_RANK.__getitem__, asked)))
    order = sorted(range(len(tokens)), key=ranks.__getitem__)
    most = limit * 10 // 13
    room = 4 * limit
    # Each word is kept if it still fits. No more than `most` words ever fit the estimate,
    # so when the first `most` in order fit together, they are the ones kept.
    first = order[: max(0, most)]
    characters = sum(map(_CHARACTERS, map(tokens.__getitem__, first))) + len(first) - 1
    # Characters outside ASCII are counted only in sentences that have some.
    outside = sum(map(_OUTSIDE, map(tokens.__getitem__, first))) if sentence.outside else 0
    if characters <= room and outside <= limit:
        kept = first
    else:
        # The estimate written out as in `_Tally`; once not one more word or character
        # fits, nothing further can be kept.
        kept = []
        characters = -1
        outside = 0
        # `first` did not fit: so `most` is at least 1, or there is no room for a word.
        left = most
        for position in order:
            if characters + 2 > room:
                break
            token = tokens[position]
            after = characters + 1 + token.characters
            if after <= room and outside + token.outside <= limit:
                characters = after
                outside += token.outside
                kept.append(position)
                left -= 1
                if not left:
                    break
    kept.sort()
    return " ".join(map(_TEXT, map(tokens.__getitem__, kept)))


@lru_cache(maxsize=_MAX_QUESTIONS)
def _question(question: str, max_tokens: int) -> tuple[str, frozenset[str], int]:
    """A question as a digest of `max_tokens` writes it, the stems of its words that are not
    stopwords, and the room the line leaves for the answer's facts when it names no note.
    Histories ask the same questions again: each is read once."""
    limit = max(1, int(max_tokens * _QUESTION_SHARE))
    tokens = list(map(_token, question.split()))
    # Without its stopwords, or as asked if it has nothing else; as much as fits.
    kept = _fitting(list(filter(_TELLING, tokens)) or tokens, limit)
    asked = " ".join(map(_TEXT, kept))
    # Gathered word by word, as each token knows its stems.
    wanted = frozenset(chain(*map(_CONTENT_STEMS, tokens)))
    # The estimate of f"{asked} → ", from what its words measure: " → " adds three
    # characters, one word and one character outside ASCII.
    line = estimate_from_counts((len(asked) + 3, len(kept) + 1, sum(map(_OUTSIDE, kept)) + 1))
    return asked, wanted, max_tokens - line


def fact_digest(
    question: str,
    answer: str,
    cited: Sequence[str],
    max_tokens: int,
    title_of: Callable[[str], str | None] = lambda note_id: None,
) -> str:
    """One line standing for a turn, within `max_tokens`, keeping its facts."""
    asked, wanted, room = _question(question, max_tokens)
    notes = ""
    if cited:
        titles = [title for title in map(title_of, cited[:_MAX_CITED]) if title]
        if titles:
            notes = _notes(tuple(titles), max_tokens)
            room = max_tokens - estimate_tokens(f"{asked} → {notes}")
    lead = _LEAD.match(answer)
    answer = _without_citations(answer[lead.end() :] if lead else answer)
    answer = answer.replace(_UNVERIFIED, "")
    # Each sentence as its telling tokens: only the sentences chosen are ever joined.
    sentences = [
        found
        for found in map(_sentence, map(str.strip, _sentence_pieces(answer)))
        if found is not None
    ]
    if not sentences:
        return _joined(asked, "", notes)
    # By weight, the question's words counting most; of equal weight, the earlier first.
    if wanted:
        scores = [
            -found.weight
            if wanted.isdisjoint(found.stems)
            else -3 * len(wanted.intersection(found.stems)) - found.weight
            for found in sentences
        ]
    else:
        scores = [-found.weight for found in sentences]
    # The first of the highest: most often the only one that can be written, in part.
    first = min(range(len(sentences)), key=scores.__getitem__)
    richest = sentences[first]
    characters, words, outside = richest.characters, richest.words, richest.outside
    if max(-(-characters // 4), -(-words * 13 // 10), outside) > room:
        # Not even the richest sentence fits whole: its most telling words, then.
        return _joined(asked, _densest_words(richest, room, wanted), notes)
    # As many more as fit, the `_Tally` of those chosen written out.
    ranked = sorted(zip(scores, range(len(sentences)), strict=True))
    chosen = [first]
    for _, index in ranked[1:]:
        found = sentences[index]
        after = characters + 1 + found.characters
        more = found.words
        tokens = max(-(-after // 4), -(-(words + more) * 13 // 10), outside + found.outside)
        if tokens <= room:
            characters = after
            words += more
            outside += found.outside
            chosen.append(index)
    chosen.sort()
    return _joined(asked, " ".join([sentences[index].text for index in chosen]), notes)


@lru_cache(maxsize=4_096)
def _notes(titles: tuple[str, ...], max_tokens: int) -> str:
    """As many of the cited notes' titles as fit their share, the first cited always tried."""
    for count in range(len(titles), 0, -1):
        candidate = f"(notes: {', '.join(titles[:count])})"
        if estimate_tokens(candidate) <= max(max_tokens * _NOTES_SHARE, 6):
            return candidate
    return ""


def _joined(asked: str, facts: str, notes: str) -> str:
    line = f"{asked} → {facts}" if facts else asked
    return f"{line} {notes}" if notes else line


# What `_line` counts without reading a line's words one by one, in lines whose only
# characters outside ASCII are the arrows digests are written with: neither is a number, a
# capital or whitespace, so a token holds a number when it holds an ASCII digit, and a name
# starts wherever a capital follows whitespace.
_ARROW = "→"
_NUMBER_TOKEN = re.compile(r"[0-9]\S*")
_NAME_AFTER_SPACE = re.compile(r"\s[A-Z]")


@lru_cache(maxsize=16_384)
def _line(text: str) -> tuple[int, _Size]:
    """A summary line's density (two for each number, one for each name after its first
    word, as a sentence of an answer is weighed before the question's words) and its size.

    Summaries of summaries weigh the lines of those below them: a line chosen at one level
    is weighed again at every level above."""
    size = text_counts(text)
    if size[2] and size[2] != text.count(_ARROW):
        tokens = list(map(_token, text.split()))
        return 2 * sum(map(_DIGIT, tokens)) + sum(map(_CAPITAL, tokens[1:])), size
    names = len(_NAME_AFTER_SPACE.findall(text))
    if names and text[:1].isspace() and text.lstrip()[:1].isupper():
        names -= 1  # the first word is a name, after whitespace
    return 2 * len(_NUMBER_TOKEN.findall(text)) + names, size


def forget_words() -> None:
    """Let go of the words, sentences and questions read so far.

    They serve the digests and summaries of one history, which repeats them; kept after
    it, a long history's would stay in memory for nothing, and make every later pass of
    the garbage collector and the end of the process slower."""
    for known in (_known_tokens, _known_stems, _known_one_stems, _known_sentences):
        known.clear()
    _known_numbers.clear()
    for cache in (_question, _notes, _line):
        cache.cache_clear()


def forget_sentences() -> None:
    """Let go of the sentences and questions read so far, keeping their words.

    Once a history's turns are digested, only summaries of summaries read on, from lines
    of the same words: its 100,000s of sentences would only hold memory those need."""
    _known_sentences.clear()
    for cache in (_question, _notes):
        cache.cache_clear()


def roll_up(texts: Sequence[str], max_tokens: int) -> str:
    """One summary of several, within `max_tokens`: each part's densest line first, then
    further lines by their facts, all in the order they were written."""
    # The lines in the order they were written, and where each part's lines end among them.
    lines: list[str] = []
    ends: list[int] = []
    for text in texts:
        written = list(filter(None, map(str.strip, text.split("\n"))))
        if not written:
            continue
        if all(map(str.startswith, written, repeat("- "))):
            lines += written
        else:
            lines += [line if line.startswith("- ") else f"- {line}" for line in written]
        ends.append(len(lines))
    if not lines:
        return ""
    found = list(map(_line, lines))
    density = [weight for weight, _ in found]
    sizes = [size for _, size in found]
    # Each part's densest line, the first of equal ones, then the others by density, those
    # of equal density in the order they were written.
    leads = [
        max(range(start, end), key=density.__getitem__)
        for start, end in zip([0, *ends], ends, strict=False)
    ]
    chosen_first = set(leads)
    others = [index for index in range(len(lines)) if index not in chosen_first]
    others.sort(key=density.__getitem__, reverse=True)
    chosen: list[tuple[int, str]] = []
    # Once not even the shortest line fits, no further line can be chosen.
    fewest_characters = min(size[0] for size in sizes)
    fewest_words = min(size[1] for size in sizes)
    # The `_Tally` of the lines chosen, written out: this loop runs for every line.
    characters = -1
    words = 0
    outside = 0
    for index in chain(leads, others):
        if chosen and (
            13 * (words + fewest_words) > 10 * max_tokens
            or characters + 1 + fewest_characters > 4 * max_tokens
        ):
            break
        size = sizes[index]
        after = characters + 1 + size[0]
        if max(-(-after // 4), -(-(words + size[1]) * 13 // 10), outside + size[2]) <= max_tokens:
            characters = after
            words += size[1]
            outside += size[2]
            chosen.append((index, lines[index]))
        elif not chosen:
            cut = _fits(lines[index], max_tokens)
            if cut:
                chosen = [(index, cut)]
                characters, words, outside = _size(cut)
    chosen.sort()
    return "\n".join(text for _, text in chosen)
