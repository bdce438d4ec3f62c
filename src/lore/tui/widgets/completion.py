"""The list of slash commands that opens above the prompt when a line starts with `/`."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from lore.core.public import CommandRegistry, SlashCommand

MAX_SHOWN = 8


def _row(command: SlashCommand) -> Text:
    text = Text()
    text.append(f"/{command.name}", style="bold")
    if command.hint:
        text.append(f" {command.hint}", style="dim")
    text.append(f"  {command.help}")
    return text


class SlashCompletions(OptionList):
    """Fuzzy matches from the core registry, best first; the prompt drives it by key."""

    DEFAULT_CSS = """
    SlashCompletions {
        display: none;
        height: auto;
        max-height: 10;
        border: round $accent;
        background: $surface;
    }
    SlashCompletions.-open {
        display: block;
    }
    """

    def __init__(self, registry: CommandRegistry, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.can_focus = False
        self.registry = registry
        self.matches: list[SlashCommand] = []

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def update_for(self, text: str) -> bool:
        """Show the commands matching a prompt that is a command name being typed."""
        typing_name = text.startswith("/") and "\n" not in text and " " not in text
        self.matches = self.registry.complete(text)[:MAX_SHOWN] if typing_name else []
        self.clear_options()
        if not self.matches:
            self.remove_class("-open")
            return False
        self.add_options(Option(_row(command), id=command.name) for command in self.matches)
        self.highlighted = 0
        self.add_class("-open")
        return True

    def close(self) -> None:
        self.matches = []
        self.remove_class("-open")

    def move(self, step: int) -> None:
        if not self.matches:
            return
        current = self.highlighted or 0
        self.highlighted = (current + step) % len(self.matches)

    def chosen(self) -> SlashCommand | None:
        if not self.matches or self.highlighted is None:
            return None
        return self.matches[self.highlighted]
