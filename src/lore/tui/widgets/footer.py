"""The footer of key bindings, rebuilt once for a burst of binding changes.

Textual's footer answers every change of the active bindings by removing and mounting all
of its keys again. Switching pane changes the focus several times in one go (the old pane
lets go, the tab bar moves, the new pane takes it), so the keys were rebuilt three or four
times over, some 35 ms each on a small machine. Here a change asks for one rebuild a moment
later, and changes that arrive before it runs share it: it reads the bindings as they are
by then.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer

# Long enough for one pane switch's focus changes to land together, short enough to go unseen.
REBUILD_DELAY = 0.05


class LoreFooter(Footer):
    _rebuild_pending = False

    def bindings_changed(self, screen: Screen[object]) -> None:
        first = not self._bindings_ready
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._rebuild_pending:
            self._rebuild_pending = True
            if first:
                # The keys appear as soon as the app starts, as with Textual's own footer.
                self.call_after_refresh(self._rebuild)
            else:
                self.set_timer(REBUILD_DELAY, self._rebuild)

    async def _rebuild(self) -> None:
        self._rebuild_pending = False
        await self.recompose()
