"""Alt with a digit, as most terminals send it, reaches the app as Alt+digit.

Terminals without the kitty keyboard protocol (xterm, GNOME Terminal, Konsole, tmux) send
Alt+2 as ESC followed by "2". Textual's key table reads those ten pairs as the characters
macOS types for Option+digit ("™" for Option+2, "£" for Option+3), as WezTerm on macOS
sends them; Alt+1..5, the way to switch panes from the Ask prompt, would then type symbols
instead. With the pairs left out of the table the parser reports them as it reports every
other ESC pair: as Alt with the key. A symbol typed as itself is unaffected.
"""

from __future__ import annotations

from typing import cast

ESCAPED_DIGITS = tuple(f"\x1b{digit}" for digit in "0123456789")


def read_escaped_digits_as_alt() -> None:
    try:
        from textual._ansi_sequences import ANSI_SEQUENCES_KEYS
    except ImportError:  # a Textual without the table has nothing to undo
        return
    table = cast(dict[str, object], ANSI_SEQUENCES_KEYS)
    for sequence in ESCAPED_DIGITS:
        meaning = table.get(sequence)
        if isinstance(meaning, str) and not meaning.isdigit():
            del table[sequence]
