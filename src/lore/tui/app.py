"""The full-screen app: a header, five panes in tabs, a footer, and the work that feeds them.

The first screen is composed without touching the disk beyond the theme files: the note
index is opened, the quarantine counted and the vault watched in thread workers afterwards.
Panes other than Ask are mounted lazily, just after the first screen is shown.

The panes sit directly on the screen under a tab bar, one shown at a time, with no
container around them: every full-height widget on screen is drawn line by line on each
full frame, even where other widgets cover it, so each layer left out is a screenful less
to draw.
"""

from __future__ import annotations

import gc
import importlib
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.message import Message
from textual.theme import Theme
from textual.widget import MountError, Widget
from textual.widgets import Tab, Tabs
from textual.worker import Worker, get_current_worker

from lore.core.public import DEFAULT_THEME, remember_theme, themes_at_start
from lore.core.session import LoreSession
from lore.errors import LoreError
from lore.tui.held_text import notify_plain
from lore.tui.messages import (
    AskQuestion,
    ContextUsage,
    ModelChanged,
    OpenNote,
    ShowPane,
    ThemeChosen,
    VaultChanged,
    VaultWritten,
)
from lore.tui.palette import LoreCommands, PaletteCommand
from lore.tui.panes.base import LorePane
from lore.tui.panes.pane_support import report_worker_failure
from lore.tui.terminal_keys import read_escaped_digits_as_alt
from lore.tui.theming import load_textual_themes, lore_variable_defaults
from lore.tui.widgets.footer import LoreFooter
from lore.tui.widgets.header import LoreHeader
from lore.tui.widgets.meter import ContextMeter

POLL_SECONDS = 2.0
# Allocations between young-generation collections while the app runs (CPython: 700).
# Drawing one frame makes thousands of short-lived strips and segments; at 700, many are
# caught alive by a collection mid-frame and promoted, and enough promotions trigger a
# full collection. Ten times as many lets most die young, unseen by the collector.
GC_YOUNG_THRESHOLD = 7000

# (pane id, tab label, "module:Class"); the order is the order of the tabs and number keys.
PANES: tuple[tuple[str, str, str], ...] = (
    ("ask", "Ask", "lore.tui.panes.ask:AskPane"),
    ("history", "History", "lore.tui.panes.history:HistoryPane"),
    ("metrics", "Metrics", "lore.tui.panes.metrics:MetricsPane"),
    ("quarantine", "Quarantine", "lore.tui.panes.quarantine:QuarantinePane"),
    ("notes", "Notes", "lore.tui.panes.notes:NotesPane"),
)

APP_HELP = """\
Lore answers questions from the notes in this vault and keeps every turn.

**Panes:** `1` Ask · `2` History · `3` Metrics · `4` Quarantine · `5` Notes (Alt with the
number works while typing). **Ctrl+P** opens the command palette: panes, themes, notes and
the focused pane's actions. **Ctrl+Q** quits.

Keys can be remapped in `lore.yaml` under `keymap:`, by the id shown in the table below.
"""


def _pane_bindings() -> list[BindingType]:
    bindings: list[BindingType] = []
    for number, (pane_id, label, _) in enumerate(PANES, 1):
        bindings.append(
            Binding(
                f"{number},alt+{number}",
                f"show_pane('{pane_id}')",
                label,
                show=False,
                id=f"app.pane.{pane_id}",
                tooltip=f"Show the {label} pane",
            )
        )
    return bindings


def lore_widget_classes() -> Iterator[type[DOMNode]]:
    """Every widget and screen class Lore defines, dialogs not yet opened included."""
    import pkgutil

    import lore.tui

    for module_info in pkgutil.walk_packages(lore.tui.__path__, "lore.tui."):
        module = importlib.import_module(module_info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, DOMNode)
                and value.__module__ == module.__name__
            ):
                yield value


def pane_class(spec: str) -> type[LorePane]:
    module_name, _, class_name = spec.partition(":")
    found = vars(importlib.import_module(module_name))[class_name]
    if not (isinstance(found, type) and issubclass(found, LorePane)):
        raise TypeError(f"{spec} is not a pane")
    return found


class LoreApp(App[None]):
    # Absolute, so subclasses defined elsewhere (tests, benchmarks) find the same stylesheet.
    CSS_PATH = Path(__file__).parent / "lore.tcss"
    TITLE = "Lore"
    COMMANDS: ClassVar[set[Any]] = {LoreCommands}
    PANE_LABELS: ClassVar[dict[str, str]] = {pane_id: label for pane_id, label, _ in PANES}
    BINDINGS: ClassVar[list[BindingType]] = [
        *_pane_bindings(),
        Binding("f1", "help", "Help", id="app.help", tooltip="Help for the focused pane"),
        Binding("ctrl+q", "quit", "Quit", priority=True, id="app.quit", tooltip="Leave Lore"),
    ]

    def __init__(self, session: LoreSession, *, collector_paused: bool = False) -> None:
        super().__init__()
        # Whether Python's collector was paused for the start (see `run_app`), to resume it
        # once the first screen is drawn.
        self.collector_paused = collector_paused
        read_escaped_digits_as_alt()
        self.session = session
        self.quarantine_count: int | None = None
        self._pending_note: str | None = None
        # The pane last asked for, which the tab bar reports as active a moment later.
        self.requested_pane: str | None = None
        self._lore_themes: list[str] = []
        # Whether this app moved the start-up heap out of the garbage collector's reach, and
        # the collector's thresholds to restore on exit.
        self.heap_frozen = False
        self._gc_thresholds: tuple[int, int, int] | None = None
        # Theme files are tiny and decide how the first screen looks, so they are read here,
        # before the first frame, rather than swapping colours a moment after it.
        catalogue, remembered = themes_at_start()
        themes, self._theme_problems = load_textual_themes(catalogue)
        for theme in themes:
            self.register_theme(theme)
            self._lore_themes.append(theme.name)
        self._initial_theme = self._pick_theme(remembered)
        # Work a pane would start as the first screen is drawn waits until it is whole.
        self._first_screen_drawn = False
        self._waiting_for_first_screen: list[Callable[[], object]] = []
        # Set without running the watcher now: it runs once as the app starts, as it does for
        # the default theme, instead of a second time re-reading the whole stylesheet.
        self.set_reactive(App.theme, self._initial_theme)

    # -- composition -------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        provider_name, model = self.session.model_label
        yield LoreHeader(
            self.session.name, provider_name, model, self.session.config.ask.budget_tokens
        )
        yield Tabs(
            *(
                Tab(self._tab_label(number, label), id=pane_id)
                for number, (pane_id, label, _) in enumerate(PANES, 1)
            ),
            id="pane-tabs",
        )
        # Only the first pane is needed for the first screen; the others (and the modules
        # they need) are made and mounted, hidden, once it has been drawn.
        first_id, _, first_spec = PANES[0]
        yield self._make_pane(first_id, first_spec)
        yield LoreFooter()

    def _make_pane(self, pane_id: str, spec: str) -> LorePane:
        return pane_class(spec)(self.session, id=f"{pane_id}-pane")

    @staticmethod
    def _tab_label(number: int, label: str, count: int | None = None) -> str:
        suffix = f" ({count:,})" if count is not None else ""
        return f"{number} {label}{suffix}"

    def on_mount(self) -> None:
        for problem in self._theme_problems:
            notify_plain(self, problem, title="Theme not loaded", severity="warning", timeout=8)
        self.theme_changed_signal.subscribe(self, self._remember_theme_choice)
        keymap = self.session.config.keymap
        if keymap:
            # Ids no binding has are ignored; they are reported once every pane is mounted.
            self.set_keymap(dict(keymap))
        # Background work starts once the first screen is drawn, so it never delays it.
        self.call_after_refresh(self._after_first_frame)

    async def _after_first_frame(self) -> None:
        if not self.is_running:
            return
        # Focus rebuilds the footer's bindings: done now, the first screen waits for none of
        # it. A pane asked for meanwhile (a key pressed at start-up) keeps the focus it got.
        first = self.pane(PANES[0][0])
        wanted = self.requested_pane or self.active_pane
        if self.focused is None and first is not None and wanted == PANES[0][0]:
            first.focus_default()
        # The footer has chosen its keys by now: they complete the first screen. Threads
        # started before that frame would share the interpreter with it, and opening an index
        # that is out of step with the notes (a copied vault) kept the footer away for 0.6 s.
        # The keys are mounted a few messages later and so may be drawn a frame after the
        # threads start; waiting for that frame as well measured no faster on either vault.
        self.call_after_refresh(self._start_background_work)

    def after_first_screen(self, callback: Callable[[], object]) -> None:
        """Call `callback` once the first screen is whole (after the next frame, if it is)."""
        if self._first_screen_drawn:
            self.call_after_refresh(callback)
        else:
            self._waiting_for_first_screen.append(callback)

    async def _start_background_work(self) -> None:
        if not self.is_running:
            return
        self._first_screen_drawn = True
        self._resume_collector()
        for callback in self._waiting_for_first_screen:
            callback()
        self._waiting_for_first_screen.clear()
        self._open_index()
        self._count_quarantine()
        self._watch_vault()
        # The other panes take a few hundred milliseconds to make, most of it importing
        # their modules.
        self.call_after_refresh(self._mount_hidden_panes)

    async def _mount_hidden_panes(self) -> None:
        if not self.is_running:
            return
        pending = [self._make_pane(pane_id, spec) for pane_id, _, spec in PANES[1:]]
        for widget in pending:
            widget.display = False
        try:
            # On the screen the footer is on, even if a dialog is open over it by now.
            footer = self.query_one(LoreFooter)
            await footer.screen.mount_all(pending, before=footer)
        except MountError:
            return  # the app is closing
        # A pane asked for before it was mounted (a key pressed at start-up) is shown now.
        active = self.active_pane
        self._show_content(active)
        if active != PANES[0][0]:
            self.call_after_refresh(self._focus_pane, active)
        if self._pending_note is not None:
            self._open_in_notes(self._pending_note)
            self._pending_note = None
        self._report_unknown_keymap_ids(self.session.config.keymap)
        self._freeze_startup_heap()

    def _freeze_startup_heap(self) -> None:
        """Keep the objects made while starting up out of every later full collection.

        Modules, styles and the mounted panes live as long as the app, yet each full (oldest
        generation) collection walks all of them: a pause of tens of milliseconds, every few
        pages while scrolling a long history. Frozen now, after the first screen and the
        panes, they are never walked again; they are handed back to the collector on exit.
        Young collections are made rarer too (GC_YOUNG_THRESHOLD), so fewer of the objects
        each frame makes live long enough to be promoted and bring on a full collection.
        """
        if not self.is_running:
            return
        gc.freeze()
        self.heap_frozen = True
        if self._gc_thresholds is None:
            young, middle, old = self._gc_thresholds = gc.get_threshold()
            if 0 < young < GC_YOUNG_THRESHOLD:
                gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)

    def _resume_collector(self) -> None:
        """Resume a collector paused for the start, with what the start made frozen first:
        never collected, those objects would all be walked by its very first pass."""
        if self.collector_paused:
            self.collector_paused = False
            if self.is_running:
                gc.freeze()
                self.heap_frozen = True
            gc.enable()

    def on_unmount(self) -> None:
        # Another app may start in this process (tests do): let this one's objects be freed,
        # and leave the collector as it was found.
        self._resume_collector()
        if self.heap_frozen:
            gc.unfreeze()
            self.heap_frozen = False
        if self._gc_thresholds is not None:
            gc.set_threshold(*self._gc_thresholds)
            self._gc_thresholds = None

    # -- providers and data the panes share -------------------------------------------------

    def note_documents(self) -> list[dict[str, Any]]:
        """Stored fields of every note (call from a worker thread: it may open the index)."""
        return self.session.note_documents()

    # -- panes -------------------------------------------------------------------------------

    @property
    def tab_bar(self) -> Tabs:
        return self.query_one("#pane-tabs", Tabs)

    @property
    def active_pane(self) -> str:
        return self.tab_bar.active or PANES[0][0]

    def pane(self, pane_id: str) -> LorePane | None:
        try:
            return self.query_one(f"#{pane_id}-pane", LorePane)
        except Exception:
            return None

    def action_show_pane(self, pane_id: str) -> None:
        self.show_pane(pane_id)

    def show_pane(self, pane_id: str) -> None:
        if pane_id not in self.PANE_LABELS:
            notify_plain(self, f"no pane named {pane_id!r}", severity="warning")
            return
        self.requested_pane = pane_id
        if self.active_pane != pane_id:
            # Drop focus left in the old pane, or restoring it (say, as the palette closes)
            # would give the keys to a pane no longer shown.
            self.tab_bar.screen.set_focus(None)
        self.tab_bar.active = pane_id
        self._show_content(pane_id)
        self.call_after_refresh(self._focus_pane, pane_id)

    def _show_content(self, pane_id: str) -> None:
        """Show the pane under the tab bar, once it is mounted (until then, the tab alone)."""
        shown = self.pane(pane_id)
        if shown is None:
            return
        with self.batch_update():
            for other_id in self.PANE_LABELS:
                widget = shown if other_id == pane_id else self.pane(other_id)
                if widget is not None:
                    widget.display = widget is shown

    def _focus_pane(self, pane_id: str) -> None:
        if self.requested_pane not in (None, pane_id):
            return  # another pane was asked for since; focusing this one would switch back
        widget = self.pane(pane_id)
        if widget is not None:
            widget.focus_default()

    def pane_commands(self) -> list[PaletteCommand]:
        """The active pane's own palette entries, if it offers any."""
        widget = self.pane(self.active_pane)
        return widget.palette_commands() if widget is not None else []

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        # A tab picked by mouse or by the arrow keys on the tab bar; panes may hold tabs too.
        if event.tabs.id != "pane-tabs" or not event.tab.id:
            return
        event.stop()
        self._show_content(event.tab.id)
        self.call_after_refresh(self._focus_pane, event.tab.id)

    def open_note(self, ref: str) -> None:
        self.show_pane("notes")
        self.call_after_refresh(self._open_in_notes, ref)

    def _open_in_notes(self, ref: str) -> None:
        from lore.tui.panes.notes import NotesPane

        widget = self.pane("notes")
        if isinstance(widget, NotesPane):
            widget.open_note(ref)
        else:
            # Just after start-up the pane may not be mounted yet; it opens this when it is.
            self._pending_note = ref

    def on_open_note(self, message: OpenNote) -> None:
        message.stop()
        self.open_note(message.ref)

    def on_ask_question(self, message: AskQuestion) -> None:
        message.stop()
        from lore.tui.panes.ask import AskPane

        self.show_pane("ask")
        widget = self.pane("ask")
        if isinstance(widget, AskPane):
            widget.put_question(message.question, submit=message.submit)

    # Both may arrive as the app closes, its header already gone: there is then nothing to do.

    def show_model(self, provider: str, model: str) -> None:
        for header in self.query(LoreHeader):
            header.set_model(provider, model)

    def set_context_usage(self, used: int | None) -> None:
        for meter in self.query(ContextMeter):
            meter.set_usage(used, self.session.config.ask.budget_tokens)

    def on_show_pane(self, message: ShowPane) -> None:
        self.show_pane(message.pane_id)

    def on_theme_chosen(self, message: ThemeChosen) -> None:
        message.stop()
        self.apply_theme(message.theme)

    def on_model_changed(self, message: ModelChanged) -> None:
        self.show_model(message.provider, message.model)

    def on_context_usage(self, message: ContextUsage) -> None:
        self.set_context_usage(message.used)

    def on_vault_written(self, message: VaultWritten) -> None:
        self.broadcast_change(message.kinds, skip=message.origin)

    # -- help --------------------------------------------------------------------------------

    def focused_pane(self) -> Widget | None:
        node = self.focused
        while node is not None:
            if isinstance(node, LorePane):
                return node
            node = node.parent  # type: ignore[assignment]
        return self.pane(self.active_pane)

    def action_help(self) -> None:
        from lore.tui.widgets.help_screen import HelpScreen, keys_as_mapped, node_bindings

        widget = self.focused_pane()
        keymap = self.session.config.keymap
        pane_help = ""
        if isinstance(widget, LorePane):
            # The keys of the pane and of the widgets in it, named as `keymap:` moved them.
            pane_bindings = node_bindings(widget.walk_children(with_self=True))
            pane_help = keys_as_mapped(widget.HELP, pane_bindings, keymap).strip()
        app_help = keys_as_mapped(APP_HELP, node_bindings([self]), keymap)
        title = self.PANE_LABELS.get(self.active_pane, "Lore")
        parts = [f"# {title}", pane_help, "## Lore", app_help, self._keys_table()]
        self.push_screen(HelpScreen("\n\n".join(part for part in parts if part)))

    def _keys_table(self) -> str:
        rows = ["| Key | Action | Id |", "|---|---|---|"]
        seen: set[str] = set()
        for key, active in self.active_bindings.items():
            binding = active.binding
            if binding.system or not (binding.description or binding.tooltip):
                continue
            if (binding.id or binding.action) in seen:
                continue
            seen.add(binding.id or binding.action)
            shown = self.get_key_display(binding)
            what = (binding.tooltip or binding.description).replace("|", "\\|")
            rows.append(f"| `{shown or key}` | {what} | {binding.id or ''} |")
        return "\n".join(rows) if len(rows) > 2 else ""

    # -- themes ------------------------------------------------------------------------------

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return lore_variable_defaults(self.current_theme)

    def _pick_theme(self, remembered: str | None) -> str:
        wanted = [remembered, self.session.config.ui.theme, DEFAULT_THEME]
        for name in wanted:
            if name and name in self.available_themes:
                return name
        return "textual-dark"

    def lore_theme_names(self) -> list[str]:
        return sorted(self.available_themes)

    def apply_theme(self, name: str) -> bool:
        """Switch to theme `name`; False when it is not known yet.

        A theme file added since the app started is looked for on a worker, and applied
        when it is found.
        """
        if name not in self.available_themes:
            self._find_new_theme(name)
            return False
        self.theme = name
        return True

    @work(thread=True, exclusive=True, exit_on_error=False, group="theme-files")
    def _find_new_theme(self, name: str) -> None:
        themes, problems = load_textual_themes()
        self.post_message(self.ThemesFound(name, themes, problems))

    class ThemesFound(Message):
        """Theme files read again, looking for `name`."""

        def __init__(self, name: str, themes: list[Theme], problems: list[str]) -> None:
            super().__init__()
            self.wanted = name
            self.themes = themes
            self.problems = problems

    def on_lore_app_themes_found(self, message: ThemesFound) -> None:
        name, themes, problems = message.wanted, message.themes, message.problems
        for theme in themes:
            if theme.name not in self.available_themes:
                self.register_theme(theme)
                self._lore_themes.append(theme.name)
        if name in self.available_themes:
            self.theme = name
            return
        # A broken file of that name is the likely reason; others were reported at start.
        for problem in (problem for problem in problems if name in problem):
            notify_plain(self, problem, title="Theme not loaded", severity="warning")
        names = ", ".join(sorted(self._lore_themes))
        notify_plain(self, f"no theme named {name!r} (try: {names})", severity="warning")

    def _remember_theme_choice(self, theme: Theme) -> None:
        self._save_theme(theme.name)

    @work(thread=True, exclusive=True, exit_on_error=False, group="theme")
    def _save_theme(self, name: str) -> None:
        remember_theme(name)

    # -- keymap ------------------------------------------------------------------------------

    def _report_unknown_keymap_ids(self, keymap: dict[str, str]) -> None:
        if not keymap:
            return
        unknown = sorted(set(keymap) - set(self.known_binding_ids()))
        if unknown:
            notify_plain(
                self,
                f"lore.yaml keymap: unknown binding id {unknown[0]!r}"
                + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""),
                severity="warning",
                timeout=8,
            )

    def known_binding_ids(self) -> Iterable[str]:
        """The id of every binding: Lore's own widgets and dialogs, and those on screen."""
        classes: list[type[Any]] = [type(self), *lore_widget_classes()]
        classes.extend(type(node) for node in self.screen.walk_children(with_self=True))
        for cls in classes:
            for klass in cls.__mro__:
                for binding in klass.__dict__.get("BINDINGS", []):
                    if isinstance(binding, Binding) and binding.id:
                        yield binding.id

    # -- background work ---------------------------------------------------------------------

    class DiskChanged(Message):
        """The watcher saw `kinds` change on disk, written by someone other than this app."""

        def __init__(self, kinds: frozenset[str]) -> None:
            super().__init__()
            self.kinds = kinds

    class QuarantineCounted(Message):
        def __init__(self, count: int) -> None:
            super().__init__()
            self.count = count

    @work(thread=True, exclusive=True, exit_on_error=False, group="index")
    def _open_index(self) -> None:
        if self.session.open_index():
            self.post_message(self.DiskChanged(frozenset({"notes"})))

    @work(thread=True, exclusive=True, exit_on_error=False, group="quarantine-count")
    def _count_quarantine(self) -> None:
        self.post_message(self.QuarantineCounted(self.session.quarantine.count()))

    def on_lore_app_disk_changed(self, message: DiskChanged) -> None:
        self.broadcast_change(message.kinds)

    def on_lore_app_quarantine_counted(self, message: QuarantineCounted) -> None:
        count = self.quarantine_count = message.count
        number = [pane_id for pane_id, _, _ in PANES].index("quarantine") + 1
        # The count may arrive as the app closes, its tabs already gone.
        for tab in self.query("#pane-tabs #quarantine").results(Tab):
            tab.label = self._tab_label(number, "Quarantine", count)

    @work(thread=True, exclusive=True, exit_on_error=False, group="watch")
    def _watch_vault(self) -> None:
        worker = get_current_worker()

        def stopping() -> bool:
            # A worker started as the app began to close is never cancelled: watch for both.
            return worker.is_cancelled or not self.is_running

        self.session.poll_changes()
        while not stopping():
            deadline = time.monotonic() + POLL_SECONDS
            while time.monotonic() < deadline and not stopping():
                time.sleep(0.1)
            if stopping():
                return
            try:
                changed = self.session.poll_changes()
            except LoreError:
                continue
            if changed:
                self.post_message(self.DiskChanged(changed))

    def broadcast_change(self, kinds: frozenset[str], *, skip: Widget | None = None) -> None:
        """Tell every pane what changed on disk; each refreshes only what it shows."""
        for pane_id, _, _ in PANES:
            widget = self.pane(pane_id)
            if widget is not None and widget is not skip:
                widget.post_message(VaultChanged(kinds))
        if "quarantine" in kinds or "audit" in kinds:
            self._count_quarantine()

    def on_vault_changed(self, message: VaultChanged) -> None:
        # Panes' copies bubble up to here once handled; nothing more to do.
        message.stop()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # Panes report their own workers' failures; this reports the app's.
        if event.worker.node is self:
            report_worker_failure(self, event.worker, event.state)  # type: ignore[arg-type]


def run_app(session: LoreSession, *, collector_paused: bool = False) -> None:
    """Run the app in this process. `collector_paused`: the caller paused Python's collector
    before importing this module, and the app resumes it once its first screen is drawn."""
    LoreApp(session, collector_paused=collector_paused).run()


__all__ = ["PANES", "LoreApp", "run_app"]
