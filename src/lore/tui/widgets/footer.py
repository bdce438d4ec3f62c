"""The footer of key bindings, rebuilt once for a burst of binding changes.

Textual's footer answers every change of the active bindings by removing and mounting all
of its keys again. Switching pane changes the bindings several times in one go (the old pane
lets go of the focus, the new pane takes it, then its actions turn on as its data arrives),
so the keys were rebuilt three or four times over, some 35 ms each on a small machine. Here
a change asks for one rebuild a moment later, changes that arrive before it runs share it,
and a rebuild that would show the keys already shown is skipped.
"""

from __future__ import annotations

from collections.abc import Hashable

from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer

# Long enough for one pane switch's focus changes to land together, short enough to go unseen.
REBUILD_DELAY = 0.05
# With nothing focused the focus is usually on its way to a pane; wait for it this long at most.
UNFOCUSED_REBUILD_DELAY = 0.3


class LoreFooter(Footer):
    _rebuild_pending = False
    _waiting_for_focus: Timer | None = None
    _shown_keys: Hashable = None

    def bindings_changed(self, screen: Screen[object]) -> None:
        first = not self._bindings_ready
        self._bindings_ready = True
        if not screen.app.app_focus or not self.is_attached or screen is not self.screen:
            return
        if self._waiting_for_focus is not None and screen.focused is not None:
            # The focus has landed: rebuild soon rather than at the longer wait's end.
            self._waiting_for_focus.stop()
            self._waiting_for_focus = None
            self._rebuild_pending = False
        if self._rebuild_pending:
            return
        self._rebuild_pending = True
        if first:
            # The keys appear as soon as the app starts, as with Textual's own footer.
            self.call_after_refresh(self._rebuild)
        elif screen.focused is None:
            self._waiting_for_focus = self.set_timer(UNFOCUSED_REBUILD_DELAY, self._rebuild)
        else:
            self.set_timer(REBUILD_DELAY, self._rebuild)

    async def _rebuild(self) -> None:
        self._rebuild_pending = False
        self._waiting_for_focus = None
        if not self.is_attached:
            return
        keys = self._keys_to_show()
        if keys == self._shown_keys:
            return
        self._shown_keys = keys
        await self.recompose()

    def _keys_to_show(self) -> Hashable:
        """Everything `compose` reads from the bindings, so equal values draw equal footers."""
        return tuple(
            (
                binding.key,
                binding.key_display,
                binding.action,
                binding.description,
                binding.show,
                binding.group,
                enabled,
                tooltip,
            )
            for _, binding, enabled, tooltip in self.screen.active_bindings.values()
        )
