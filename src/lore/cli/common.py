"""What every command shares: the parsed arguments, consoles, and the session opened lazily."""

from __future__ import annotations

import argparse
import json
import os
import sys
from functools import cached_property
from typing import TYPE_CHECKING, Any

from lore.core.public import json_for_terminal, visible

if TYPE_CHECKING:
    from rich.console import Console

    from lore.core.session import LoreSession

# Every command module imports this one to build the parser, before any argument is read:
# what only a running command needs (Rich, the session and the vault behind it) is imported
# when it is first used.


class Context:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self._session: LoreSession | None = None

    # Made when first printed to: a command that prints JSON never loads Rich for them.
    @cached_property
    def console(self) -> Console:
        from rich.console import Console

        return Console(highlight=False, soft_wrap=False)

    @cached_property
    def err(self) -> Console:
        from rich.console import Console

        return Console(stderr=True, highlight=False, soft_wrap=True)

    @property
    def session(self) -> LoreSession:
        """The vault named by --vault (or found from here), with --provider and --model."""
        if self._session is None:
            from lore.core.session import LoreSession

            self._session = LoreSession.open(
                getattr(self.args, "vault", None),
                provider_name=getattr(self.args, "provider", None),
                model=getattr(self.args, "model", None),
                actor=os.environ.get("LORE_ACTOR") or os.environ.get("USER") or "user",
            )
        return self._session

    def warn_skipped(self) -> None:
        if self._session is None:
            return
        warnings = self._session.take_warnings()
        if not warnings:
            return  # and Rich need not be imported to say nothing
        from rich.text import Text

        for warning in warnings:
            self.err.print(Text.assemble(("warning: ", "yellow"), visible(warning, multiline=True)))

    def close(self) -> None:
        if self._session is not None:
            self._session.close()


def print_json(value: Any) -> None:
    dumped = json.dumps(value, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write(json_for_terminal(dumped) + "\n")


def read_text_argument(value: str | None) -> str:
    """`-` reads standard input; anything else is taken as the text itself."""
    if value is None:
        return ""
    if value == "-":
        return sys.stdin.read()
    return value


def positive_number(value: str) -> int:
    """An argparse type: a whole number above 0, or a one-line usage error."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {number}")
    return number
