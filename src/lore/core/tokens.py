"""The one token estimator Lore uses everywhere: packs, budgets, history, metrics.

Real tokenizers differ per model and are too slow to load for a budget check, so Lore counts
with a rule that errs on the high side for every common tokenizer:

    tokens = max(ceil(characters / 4), ceil(words * 1.3), characters outside ASCII)

Characters / 4 covers English prose and code; words * 1.3 covers text of many short words;
counting each non-ASCII character as a token covers Chinese, Japanese, Korean and emoji,
which tokenizers split into about one token per character. A prompt that fits this estimate
fits the model's window. Provider-reported counts are stored beside the estimate, never
instead of it.
"""

from __future__ import annotations

# Each chat message costs a few tokens of role and framing on top of its content.
MESSAGE_OVERHEAD_TOKENS = 4


def estimate_tokens(text: str) -> int:
    """A conservative token count for `text` (0 for the empty string)."""
    if not text:
        return 0
    characters = len(text)
    by_characters = -(-characters // 4)
    if text.isascii():
        # ASCII with no whitespace but spaces has no more words than one past its spaces:
        # when even those would cost no more than the characters, prose mostly, its words
        # need not be counted one by one. Each `in` is a fast scan, where `isprintable`
        # looks each character up and takes most of the time of a long text's estimate.
        if (
            -(-(text.count(" ") + 1) * 13 // 10) <= by_characters
            and "\n" not in text
            and "\t" not in text
            and "\r" not in text
            and "\x0b" not in text
            and "\x0c" not in text
            and "\x1c" not in text
            and "\x1d" not in text
            and "\x1e" not in text
            and "\x1f" not in text
        ):
            return by_characters
        return max(by_characters, -(-len(text.split()) * 13 // 10))
    by_words = -(-len(text.split()) * 13 // 10)
    non_ascii = characters - len(text.encode("ascii", "ignore"))
    return max(by_characters, by_words, non_ascii)


def text_counts(text: str) -> tuple[int, int, int]:
    """What the rule counts in `text`: characters, words, characters outside ASCII. Counts
    add up over lines joined by newlines (one character each), so a text made of pieces
    can be estimated without reading it again (`estimate_from_counts`)."""
    characters = len(text)
    outside = 0 if text.isascii() else characters - len(text.encode("ascii", "ignore"))
    return characters, len(text.split()), outside


def estimate_from_counts(counts: tuple[int, int, int]) -> int:
    """`estimate_tokens` of a text with these `text_counts`."""
    characters, words, outside = counts
    return max(-(-characters // 4), -(-words * 13 // 10), outside)


def estimate_message_tokens(content: str) -> int:
    """The cost of one chat message holding `content`, framing included."""
    return estimate_tokens(content) + MESSAGE_OVERHEAD_TOKENS


def truncate_to_tokens(text: str, max_tokens: int, marker: str = " …") -> str:
    """The longest prefix of `text` (cut at a word boundary, `marker` added) within `max_tokens`.

    Returns "" when not even the marker fits.
    """
    if estimate_tokens(text) <= max_tokens:
        return text
    if estimate_tokens(marker.strip()) > max_tokens:
        return ""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if estimate_tokens(text[:middle] + marker) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    cut = text[:low]
    space = cut.rfind(" ")
    if space > len(cut) // 2:
        cut = cut[:space]
    cut = cut.rstrip()
    return (cut + marker) if cut else marker.strip()


def reported_or_estimated(reported: int | None, estimated: int) -> int:
    """A token count as the provider reported it where it did, else Lore's estimate."""
    return reported if reported is not None else estimated
