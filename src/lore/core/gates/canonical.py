"""Canonical text for the gates: a claim as a model or a reader would actually perceive it.

An attacker hides an instruction from rules and detectors by writing it in a form that people
and models still read: look-alike letters from other scripts, zero-width characters inside
words, fullwidth or mathematical letters, spaced-out or leet spellings, or an encoding (base64,
hex, rot13, percent-encoding, escapes) that a model will decode unasked. `canonical` folds
the surface tricks away; `views` adds each hidden layer it can decode, so the gates judge the
plain text and every layer beneath it alike.
"""

from __future__ import annotations

import base64
import binascii
import html
import math
import re
import string
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterator

from lore.core.dataclass_lite import dataclass_own_init


@dataclass_own_init(frozen=True, slots=True)
class View:
    """One reading of a text. `how` names what was decoded: "" for the text itself, nested
    layers joined by "+" ("base64+hex" is hex found inside base64)."""

    how: str
    text: str


# Decoding is bounded so a crafted claim cannot make admission slow or large.
_DECODE_BUDGET = 64 * 1024
_MAX_DEPTH = 2
_MAX_VIEWS = 32

# --- what a reader cannot see -------------------------------------------------------------

# Zero-width and format characters, bidi controls, soft hyphen, Hangul fillers, variation
# selectors and the Unicode tag block (which can spell out whole hidden sentences).
_INVISIBLE_CHARS = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_INVISIBLE = re.compile(f"[{_INVISIBLE_CHARS}]")
_JOINER = re.compile("[\u200c\u200d]")
# Removed first, so a joiner's neighbours are the letters or emoji it stands between.
_INVISIBLE_BUT_JOINERS = re.compile(f"(?![\u200c\u200d])[{_INVISIBLE_CHARS}]")
# Controls other than whitespace. Terminal colour and cursor sequences carry no text and go
# whole; other controls go one by one, so the payload of a title or hyperlink sequence stays
# visible to the gates.
_CONTROL_CHARS = "\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f"
_CONTROL = re.compile(f"\x1b\\[[0-?]*[ -/]*[@-~]|[{_CONTROL_CHARS}]")
_ASCII_CONTROLS = bytes(range(0x09)) + bytes(range(0x0E, 0x1C)) + b"\x7f"
_HIDDEN_CHAR = re.compile(f"[{_INVISIBLE_CHARS}{_CONTROL_CHARS}]")
# Scripts in which ZWJ and ZWNJ shape letters, so removing them would change the word.
_JOINING_SCRIPT = re.compile("[\u0600-\u08ff\u0900-\u0dff\u1800-\u18af\ufb50-\ufdff\ufe70-\ufefc]")

# --- letters that look like Latin ones ----------------------------------------------------

# Latin-script look-alikes (small capitals, IPA letters, boxed emoji letters): always folded.
# Their capitals (Ɑ, Ɡ, …) are listed too, as casefolding would turn them into look-alikes.
_LATIN_LIKE_PAIRS = "ɑaɡgıiȷjɩiᴀaʙbᴄcᴅdᴇeꜰfɢgʜhɪiᴊjᴋkʟlᴍmɴnᴏoᴘpʀrꜱsᴛtᴜuᴠvᴡwʏyᴢzⱭAꞬGꞮIƖIƦR"
_LATIN_LIKE = str.maketrans(
    dict(zip(_LATIN_LIKE_PAIRS[::2], _LATIN_LIKE_PAIRS[1::2], strict=True))
    | {0x1F150 + i: chr(ord("A") + i) for i in range(26)}
    | {0x1F170 + i: chr(ord("A") + i) for i in range(26)}
)
_LATIN_LIKE_CHAR = re.compile(
    f"[{re.escape(_LATIN_LIKE_PAIRS[::2])}\U0001f150-\U0001f169\U0001f170-\U0001f189]"
)
# Letters of other scripts that pass for Latin. Folded only inside words that mix them with
# Latin letters, or in whole look-alike words set in Latin text, so Russian stays Russian.
_LOOKALIKE_PAIRS = (
    # Cyrillic
    "аaеeоoрpсcуyхxіiјjѕsԁdһhԛqԝwӏlүyѡw"
    "АAВBЕEКKМMНHОOРPСCТTХXУYІIЈJЅSԚQԜWҮYӀIҺH"
    # Greek
    "οoαaιiνvρpυuχxϲcϳjγyΑAΒBΕEΖZΗHΙIΚKΜMΝNΟOΡPΤTΥYΧXϹCͿJ"
    # Armenian
    "օoսuհhոnզqցgՕOՍUԼL"
    # Cherokee
    "ᎪAᏴBᏟCᎠDᎬEᎻHᎥiᎫJᏦKᏞLᎷMᏢPᎡRᏚSᎢTᏙVᎳWᏔWᏃZ"
    # Lisu
    "ꓐBꓑPꓓDꓔTꓖGꓗKꓙJꓚCꓜZꓝFꓟMꓠNꓡLꓢSꓣRꓦVꓧHꓪWꓫXꓬYꓮAꓰEꓲIꓳOꓴU"
)
_LOOKALIKES = str.maketrans(dict(zip(_LOOKALIKE_PAIRS[::2], _LOOKALIKE_PAIRS[1::2], strict=True)))
_LOOKALIKE_SET = re.escape(_LOOKALIKE_PAIRS[::2])
_LOOKALIKE = re.compile(f"[{_LOOKALIKE_SET}]")
_LATIN_RANGE = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"
_LATIN_LETTER = re.compile(f"[{_LATIN_RANGE}]")
_NATIVE_LETTER = re.compile(f"[^\\W\\d_{_LATIN_RANGE}{_LOOKALIKE_SET}]")
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_COMBINING = re.compile(f"[{_MARKS}]")
_WORD = re.compile(f"[\\w{_MARKS}]+")
_LATIN_WITH_MARKS = re.compile(f"([a-z])([{_MARKS}]+)")


def canonical(text: str) -> str:
    """`text` folded to what a reader perceives: NFKC, casefolded, hidden characters removed,
    look-alike letters turned Latin, whitespace runs collapsed to one space."""
    return " ".join(_fold(_visible(text)).split())


def _visible(text: str) -> str:
    """Without hidden characters, in NFKC, case kept (encodings are case-sensitive)."""
    if text.isascii():
        if len(text.encode("ascii").translate(None, _ASCII_CONTROLS)) == len(text):
            return text
        return _CONTROL.sub("", text)
    if _HIDDEN_CHAR.search(text):
        text = _drop_invisible(_CONTROL.sub("", text))
    return unicodedata.normalize("NFKC", text)


def _fold(visible: str) -> str:
    """Casefolded with look-alikes and stray combining marks folded; whitespace kept."""
    if visible.isascii():
        return visible.lower()
    if _LATIN_LIKE_CHAR.search(visible):
        visible = visible.translate(_LATIN_LIKE)
    text = _fold_lookalike_words(visible).casefold()
    if _COMBINING.search(text):
        text = _drop_stray_marks(text)
    return text


def _drop_invisible(text: str) -> str:
    text = _INVISIBLE_BUT_JOINERS.sub("", text)
    if "\u200c" not in text and "\u200d" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        return match.group() if _joins_legitimately(text, match.start()) else ""

    return _JOINER.sub(replace, text)


def _joins_legitimately(text: str, index: int) -> bool:
    """ZWJ and ZWNJ belong inside emoji sequences and scripts such as Arabic or Devanagari."""
    if index == 0 or index + 1 == len(text):
        return False
    before, after = text[index - 1], text[index + 1]
    if _is_pictograph(before) and _is_pictograph(after):
        return True
    return bool(_JOINING_SCRIPT.match(before) and _JOINING_SCRIPT.match(after))


def _is_pictograph(char: str) -> bool:
    return char > "\u2000" and unicodedata.category(char) in ("So", "Sk")


def _fold_lookalike_words(text: str) -> str:
    if not _LOOKALIKE.search(text):
        return text
    if not _LATIN_LETTER.search(text) and _NATIVE_LETTER.search(text):
        return text  # prose in another script, with no Latin to pass for
    latin_words = native_words = 0
    mixed: list[tuple[int, int]] = []
    lookalike_only: list[tuple[int, int]] = []
    for match in _WORD.finditer(text):
        word = match.group()
        if word.isascii():
            latin_words += not word.isdigit()
            continue
        has_latin = _LATIN_LETTER.search(word) is not None
        has_native = _NATIVE_LETTER.search(word) is not None
        latin_words += has_latin
        native_words += has_native and not has_latin
        if _LOOKALIKE.search(word):
            if has_latin:
                mixed.append(match.span())
            elif not has_native:
                lookalike_only.append(match.span())
    # A word made only of look-alikes is read as Latin when Latin words outnumber the words
    # of other scripts around it, or when there are no such words at all.
    if lookalike_only and (latin_words > native_words or native_words == 0):
        mixed = sorted(mixed + lookalike_only)
    if not mixed:
        return text
    pieces: list[str] = []
    last = 0
    for start, end in mixed:
        pieces += [text[last:start], text[start:end].translate(_LOOKALIKES)]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def _drop_stray_marks(text: str) -> str:
    """Marks piled on Latin letters (Zalgo text, a dotted "i̇") go; é and ü stay."""

    def keep_composed(match: re.Match[str]) -> str:
        composed = unicodedata.normalize("NFC", match.group())
        return composed if len(composed) == 1 else match.group(1)

    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", _LATIN_WITH_MARKS.sub(keep_composed, decomposed))


# --- hidden layers ------------------------------------------------------------------------


class _Budget:
    """Characters of input the decoders may still read in one `views` call. A layer longer
    than what is left is decoded as far as the budget goes, so padding cannot hide it."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = _DECODE_BUDGET

    def take(self, size: int) -> int:
        granted = min(size, self.left)
        self.left -= granted
        return granted


class _Reading:
    """A text as the decoders need it: raw, visible (case kept), folded, and its words."""

    __slots__ = ("_shape", "folded", "raw", "visible", "words")

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self.visible = _visible(raw)
        self.folded = _fold(self.visible)
        self.words = self.folded.split()
        self._shape: bytes | None = None

    @property
    def canonical(self) -> str:
        return " ".join(self.words)

    @property
    def shape(self) -> bytes:
        """The folded text with letters as "a", leet digits and symbols as "0", rest blank:
        a byte string that C-speed substring tests can rule whole decoders out on."""
        if self._shape is None:
            encoded = self.folded.encode("utf-8", "surrogatepass")
            self._shape = b" " + encoded.translate(_SHAPE) + b" "
        return self._shape


def _shape_table() -> bytes:
    table = bytearray(b" " * 256)
    for char in string.ascii_letters:
        table[ord(char)] = ord("a")
    for char in "0123456789@$!":
        table[ord(char)] = ord("0")
    return bytes(table)


_SHAPE = _shape_table()


def views(text: str) -> list[View]:
    """The canonical form of `text`, then one view per hidden layer it decodes to, nested
    layers included up to depth 2. Never raises; bounded in time and size."""
    reading = _Reading(text)
    found = [View("", reading.canonical)]
    seen = {found[0].text}
    budget = _Budget()

    def collect(reading: _Reading, outer: str, depth: int) -> None:
        for how, decoded in _layers(reading, budget):
            if len(found) >= _MAX_VIEWS:
                return
            inner = _Reading(decoded)
            view = View(f"{outer}+{how}" if outer else how, inner.canonical)
            if not view.text or view.text in seen:
                continue
            seen.add(view.text)
            found.append(view)
            if depth < _MAX_DEPTH:
                collect(inner, view.how, depth + 1)

    collect(reading, "", 1)
    return found


# Base64 and hex as they look once casefolded, searched for in long words only.
_BASE64_HINT = re.compile(r"[a-z0-9+/_-]{16}")
_HEX_HINT = re.compile(r"[0-9a-f]{16}|\\x[0-9a-f]{2}")
# Hex written as separate pairs ("69 67 6e ..."); text in it has a digit in most pairs.
_SEPARATED_HEX_HINT = re.compile(r"[0-9][0-9A-Fa-f]?[ ,:] ?[0-9A-Fa-f]{2}[ ,:]")


def _layers(reading: _Reading, budget: _Budget) -> Iterator[tuple[str, str]]:
    """(how, decoded text) for each hidden layer directly under `reading`. Each decoder is
    tried only when a cheap test says it could find something, so plain prose costs little."""
    raw, visible = reading.raw, reading.visible
    if not raw.isascii() and _SMUGGLING_CHAR.search(raw):
        yield from _smuggled(raw, budget)
    long_words = (
        [word for word in reading.words if len(word) >= 16]
        if max(map(len, reading.words), default=0) >= 16
        else []
    )
    if any(_BASE64_HINT.search(word) for word in long_words):
        yield from _base64_runs(visible, budget)
    if (
        any(_HEX_HINT.search(word) for word in long_words)
        or "0x" in visible
        or (b"0" in reading.shape and _SEPARATED_HEX_HINT.search(visible))
    ):
        yield from _hex_runs(visible, budget)
    if "%" in visible or "\\" in visible or "&" in visible:
        yield from _in_place(visible, budget)
    yield from _rot13(reading, budget)
    if _may_be_spaced_out(reading):
        yield from _spaced_out(reading.folded, budget)
    if b"a0" in reading.shape and b"0a" in reading.shape:
        yield from _leetspeak(reading.folded, budget)


def _as_text(data: bytes) -> str | None:
    """`data` as UTF-8 if it reads as text rather than binary."""
    if len(data) < 4:
        return None
    decoded = data.decode("utf-8", errors="replace")
    printable = wordlike = letters = 0
    scripts: dict[str, int] = {}
    for char in decoded:
        if char == "\ufffd":
            continue
        printable += char.isprintable() or char in "\t\n\r"
        wordlike += char.isalnum() or char == " "
        if char.isalpha():
            letters += 1
            if not char.isascii():
                script = _script(char)
                scripts[script] = scripts.get(script, 0) + 1
    size = len(decoded)
    if printable < 0.95 * size or wordlike < 0.5 * size or not letters:
        return None
    # Binary that happens to be valid UTF-8 scatters its letters over many scripts.
    if scripts and max(scripts.values()) < 0.8 * sum(scripts.values()):
        return None
    return decoded


def _script(char: str) -> str:
    script = unicodedata.name(char, "?").split(" ", 1)[0]
    return "CJK" if script in ("HIRAGANA", "KATAKANA", "HANGUL") else script


# Tag characters spell ASCII invisibly; runs of variation selectors can carry one byte each.
_SMUGGLING_CHAR = re.compile("[\U000e0020-\U000e007e\ufe00-\ufe0f\U000e0100-\U000e01ef\u202e]")
_TAG_RUN = re.compile("[\U000e0020-\U000e007e]+")
_SELECTOR_RUN = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]{4,}")
_RIGHT_TO_LEFT_OVERRIDE = re.compile("\u202e([^\u202c\u2029\n]*)\u202c?")


def _smuggled(raw: str, budget: _Budget) -> Iterator[tuple[str, str]]:
    tags = " ".join(match.group() for match in _TAG_RUN.finditer(raw))
    if len(tags) >= 4:
        tags = tags[: budget.take(len(tags))]
        yield "unicode tags", "".join(" " if c == " " else chr(ord(c) - 0xE0000) for c in tags)
    for match in _SELECTOR_RUN.finditer(raw):
        run = match.group()[: budget.take(len(match.group()))]
        data = bytes(ord(c) - 0xFE00 if c <= "\ufe0f" else ord(c) - 0xE0100 + 16 for c in run)
        decoded = _as_text(data)
        if decoded:
            yield "variation selectors", decoded
    if "\u202e" in raw:
        # A right-to-left override shows its text reversed: the reader sees it backwards.
        shown = raw[: budget.take(len(raw))]
        yield "bidi override", _RIGHT_TO_LEFT_OVERRIDE.sub(lambda m: m.group(1)[::-1], shown)


_BASE64_RUN = re.compile(
    r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}(?:\r?\n[A-Za-z0-9+/_-]{4,})*={0,2}"
)
_PURE_HEX = re.compile(r"[0-9A-Fa-f]+")
_DIGIT = re.compile(r"[0-9]")
_URLSAFE_TO_STANDARD = str.maketrans("-_", "+/")


def _base64_runs(visible: str, budget: _Budget) -> Iterator[tuple[str, str]]:
    for match in _BASE64_RUN.finditer(visible):
        token = "".join(match.group().split()).rstrip("=")
        if _PURE_HEX.fullmatch(token) or (
            not _DIGIT.search(token) and token in (token.lower(), token.upper())
        ):
            continue  # a hex run, a long word or a path: base64 of text mixes case or digits
        token = token[: budget.take(len(token))]
        if len(token) < 16:
            continue
        data = _decode_base64(token)
        decoded = _as_text(data) if data else None
        if decoded:
            yield "base64", decoded


def _decode_base64(token: str) -> bytes | None:
    if len(token) % 4 == 1:
        token = token[:-1]
    token = token.translate(_URLSAFE_TO_STANDARD) + "=" * (-len(token) % 4)
    try:
        return base64.b64decode(token, validate=True)
    except (binascii.Error, ValueError):
        return None


_HEX_RUN = re.compile(r"(?<![0-9A-Za-z\\])(?:(?:\\x|0x)?[0-9A-Fa-f]{2}(?:, ?|[ :])?){8,}")
_HEX_PAIR = re.compile(r"(?:\\x|0x)?([0-9A-Fa-f]{2})")


def _hex_runs(visible: str, budget: _Budget) -> Iterator[tuple[str, str]]:
    for match in _HEX_RUN.finditer(visible):
        pairs = _HEX_PAIR.findall(match.group())
        end = match.end()
        if match.group()[-1] not in " ,:" and end < len(visible) and visible[end].isalnum():
            pairs.pop()  # the last pair belongs to a longer token
        if len(pairs) < 8:
            continue
        pairs = pairs[: budget.take(2 * len(pairs)) // 2]
        decoded = _as_text(bytes.fromhex("".join(pairs)))
        if decoded:
            yield "hex", decoded


_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_ESCAPE = r"\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}|\\x[0-9A-Fa-f]{2}"
_ESCAPE_RUN = re.compile(f"(?:{_ESCAPE})+")
_ONE_ESCAPE = re.compile(_ESCAPE)
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
# A view is worth judging once a few characters were decoded, not for one "%20" or "%C3%A9".
_MIN_DECODED = 3


def _in_place(visible: str, budget: _Budget) -> Iterator[tuple[str, str]]:
    """Percent-encoding, escapes and character references decoded where they stand."""
    for how, pattern, decode, marker in (
        ("url-encoding", _PERCENT_RUN, _unquote, "%"),
        ("escapes", _ESCAPE_RUN, _unescape, "\\"),
        ("html-entities", _ENTITY, html.unescape, "&#"),
    ):
        if marker not in visible:
            continue
        decoded, characters = _decode_runs(visible, pattern, decode, marker, budget)
        if characters >= _MIN_DECODED:
            yield how, decoded


def _decode_runs(
    visible: str,
    pattern: re.Pattern[str],
    decode: Callable[[str], str],
    marker: str,
    budget: _Budget,
) -> tuple[str, int]:
    """`visible` with each run of `pattern` decoded, and how many characters the runs that
    hold `marker` decoded to (named references such as "&amp;" are decoded but not counted)."""
    characters = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal characters
        run = match.group()
        head = run[: budget.take(len(run))]
        if head != run:  # out of budget: decode the whole sequences that fit
            fitting = pattern.match(head)
            head = fitting.group() if fitting else ""
        decoded = decode(head) if head else ""
        if marker in head:
            characters += len(decoded) - decoded.count("\ufffd")
        return decoded + run[len(head) :]

    return pattern.sub(replace, visible), characters


def _unquote(run: str) -> str:
    return urllib.parse.unquote(run, errors="replace")


def _unescape(run: str) -> str:
    """\\xXX runs as UTF-8 bytes (Latin-1 if they are not), \\u and \\U as code points."""
    chars: list[str] = []
    pending = bytearray()

    def flush() -> None:
        if pending:
            try:
                chars.append(pending.decode("utf-8"))
            except UnicodeDecodeError:
                chars.append(pending.decode("latin-1"))
            pending.clear()

    for token in _ONE_ESCAPE.findall(run):
        if token[1] == "x":
            pending.append(int(token[2:], 16))
            continue
        flush()
        code = int(token[2:], 16)
        chars.append(chr(code) if code <= 0x10FFFF else "\ufffd")
    flush()
    # Surrogate pairs written as two \u escapes become one character; lone halves do not.
    return "".join(chars).encode("utf-16", "surrogatepass").decode("utf-16", "replace")


# The most common English words that are not single letters, for telling English from not.
_COMMON_WORDS_TEXT = """
    the be to of and in that have it for not on with he as you do at this but his by from
    they we say her she or an will my one all would there their what so up out if about who
    get which go me when make can like time no just him know take people into year your good
    some could them see other than then now look only come its over think also back after
    use two how our work first well way even new want because any these give day most us is
    are was were been has had did does should must may might here very more
"""
_COMMON_WORDS = frozenset(_COMMON_WORDS_TEXT.split())
_ROT13 = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZABCDEFGHIJKLM",
)
_COMMON_WORDS_ROT13 = frozenset(word.translate(_ROT13) for word in _COMMON_WORDS)


# How often each letter occurs in English text, for short texts with too few common words.
_LETTER_SHARES = {
    "e": 12.7, "t": 9.1, "a": 8.2, "o": 7.5, "i": 7.0, "n": 6.7, "s": 6.3, "h": 6.1, "r": 6.0,
    "d": 4.3, "l": 4.0, "c": 2.8, "u": 2.8, "m": 2.4, "w": 2.4, "f": 2.2, "g": 2.0, "y": 2.0,
    "p": 1.9, "b": 1.5, "v": 1.0, "k": 0.8, "j": 0.15, "x": 0.15, "q": 0.1, "z": 0.07,
}  # fmt: skip
_LETTER_WEIGHTS = [
    (letter, math.log(share / 100), math.log(_LETTER_SHARES[letter.translate(_ROT13)] / 100))
    for letter, share in _LETTER_SHARES.items()
]
# Average log-likelihood per letter that rot13 must gain over the text as written.
_ROT13_LETTER_GAIN = 0.45


def _rot13(reading: _Reading, budget: _Budget) -> Iterator[tuple[str, str]]:
    words = reading.words
    turned = sum(map(_COMMON_WORDS_ROT13.__contains__, words))
    if turned < 1:
        return
    plain = sum(map(_COMMON_WORDS.__contains__, words))
    # Markedly more English once turned: by count, by ratio, and as a share of all words.
    english = turned >= plain + 2 and 2 * turned >= 3 * plain and 100 * turned >= 15 * len(words)
    if not english and turned >= plain:
        # Too short for words alone ("vtaber nyy cerivbhf vafgehpgvbaf"): letters decide.
        english = _letters_read_better_turned(reading.folded)
    if english:
        yield "rot13", reading.folded[: budget.take(len(reading.folded))].translate(_ROT13)


def _letters_read_better_turned(folded: str) -> bool:
    letters = 0
    as_written = turned = 0.0
    for letter, weight, turned_weight in _LETTER_WEIGHTS:
        count = folded.count(letter)
        letters += count
        as_written += count * weight
        turned += count * turned_weight
    return letters >= 12 and turned - as_written >= _ROT13_LETTER_GAIN * letters


_SPACED_RUN = re.compile(
    r"(?<![^\W_])[^\W_](?P<sep>  ?|\. ?|[-_*·•~])[^\W_](?:(?P=sep)[^\W_])*+"
    r"(?:(?>[.\-_*·•~]?(?:\s*[/|]\s*|\s+))[^\W_](?:(?P=sep)[^\W_])*+)*+"
)
_LETTER_OR_DIGIT = re.compile(r"[^\W_]")
_SPACED_BY_SPACES = re.compile(r" [^\W_](?: {1,2}|\. ?)[^\W_](?: {1,2}|\. ?)[^\W_](?![^\W_])")
_SPACED_BY_SIGN = {
    sign: re.compile(f"{re.escape(sign)}[^\\W_]{re.escape(sign)}[^\\W_]") for sign in ".-_*·•~"
}


def _may_be_spaced_out(reading: _Reading) -> bool:
    """Whether three single letters stand apart, as the first word of any run must have."""
    folded = reading.folded
    if folded.isascii():
        return b" a a a " in reading.shape or b" a  a  a " in reading.shape
    if _SPACED_BY_SPACES.search(" " + folded):
        return True
    return any(sign in folded and hint.search(folded) for sign, hint in _SPACED_BY_SIGN.items())


def _spaced_out(folded: str, budget: _Budget) -> Iterator[tuple[str, str]]:
    """ "i g n o r e  a l l", "i.g.n.o.r.e", "i-g-n-o-r-e" joined back into words."""
    pieces: list[str] = []
    last = 0
    for match in _SPACED_RUN.finditer(folded):
        words, end = _spaced_words(match, folded)
        letters = sum(map(len, words))
        if letters < 4 or max(map(len, words)) < 3 or not budget.take(end - match.start()):
            continue
        if 2 * sum(char.isalpha() for word in words for char in word) < letters:
            continue  # spaced digits: a phone number or a table row
        pieces += [folded[last : match.start()], " ".join(words)]
        last = end
    if pieces:
        yield "spaced-out letters", "".join([*pieces, folded[last:]])


def _spaced_words(match: re.Match[str], folded: str) -> tuple[list[str], int]:
    """The words a spaced-out run spells, and where the run really ends."""
    start, sep = match.start(), match.group("sep")
    letters = [m.start() + start for m in _LETTER_OR_DIGIT.finditer(match.group())]
    if match.end() < len(folded) and _LETTER_OR_DIGIT.match(folded, match.end()):
        letters.pop()  # the first letter of an ordinary word that follows the run
    words: list[str] = []
    previous = -1
    for position in letters:
        if previous < 0 or folded[previous + 1 : position] != sep:
            words.append("")
        words[-1] += folded[position]
        previous = position
    end = previous + 1
    if sep.strip() and folded.startswith(sep.strip(), end):
        end += len(sep.strip())  # the dot after the last letter of "I.G.N.O.R.E."
    return words, end


_LEET = str.maketrans("013456789@$!", "oieasgtbgasi")
# A whole word between spaces or punctuation: not part of a path, a key, an escape ("\\x6e"),
# an address or a dotted name ("alice@corp.com", "h264.mp4").
_LEET_TOKEN = re.compile(
    r"(?<![^\s.,;:!?'\"()\[\]])[a-z0-9@$]+(?:!+[a-z0-9@$]+)*(?![^\s.,;:!?'\"()\[\]]|\.[a-z0-9])"
)
_LEET_INSIDE = re.compile(r"[a-z][0-9@$!]+[a-z]")
# A substitution stands for one or two letters; "s390x" or "f401" hold numbers, not letters.
_LEET_SUBSTITUTION = re.compile(r"(?<=[a-z])[0-9@$!]{1,2}(?=[a-z])")
_LONG_LEET_RUN = re.compile(r"[0-9@$!]{3}")
_CONSONANT_PILE = re.compile(r"[^aeiouy]{5}")


def _leetspeak(folded: str, budget: _Budget) -> Iterator[tuple[str, str]]:
    """ "1gn0r3 pr3v10u5 1n5truct10n5" read as letters. It takes two different substitutions
    inside words that read like words once mapped, so identifiers such as "v1", "sha256",
    "x86", "s390x" or one "ppc64le" do not make a text leet."""
    if not _LEET_INSIDE.search(folded):
        return
    substitutions: set[str] = set()
    for match in _LEET_TOKEN.finditer(folded):
        token = match.group()
        mapped = _leet_word(token)
        if mapped is None or _LONG_LEET_RUN.search(token):
            continue
        vowels = sum(char in "aeiouy" for char in mapped)
        if 4 * vowels < len(mapped) or _CONSONANT_PILE.search(mapped):
            continue
        for inside in _LEET_SUBSTITUTION.finditer(token):
            substitutions.add(token[inside.start() - 1 : inside.end() + 1])
    if len(substitutions) < 2:
        return

    def replace(match: re.Match[str]) -> str:
        return _leet_word(match.group()) or match.group()

    yield "leetspeak", _LEET_TOKEN.sub(replace, folded[: budget.take(len(folded))])


def _leet_word(token: str) -> str | None:
    """`token` in letters, if it mixes letters with leet digits or symbols and is not hex."""
    if token.isalpha() or len(token) > 24 or _PURE_HEX.fullmatch(token.removeprefix("0x")):
        return None
    mapped = token.translate(_LEET)
    if mapped == token or not mapped.isalpha() or not any(c.isalpha() for c in token):
        return None
    return mapped
