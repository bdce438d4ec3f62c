"""Gate 1, sanitise: find what a reader cannot see or should not obey in a claim's text.

Each finding is a `Flag` with the character span it covers, so the quarantine can mark it in
the text. The scan never rewrites the claim: a flagged claim is held as it was written, and
a person decides.
"""

from __future__ import annotations

import base64
import binascii
import functools
import html
import re
import unicodedata
import urllib.parse
from collections.abc import Iterator

from lore.core.gates.intent import quoted_mention
from lore.core.gates.types import Flag

# Zero-width and invisible formatting characters, including the Unicode tag block that can
# spell out whole hidden sentences.
_INVISIBLE = re.compile("[\u200b\u200c\u200d\u2060-\u2064\ufeff\u180e\U000e0000-\U000e007f]")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|$)|<!\[(?:if|endif)[^\]]*\]>", re.DOTALL)
_HIDDEN_STYLE = re.compile(
    r"<[a-z][^>]*?(?:"
    r"style\s*=\s*[\"'][^\"'>]*(?:display\s*:\s*none|visibility\s*:\s*hidden"
    r"|font-size\s*:\s*0(?:\.0+)?(?:px|pt|em|rem|%)?\s*(?:[;\"'!]|$)"
    r"|opacity\s*:\s*0(?:\.0+)?\s*(?:[;\"'!]|$)|(?<![-\w])color\s*:\s*(?:white|#fff(?:fff)?\b|transparent)"
    r"|(?:left|top|text-indent)\s*:\s*-\d{3,}|(?:height|width|max-height)\s*:\s*0(?:px)?\s*[;\"'])"
    r"|\shidden(?=[\s>=/])|aria-hidden\s*=\s*[\"']true)[^>]*>",
    re.IGNORECASE,
)
_INLINE_CODE = re.compile(r"``[^`]+``|`[^`\n]+`")
# An indented line or an interpreter session is shown as code, markup and all.
_CODE_LINE = re.compile(r"^(?:[ ]{3,}|\t|\s*>>> |\s*\.\.\. ).*$", re.MULTILINE)
_BASE64 = re.compile(r"(?<![\w+/=-])[A-Za-z0-9+/_-]{40,}={0,2}(?![\w+/=-])")
_HEX = re.compile(r"(?<![0-9A-Za-z])(?:[0-9A-Fa-f]{2}){20,}(?![0-9A-Za-z])")
_ESCAPES = re.compile(r"(?:\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}){6,}")
_PERCENT = re.compile(r"(?:%[0-9A-Fa-f]{2}){8,}")
_ENTITIES = re.compile(r"(?:&#(?:x[0-9A-Fa-f]+|\d+);){6,}")
# Escapes that spell out words (not bytes of a binary example or a non-Latin string).
_SPELLED_WORDS = re.compile(r"[A-Za-z]{2,}[\s,.;:]+[A-Za-z]{2,}")
_WORD_WITH_NON_ASCII = re.compile(r"\w*[^\x00-\x7f]\w*")
# Cyrillic and Greek letters that look like Latin ones.
_CONFUSABLE = set("аеорсухіјѕԁһԛԝвкмнтАВЕКМНОРСТХІЈЅοαιυνκρτΑΒΕΖΗΙΚΜΝΟΡΤΥΧ")
_LINK_URL = re.compile(
    r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)|^\s*\[[^\]\n]+\]:\s*<?(\S+?)>?\s*$|<img[^>]+src\s*=\s*[\"']([^\"']+)",
    re.IGNORECASE | re.MULTILINE,
)
_URL_PLACEHOLDER = re.compile(
    r"\{\{?[^{}\s]{1,60}\}?\}|\$\{?[A-Z][A-Z0-9_]{2,}\}?|%7B|<[a-z_]{3,}>"
)
_URL_BLOB = re.compile(r"[=/][A-Za-z0-9+/_-]{32,}={0,2}(?:&|$)")
_SMUGGLED_KEY = re.compile(
    r"^[ \t]*(?:trust(?:_level)?[ \t]*:[ \t]*(?:trusted|semi-trusted|untrusted|true|high|full)\b"
    r"|(?:quarantine|quarantined|gates_passed|reviewed_by|review_status|admitted)[ \t]*:)",
    re.IGNORECASE | re.MULTILINE,
)
_INLINE_TRUST = re.compile(r"\btrust\s*=\s*(?:trusted|semi-trusted)\b", re.IGNORECASE)

# Instructions aimed at a model, in the languages Lore is expected to meet. Each pattern
# needs wording that only makes sense addressed to an AI, so documents that merely talk
# about instructions, rules or prompts pass.
_INSTRUCTION_PATTERNS = [
    # English
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your|my|these|those|of)\s+)*"
    r"(?:previous|prior|above|earlier|preceding|former|original|system|initial)\s+"
    r"(?:instructions?|directions?|directives?|rules|prompts?|guidelines|commands|context)",
    r"\bforget\s+(?:everything|all)\b.{0,40}?\b(?:told|above|said|before|instructions)",
    r"\bnew\s+instructions?\s*:",
    r"\byou\s+are\s+now\b[^.]{0,60}?(?:assistant|\w*bot\b|\bai\b|gpt|\bmodel\b|\bmode\b|\bdan\b"
    r"|unrestricted|without\s+(?:any\s+)?(?:content\s+)?(?:restrictions|rules|limits|filters))",
    r"\bact\s+as\s+(?:the|an?|my)?\s*(?:\w+\s+)?(?:administrator|admin|root|superuser)\b"
    r"(?!\s+(?:device|directory|dir|file|filesystem|partition|node|certificate|ca|of|for|user"
    r"|account|shell|process|namespace|cgroup|window|element|level|server|domain)\b)",
    r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|alert|mention\s+(?:this\s+)?to)\s+the\s+user\b",
    r"\b(?:mark|label|record|set|flag|treat|rate|tag|classify)\s+(?:this|the|these|every|all)\s+"
    r"(?:\w+\s+){0,3}?(?:as|to)\s+(?:the\s+)?(?:only\s+|sole\s+|fully\s+)?"
    r"(?:trusted|verified|authoritative|approved|official)",
    # German
    r"\b(?:ignorier\w*|vergiss|missachte\w*|übergeh\w*)\s+(?:\w+\s+){0,3}?"
    r"(?:system)?(?:anweisungen|regeln|instruktionen|vorgaben|befehle)",
    r"\bvergiss\s+alles\b",
    r"\bdu\s+bist\s+(?:jetzt|nun|ab\s+sofort)\s+(?:ein|eine)\b",
    r"\bneue\s+anweisungen\s*:",
    r"\bsag\w*\s+dem\s+(?:nutzer|benutzer|anwender)\s+nichts",
    # French
    r"\b(?:ignore[sz]?|oublie[sz]?|néglige[sz]?)\s+(?:toutes\s+|tous\s+)?(?:les\s+|tes\s+|vos\s+)?"
    r"(?:instructions|consignes|règles|directives)\s+(?:précédentes|antérieures|ci-dessus|du\s+système)",
    r"\boublie[sz]?\s+tout\s+ce\b",
    r"\btu\s+es\s+(?:maintenant|désormais)\s+(?:un|une)\b",
    r"\bnouvelles?\s+instructions?\s*:",
    r"\bne\s+dis\s+rien\s+à\s+l['’]utilisateur",
    # Spanish
    r"\b(?:ignora|olvida|omite)\s+(?:todas\s+)?(?:las\s+|tus\s+)?(?:instrucciones|reglas|indicaciones)"
    r"\s+(?:anteriores|previas|del\s+sistema)",
    r"\bolvida\s+todo\s+lo\b",
    r"\bahora\s+eres\s+(?:un|una)\b",
    r"\bnuevas\s+instrucciones\s*:",
    r"\bno\s+le\s+digas\s+al\s+usuario",
    # Italian
    r"\b(?:ignora|dimentica|trascura)\s+(?:tutte\s+)?(?:le\s+)?(?:istruzioni|regole|indicazioni)"
    r"\s+(?:precedenti|di\s+sistema|sopra)",
    r"\bdimentica\s+tutto\s+quello\b",
    r"\bora\s+sei\s+(?:un|una)\s+(?:assistente|ia|intelligenza)",
    r"\bnuove\s+istruzioni\s*:",
    r"\bnon\s+dire\s+nulla\s+all['’]utente",
]


@functools.cache
def _instruction_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The instruction patterns as one expression ignoring case, and the same without
    IGNORECASE for text already lower-cased (several times faster). Compiled on first use:
    they take most of 15 ms, which the app and the quarantine commands would otherwise pay
    at start-up for a module they import without sanitising anything."""
    joined = "|".join(f"(?:{p})" for p in _INSTRUCTION_PATTERNS)
    return re.compile(joined, re.IGNORECASE), re.compile(joined)


def find_instructions(text: str) -> list[tuple[int, int]]:
    """Spans of instructions aimed at an AI in `text`."""
    any_case, lower_case = _instruction_patterns()
    lowered = text.lower()
    if len(lowered) == len(text):
        return [match.span() for match in lower_case.finditer(lowered)]
    return [match.span() for match in any_case.finditer(text)]


_ALLOWED_JOINER_NEIGHBOURS = re.compile("[^\\w\\s]|[^\\x00-\\u024f]")


def _joiner_is_legitimate(text: str, index: int) -> bool:
    """ZWJ and ZWNJ belong inside emoji sequences and scripts such as Persian or Devanagari."""
    if text[index] not in "\u200c\u200d":
        return False
    before = text[index - 1] if index > 0 else " "
    after = text[index + 1] if index + 1 < len(text) else " "
    return all(ch > "\u024f" and not _INVISIBLE.match(ch) for ch in (before, after))


def _printable_share(data: bytes) -> float:
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return 0.0
    if not decoded:
        return 0.0
    good = sum(1 for ch in decoded if ch.isprintable() or ch in "\n\t")
    letters = sum(1 for ch in decoded if ch.isalpha())
    return good / len(decoded) if letters >= len(decoded) * 0.4 else 0.0


def _decode_base64(token: str) -> bytes | None:
    padded = token + "=" * (-len(token) % 4)
    for decoder in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            return decoder(padded)
        except (binascii.Error, ValueError):
            continue
    return None


def _preview(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


def _encoded(text: str) -> Iterator[Flag]:
    for match in _BASE64.finditer(text):
        token = match.group(0)
        if not (re.search(r"\d", token) or re.search(r"[+/=]", token)) and token.isalpha():
            continue  # a long word, not an encoding
        decoded = _decode_base64(token)
        if decoded is not None and _printable_share(decoded) > 0.9:
            shown = _preview(decoded.decode("utf-8"))
            yield Flag("encoded", f"base64 block that decodes to text: {shown!r}", *match.span())
        elif len(token) >= 200:
            yield Flag(
                "encoded", f"opaque base64-like block of {len(token)} characters", *match.span()
            )
    for match in _HEX.finditer(text):
        data = bytes.fromhex(match.group(0))
        # Words, not a run of one letter: a heat map of digits decodes to "DDDD…".
        if _printable_share(data) > 0.9 and _SPELLED_WORDS.search(data.decode("utf-8")):
            shown = _preview(data.decode("utf-8"))
            yield Flag("encoded", f"hex block that decodes to text: {shown!r}", *match.span())
        elif len(match.group(0)) >= 256:
            yield Flag(
                "encoded", f"opaque hex block of {len(match.group(0))} characters", *match.span()
            )
    for pattern, decode, label in (
        (_ESCAPES, lambda s: s.encode("ascii").decode("unicode_escape"), "escape sequences"),
        (_PERCENT, urllib.parse.unquote, "percent-encoding"),
        (_ENTITIES, html.unescape, "HTML character references"),
    ):
        for match in pattern.finditer(text):
            try:
                decoded_text = decode(match.group(0))
            except (UnicodeError, ValueError):
                continue
            if _SPELLED_WORDS.search(decoded_text):
                shown = _preview(decoded_text)
                yield Flag("encoded", f"{label} that spell out text: {shown!r}", *match.span())


def _homoglyphs(text: str) -> Iterator[Flag]:
    if text.isascii():
        return
    for match in _WORD_WITH_NON_ASCII.finditer(text):
        word = match.group(0)
        if not any(ch in _CONFUSABLE for ch in word):
            continue
        has_latin = any("a" <= ch.lower() <= "z" for ch in word)
        if not has_latin:
            continue
        scripts = sorted(
            {unicodedata.name(ch, "?").split()[0].title() for ch in word if ch in _CONFUSABLE}
        )
        yield Flag(
            "homoglyph",
            f"word {word!r} mixes Latin with {' and '.join(scripts)} look-alike letters",
            *match.span(),
        )


def _exfiltration_links(text: str) -> Iterator[Flag]:
    for match in _LINK_URL.finditer(text):
        url = next(group for group in match.groups() if group)
        parsed = urllib.parse.urlsplit(url)
        carried = f"{parsed.path}?{parsed.query}#{parsed.fragment}"
        if not parsed.scheme.startswith("http") and not url.startswith("//"):
            continue
        kind = "image" if match.group(0).lstrip().startswith(("!", "<img")) else "link"
        if _URL_PLACEHOLDER.search(carried):
            yield Flag(
                "exfil-link", f"{kind} URL would carry data out: {_preview(url)}", *match.span()
            )
        elif parsed.query and _URL_BLOB.search("=" + parsed.query):
            # A long token is also what a password-reset or download link carries: the
            # claim waits for a person, but the source is not judged hostile for it.
            yield Flag(
                "opaque-link",
                f"{kind} URL carries a long encoded value: {_preview(url)}",
                *match.span(),
            )


def _single_chars(pattern: re.Pattern[str], text: str, kind: str, label: str) -> Iterator[Flag]:
    for match in pattern.finditer(text):
        index = match.start()
        if kind == "zero-width" and _joiner_is_legitimate(text, index):
            continue
        code = f"U+{ord(text[index]):04X}"
        yield Flag(kind, f"{label} {code}", index, index + 1)


def is_code_block(text: str) -> bool:
    """A fenced block, or one whose every line is indented (a reST or Markdown literal block)."""
    stripped = text.lstrip("\n")
    if stripped.startswith(("```", "~~~")):
        return True
    lines = [line for line in stripped.split("\n") if line.strip()]
    return bool(lines) and all(line.startswith(("   ", "\t")) for line in lines)


# Anything any detector below could flag contains one of these; most prose contains none,
# and then only the instruction patterns need to run.
_SUSPECT = re.compile(
    "[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u180e\U000e0000-\U000e007f"
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
    r"|<!--|<!\[|<[a-z][^>]*?(?:style|hidden)|[A-Za-z0-9+/_-]{40}|\\u[0-9A-Fa-f]{4}"
    r"|\\x[0-9A-Fa-f]{2}|%[0-9A-Fa-f]{2}|&#|\]\(|\]:|<img|trust|quarantin|gates_passed"
    r"|reviewed_by|review_status|admitted",
    re.IGNORECASE,
)


def scan(text: str) -> list[Flag]:
    """Every suspicious thing in `text`, in order of position."""
    if text.isascii() and not _SUSPECT.search(text):
        return [
            Flag(
                "instruction",
                f"instruction aimed at an AI: {_preview(text[start:end])!r}",
                start,
                end,
            )
            for start, end in find_instructions(text)
            if not quoted_mention(text, start, end)
        ]
    flags: list[Flag] = []
    flags.extend(_single_chars(_INVISIBLE, text, "zero-width", "invisible character"))
    flags.extend(_single_chars(_BIDI, text, "bidi", "bidirectional override"))
    flags.extend(_single_chars(_CONTROL, text, "control", "control character"))
    # Markup in a code block or an inline code span is shown to the reader as it is, so
    # nothing in it is hidden.
    if not is_code_block(text):
        spans = [match.span() for match in _INLINE_CODE.finditer(text)]
        spans += [match.span() for match in _CODE_LINE.finditer(text)]

        def shown(start: int, end: int) -> bool:
            return any(left <= start and end <= right for left, right in spans)

        for match in _HTML_COMMENT.finditer(text):
            # An unclosed comment runs to the end of the claim; the line it opens on decides.
            line_end = text.find("\n", match.start())
            opening = match.end() if line_end < 0 else min(match.end(), line_end)
            if not shown(match.start(), opening):
                flags.append(
                    Flag("html-comment", "HTML comment hidden from readers", *match.span())
                )
        for match in _HIDDEN_STYLE.finditer(text):
            if not shown(*match.span()):
                flags.append(
                    Flag("hidden-style", "markup that hides its text from readers", *match.span())
                )
    flags.extend(_encoded(text))
    flags.extend(_homoglyphs(text))
    flags.extend(_exfiltration_links(text))
    for match in _SMUGGLED_KEY.finditer(text):
        flags.append(
            Flag(
                "frontmatter",
                f"metadata key smuggled into text: {match.group(0).strip()!r}",
                *match.span(),
            )
        )
    for match in _INLINE_TRUST.finditer(text):
        flags.append(
            Flag(
                "frontmatter",
                f"trust setting smuggled into text: {match.group(0)!r}",
                *match.span(),
            )
        )
    # Instructions are looked for in the text as a reader would see it once the invisible
    # characters are gone, so "ig\u200bnore" cannot slip through.
    visible, positions = _without_invisible(text)
    for match in _instruction_patterns()[0].finditer(visible):
        if quoted_mention(visible, *match.span()):
            continue
        start, end = positions[match.start()], positions[match.end() - 1] + 1
        flags.append(
            Flag(
                "instruction",
                f"instruction aimed at an AI: {_preview(match.group(0))!r}",
                start,
                end,
            )
        )
    flags.sort(key=lambda flag: (flag.start, flag.end))
    return flags


def _without_invisible(text: str) -> tuple[str, list[int]]:
    if not _INVISIBLE.search(text) and not _BIDI.search(text) and not _CONTROL.search(text):
        return text, list(range(len(text)))
    kept: list[str] = []
    positions: list[int] = []
    for index, ch in enumerate(text):
        if _INVISIBLE.match(ch) or _BIDI.match(ch) or _CONTROL.match(ch):
            continue
        kept.append(ch)
        positions.append(index)
    return "".join(kept), positions


def summarise(flags: list[Flag]) -> list[str]:
    """One reason per kind of flag, in the order first seen."""
    seen: dict[str, list[Flag]] = {}
    for flag in flags:
        seen.setdefault(flag.kind, []).append(flag)
    reasons = []
    for kind, group in seen.items():
        extra = f" (+{len(group) - 1} more)" if len(group) > 1 else ""
        reasons.append(f"{kind}: {group[0].detail}{extra}")
    return reasons
