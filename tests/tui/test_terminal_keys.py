"""Alt+digit as a terminal without the kitty keyboard protocol sends it: ESC, then the digit."""

from __future__ import annotations

import time

from textual._xterm_parser import XTermParser

from lore.tui.terminal_keys import read_escaped_digits_as_alt


def keys_for(data: str) -> list[tuple[str, str | None]]:
    parser = XTermParser()
    events = list(parser.feed(data))
    time.sleep(0.15)  # past the wait for the rest of an escape sequence
    events += list(parser.feed(""))
    return [(event.key, event.character) for event in events]  # type: ignore[attr-defined]


def test_escape_then_a_digit_is_alt_with_the_digit() -> None:
    read_escaped_digits_as_alt()
    for digit in "0123456789":
        assert keys_for(f"\x1b{digit}") == [(f"alt+{digit}", digit)]


def test_symbols_typed_as_themselves_and_plain_digits_are_unchanged() -> None:
    read_escaped_digits_as_alt()
    read_escaped_digits_as_alt()  # twice is the same as once
    assert keys_for("™") == [("trade_mark_sign", "™")]
    assert keys_for("£") == [("pound_sign", "£")]
    assert keys_for("2") == [("2", "2")]
    assert keys_for("\x1ba") == [("alt+a", "a")]
