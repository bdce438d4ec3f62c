"""The header's context meter: tokens the next ask would send against the budget."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

BAR_CELLS = 10
UNKNOWN_TOOLTIP = "Tokens the next question would send, against the ask budget"


def meter_level(used: int, budget: int) -> str:
    """ "low", "mid" or "high", so the stylesheet can colour the meter as it fills."""
    if budget <= 0:
        return "high" if used else "low"
    share = used / budget
    if share >= 0.9:
        return "high"
    if share >= 0.6:
        return "mid"
    return "low"


class ContextMeter(Static):
    """`ctx ▰▰▰▱▱▱▱▱▱▱ 1,234/4,096`; unknown until the first preview has been computed."""

    DEFAULT_CSS = """
    ContextMeter { width: auto; }
    """

    # Not run on mount: the constructor sets the starting look, so mounting restyles nothing.
    used: reactive[int | None] = reactive(None, init=False, layout=True)
    budget: reactive[int] = reactive(0, init=False, layout=True)

    def __init__(self, budget: int = 0, **kwargs: Any) -> None:
        super().__init__(classes="-low", **kwargs)
        self.set_reactive(ContextMeter.budget, budget)
        self.tooltip = UNKNOWN_TOOLTIP

    def set_usage(self, used: int | None, budget: int) -> None:
        self.budget = budget
        self.used = used

    def render(self) -> Text:
        if self.used is None:
            return Text.assemble("ctx ", ("▱" * BAR_CELLS, "dim"), f" ?/{self.budget:,}")
        share = min(1.0, self.used / self.budget) if self.budget > 0 else 1.0
        filled = round(share * BAR_CELLS)
        if self.used and not filled:
            filled = 1
        return Text.assemble(
            "ctx ",
            "▰" * filled,
            ("▱" * (BAR_CELLS - filled), "dim"),
            f" {self.used:,}/{self.budget:,}",
        )

    def watch_used(self) -> None:
        self._restyle()

    def watch_budget(self) -> None:
        self._restyle()

    def _restyle(self) -> None:
        level = "low" if self.used is None else meter_level(self.used, self.budget)
        for name in ("low", "mid", "high"):
            self.set_class(name == level, f"-{name}")
        self.tooltip = (
            UNKNOWN_TOOLTIP
            if self.used is None
            else f"The next question would send {self.used:,} of {self.budget:,} tokens"
        )
