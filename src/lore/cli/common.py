"""What every command shares: the parsed arguments, consoles, and the vault opened lazily."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console
from rich.text import Text

from lore.core.display_text import json_for_terminal, visible
from lore.core.vault import Vault
from lore.paths import discover_vault


class Context:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.console = Console(highlight=False, soft_wrap=False)
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)
        self._vault: Vault | None = None

    @property
    def vault(self) -> Vault:
        if self._vault is None:
            root, reason = discover_vault(getattr(self.args, "vault", None))
            self._vault = Vault.open(root, create=reason == "default vault")
            provider = getattr(self.args, "provider", None)
            if provider:
                self._vault.config.provider.name = provider
            model = getattr(self.args, "model", None)
            if model:
                self._vault.config.provider.model = model
        return self._vault

    def warn_skipped(self) -> None:
        if self._vault is None:
            return
        for warning in self._vault.warnings:
            self.err.print(Text.assemble(("warning: ", "yellow"), visible(warning, multiline=True)))
        self._vault.warnings.clear()

    def close(self) -> None:
        if self._vault is not None:
            self._vault.close()


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
