"""The footer of key bindings, rebuilt once for a burst of binding changes.

Textual's footer answers every change of the active bindings by removing and mounting all
of its keys again. Switching pane changes the bindings several times in one go (the old pane
lets go of the focus, the new pane takes it, then its actions turn on as its data arrives),
so the keys were rebuilt three or four times over, some 35 ms each on a small machine. Here
a change asks for one rebuild a moment later, changes that arrive before it runs share it,
and a rebuild that would show the keys already shown is skipped.

Textual's footer also lets keys run off the right edge, cut mid-word under the palette key
("P Promo▏"). Here the keys are fitted to the width: all of them with the usual spacing if
they fit, else tighter spacing, dropping keys from the end of the list (the focused widget's
own keys come first, the app's last) until the rest fit. F1 Help is always shown: it lists
every key, shown or not.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

# Long enough for one pane switch's focus changes to land together, short enough to go unseen.
REBUILD_DELAY = 0.05
# With nothing focused the focus is usually on its way to a pane; wait for it this long at most.
UNFOCUSED_REBUILD_DELAY = 0.3
# Cells a key takes besides its key and description, as Textual's FooterKey styles draw it:
# padding either side of the key and after the description, or, in the compact footer, one
# space between them and a margin after the key.
KEY_SPACING = 3
COMPACT_KEY_SPACING = 2
# The palette key on the right: "^p palette" with its left border, and its right padding
# (a margin in the compact footer).
PALETTE_SPACING = 2


@dataclass(frozen=True)
class FooterEntry:
    """One key the footer could show."""

    key: str
    description: str
    pinned: bool = False

    def width(self, compact: bool) -> int:
        if not self.description:
            return cell_len(self.key) + (1 if compact else 0)
        spacing = COMPACT_KEY_SPACING if compact else KEY_SPACING
        return cell_len(self.key) + cell_len(self.description) + spacing


def fit_entries(
    entries: Sequence[FooterEntry], width: int, palette: str = ""
) -> tuple[bool, list[int]]:
    """Which entries fit in `width` cells beside the palette key: (compact, indexes kept).

    Every entry with the usual spacing if they all fit; otherwise compact spacing, keeping
    pinned entries and then the others in order while they fit, so a key further down the
    list may take the room one too long for it left.
    """

    room = width - cell_len(palette) - PALETTE_SPACING if palette else width
    if sum(entry.width(False) for entry in entries) <= room:
        return False, list(range(len(entries)))
    # In compact spacing the last key's margin may run under the palette key's border.
    left = room + 1
    kept = {index for index, entry in enumerate(entries) if entry.pinned}
    left -= sum(entries[index].width(True) for index in kept)
    for index, entry in enumerate(entries):
        if index not in kept and entry.width(True) <= left:
            kept.add(index)
            left -= entry.width(True)
    return True, sorted(kept)


class LoreFooter(Footer):
    # Shown whatever the width: the help lists every key, including those left out here.
    PINNED_IDS: ClassVar[frozenset[str]] = frozenset({"app.help"})

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
        """Everything `compose` draws, so equal values draw equal footers."""
        shown, palette, compact = self._layout()
        return (
            tuple(
                (binding.key, binding.action, description, enabled, tooltip, display)
                for binding, enabled, tooltip, display, description in shown
            ),
            palette,
            compact,
        )

    def _layout(
        self,
    ) -> tuple[list[tuple[Binding, bool, str, str, str]], tuple[object, ...] | None, bool]:
        """The keys that fit the width, the palette key, and whether spacing is compact."""
        active = self.screen.active_bindings
        keys: list[tuple[Binding, bool, str, str, str]] = []
        seen_actions: set[str] = set()
        for _, binding, enabled, tooltip in active.values():
            # One key per action, as Textual's footer shows (its first binding).
            if not binding.show or binding.action in seen_actions:
                continue
            seen_actions.add(binding.action)
            display = self.app.get_key_display(binding)
            keys.append((binding, enabled, tooltip, display, binding.description))
        palette: tuple[object, ...] | None = None
        palette_label = ""
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            found = active.get(self.app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _, binding, enabled, tooltip = found
                display = self.app.get_key_display(binding)
                palette = (binding.key, binding.action, binding.description, enabled, display)
                palette_label = f"{display} {binding.description}"
        entries = [
            FooterEntry(display, description, pinned=binding.id in self.PINNED_IDS)
            for binding, _, _, display, description in keys
        ]
        width = self.size.width or self.app.size.width
        compact, kept = fit_entries(entries, width, palette_label)
        return [keys[index] for index in kept], palette, compact

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        shown, _, compact = self._layout()
        # Set quietly: the keys are made below with the spacing to match.
        self.set_reactive(Footer.compact, compact)
        self.set_class(compact, "-compact")
        for binding, enabled, tooltip, display, description in shown:
            yield FooterKey(
                binding.key,
                display,
                description,
                binding.action,
                disabled=not enabled,
                tooltip=tooltip,
            ).data_bind(compact=Footer.compact)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            found = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _, binding, enabled, _ = found
                yield FooterKey(
                    binding.key,
                    self.app.get_key_display(binding),
                    binding.description,
                    binding.action,
                    classes="-command-palette",
                    disabled=not enabled,
                    tooltip=binding.tooltip or binding.description,
                )

    def on_resize(self) -> None:
        # Another width may fit other keys; `_rebuild` skips it when it would not.
        if self._bindings_ready and not self._rebuild_pending and self.is_attached:
            self._rebuild_pending = True
            self.call_after_refresh(self._rebuild)
