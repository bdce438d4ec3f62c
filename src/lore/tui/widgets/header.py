"""The app's one-line header: vault, provider and model, and the context meter."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static

from lore.core.public import visible
from lore.tui.widgets.meter import ContextMeter


class LoreHeader(Horizontal):
    def __init__(self, vault_name: str, provider: str, model: str, budget: int) -> None:
        super().__init__(id="lore-header")
        self.vault_name = vault_name
        self.provider_label = _label(provider, model)
        self.budget = budget

    def compose(self) -> ComposeResult:
        vault = visible(f"Lore · {self.vault_name}", multiline=False)
        yield Static(vault, id="header-vault", markup=False)
        yield Static(self.provider_label, id="header-model", markup=False)
        yield ContextMeter(self.budget, id="context-meter")

    def set_model(self, provider: str, model: str) -> None:
        self.provider_label = _label(provider, model)
        self.query_one("#header-model", Static).update(self.provider_label)


def _label(provider: str, model: str) -> str:
    return visible(f"{provider} · {model}" if model else provider, multiline=False)
