"""A tiny host app for testing one pane at a time with the app's real stylesheet."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.message import Message
from textual.widget import Widget

from lore.tui.messages import AskQuestion, OpenNote
from lore.tui.theming import lore_variable_defaults

STYLESHEET = Path(__file__).resolve().parents[2] / "src" / "lore" / "tui" / "lore.tcss"


class PaneHost(App[None]):
    """Mounts one pane and records the messages it sends to the app."""

    CSS_PATH = STYLESHEET if STYLESHEET.exists() else None

    def __init__(self, make_pane: Callable[[], Widget]) -> None:
        super().__init__()
        self._make_pane = make_pane
        self.received: list[Message] = []
        self.copied: list[str] = []

    def get_theme_variable_defaults(self) -> dict[str, str]:
        # Lore's own colour variables ($held, $trust-…), as the real app provides them.
        return {
            **super().get_theme_variable_defaults(),
            **lore_variable_defaults(self.current_theme),
        }

    def compose(self) -> ComposeResult:
        yield self._make_pane()

    def on_ask_question(self, message: AskQuestion) -> None:
        self.received.append(message)

    def on_open_note(self, message: OpenNote) -> None:
        self.received.append(message)

    def copy_to_clipboard(self, text: str) -> None:
        self.copied.append(text)
        super().copy_to_clipboard(text)


async def wait_until(
    condition: Callable[[], Any], *, timeout: float = 20.0, message: str = ""
) -> None:
    """Poll until `condition()` is truthy; fail with `message` after `timeout` seconds.

    The timeout is generous because a loaded two-core machine can starve the app's worker
    threads for seconds; a condition that holds returns as soon as it does.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except Exception:
            pass
        await asyncio.sleep(0.02)
    raise AssertionError(message or "condition never became true")
