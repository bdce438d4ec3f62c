"""The one token estimator: conservative, cheap, and the same everywhere."""

from __future__ import annotations

import time

from lore.core.tokens import estimate_message_tokens, estimate_tokens, truncate_to_tokens


def test_empty_text_costs_nothing() -> None:
    assert estimate_tokens("") == 0


def test_english_prose_is_about_four_characters_a_token() -> None:
    text = "The quick brown fox jumps over the lazy dog near the riverbank today."
    assert estimate_tokens(text) >= len(text) / 4
    assert estimate_tokens(text) <= len(text) / 2


def test_many_short_words_count_by_words() -> None:
    text = "a b c d e f g h i j"
    assert estimate_tokens(text) >= 13


def test_cjk_and_emoji_count_at_least_one_token_per_character() -> None:
    text = "木星は太陽系で最大の惑星です🪐"
    assert estimate_tokens(text) >= len(text)


def test_estimate_never_shrinks_when_text_grows() -> None:
    text = ""
    previous = 0
    for word in ("planet ", "木星 ", "x", "  ", "longerwordhere ", "\n"):
        text += word
        assert estimate_tokens(text) >= previous
        previous = estimate_tokens(text)


def test_a_message_costs_its_framing_too() -> None:
    assert estimate_message_tokens("") > 0
    assert estimate_message_tokens("hello") > estimate_tokens("hello")


def test_truncation_fits_the_limit_and_marks_the_cut() -> None:
    text = "word " * 500
    cut = truncate_to_tokens(text, 40)
    assert estimate_tokens(cut) <= 40
    assert cut.endswith("…")
    assert truncate_to_tokens("short", 40) == "short"
    assert truncate_to_tokens(text, 0) == ""


def test_a_megabyte_is_estimated_in_milliseconds() -> None:
    text = "Jupiter is the largest planet. " * 35_000
    started = time.perf_counter()
    assert estimate_tokens(text) > 200_000
    assert time.perf_counter() - started < 0.2


def test_ascii_whitespace_other_than_spaces_is_counted_word_by_word() -> None:
    # Long words between single spaces cost their characters; cut by any other whitespace
    # `str.split` knows (tabs, line breaks, the ASCII separators), they count as words.
    spaced = " ".join(["abcdefghij"] * 8)
    for separator in "\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f":
        cut = spaced.replace("j", f"j{separator}").replace("a", f"{separator}a")
        assert estimate_tokens(cut) == max(-(-len(cut) // 4), -(-len(cut.split()) * 13 // 10))
        many = separator.join("ab" for _ in range(40))
        assert estimate_tokens(many) == -(-40 * 13 // 10)
