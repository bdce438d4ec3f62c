"""The yardstick for Lore's first screen: a Textual app with a header, a footer and five empty
tabs named like Lore's panes, and nothing else. bench/startup_bench.py launches it in a
terminal as a user launches `lore`, and times both until their first screen is written.

Run: python bench/bare_textual_app.py
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Footer, Header, TabbedContent, TabPane

PANE_NAMES = ("Ask", "History", "Metrics", "Quarantine", "Notes")


class BareApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent():
            for name in PANE_NAMES:
                yield TabPane(name)
        yield Footer()


if __name__ == "__main__":
    BareApp().run()
