"""Time to the first screen of `lore` against a bare Textual app, and History pane scrolling.

Vault: 10,000 notes cut from the Python 3.11 documentation (the same corpus and builder as
bench/index_bench.py, index already built as a user's would be) with a 100,000-turn history
whose questions and answers are drawn from those notes. Written once under bench/.data/.

First screen: from constructing the app (for Lore, from opening the vault) until the first
frame has been composed, laid out and rendered, in a headless terminal of 120x40. The bare
app has a Header, a Footer and five empty tabs. Runs alternate between the two apps in this
one process after a warm-up of each (45 rounds by default: the same app's time varies by 2x
from run to run on a small machine); medians are compared. Target: Lore within 1.3x.

History: in the whole app once it has started, Alt+2 shows the History pane on the
100,000-turn history (time until its first rows are on screen), then Page Down through it,
timing each page until its rows are read from disk and a frame shows them. Target: p95 under
50 ms per page.

Run: .venv/bin/python bench/tui_startup.py [--rounds N] [--pages N] [--fresh]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Header, TabbedContent, TabPane

sys.path.insert(0, str(Path(__file__).resolve().parent))

from index_bench import CORPUS_NAME, DATA, build_vault
from lore.core.session import LoreSession
from lore.core.turns import Turn, TurnTimings, TurnUsage
from lore.core.vault import Vault

NOTES = 10_000
TURNS = 100_000
SIZE = (120, 40)
TARGET_RATIO = 1.3
PAGE_TARGET_MS = 50.0


# -- the data ------------------------------------------------------------------------------


def build_history(vault: Vault, turns: int, seed: int = 11) -> None:
    """`turns` turns asking about the vault's notes, answered from their text, with citations."""
    rng = random.Random(seed)
    documents = vault.index.all_documents()
    bodies = {doc["id"]: doc for doc in documents}
    ids = sorted(bodies)
    lines = []
    start = 1_767_225_600  # 2026-01-01
    for number in range(turns):
        note = bodies[rng.choice(ids)]
        title = note["title"]
        question = rng.choice(
            [f"What does the documentation say about {title}?", f"Explain {title}", f"{title}?"]
        )
        answer = f"From the notes: {title} is covered in the documentation [1]."
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start + number * 60))
        turn = Turn(
            id=f"t{(start + number * 60) * 1000:011x}{number:06x}",
            time=stamp,
            question=question,
            resolved_question=question,
            answer=answer,
            cited=[note["id"]],
            provider="offline",
            model="extractive",
            usage=TurnUsage(estimated_prompt_tokens=rng.randint(800, 4000), estimated_completion_tokens=60),
            timings=TurnTimings(retrieval_ms=3.0, first_token_ms=rng.uniform(50, 900), total_ms=rng.uniform(900, 6000)),
        )  # fmt: skip
        lines.append(json.dumps(turn.to_record(), ensure_ascii=False, separators=(",", ":")))
    vault.layout.history.write_text("\n".join(lines) + "\n", encoding="utf-8")


def prepare(fresh: bool) -> Path:
    root = DATA / f"tui-vault-{NOTES}"
    marker = root / ".tui-bench-complete"
    if marker.exists() and not fresh:
        return root
    if root.exists():
        shutil.rmtree(root)
    source = DATA / f"vault-{NOTES}"
    if (source / ".bench-complete").exists():
        print(f"copying {source} ...", flush=True)
        shutil.copytree(source, root)
    else:
        print(f"writing {NOTES:,} notes to {root} ...", flush=True)
        build_vault(root, NOTES)
    vault = Vault.open(root)
    print("indexing (once, as a user's vault already would be) ...", flush=True)
    vault.reconcile()
    print(f"writing a {TURNS:,}-turn history ...", flush=True)
    build_history(vault, TURNS)
    vault.close()
    marker.write_text("ok")
    return root


# -- frames --------------------------------------------------------------------------------

_frames: list[float] = []
# Told of every frame as it is rendered, with its time (see first_screen_ms).
_frame_watchers: list[Callable[[float], None]] = []
_original_refresh = Screen._compositor_refresh


def _counting_refresh(self: Screen[object]) -> None:
    # Every frame the compositor renders (headless still renders; it just is not written).
    _original_refresh(self)
    now = time.perf_counter()
    _frames.append(now)
    for watcher in _frame_watchers:
        watcher(now)


Screen._compositor_refresh = _counting_refresh  # type: ignore[method-assign]


async def next_frame_after(moment: float, timeout: float = 10.0) -> float:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        for frame in reversed(_frames):
            if frame >= moment:
                return frame
            break
        await asyncio.sleep(0.0005)
    raise TimeoutError("no frame was rendered")


def shown(widget: Widget) -> bool:
    return widget.is_mounted and widget.region.area > 0


# -- first screen ----------------------------------------------------------------------------


class BareApp(App[None]):
    """The yardstick: a header, a footer and five empty tabs."""

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent():
            for name in ("Ask", "History", "Metrics", "Quarantine", "Notes"):
                yield TabPane(name)
        yield Footer()

    def first_screen_ready(self) -> bool:
        return shown(self.query_one(Footer)) and shown(self.query_one(TabPane))


async def first_screen_ms(make_app: Callable[[], App[None]]) -> float:
    """Construction to the first rendered frame that shows the app's first screen.

    The screen is checked as each frame is rendered, not by a task polling beside the app:
    polling every half millisecond took turns on the event loop the app was starting on,
    and only saw the screen ready some time after the frame that showed it.
    """
    shown_at: list[float] = []
    app: App[None] | None = None

    def on_frame(at: float) -> None:
        if shown_at or app is None:
            return
        ready = getattr(app, "first_screen_ready", None)
        try:
            done = ready() if ready else True
        except Exception:
            done = False
        if done:
            shown_at.append(at)
            app.exit()

    # The garbage the previous run left is not this run's to collect: each starts as clean
    # as a new process would.
    gc.collect()
    _frame_watchers.append(on_frame)
    try:
        started = time.perf_counter()
        app = make_app()
        await asyncio.wait_for(app.run_async(headless=True, size=SIZE), timeout=60)
    finally:
        _frame_watchers.remove(on_frame)
    if not shown_at:
        raise TimeoutError("the first screen was never shown")
    return (shown_at[0] - started) * 1000


def lore_factory(root: Path) -> Callable[[], App[None]]:
    from lore.tui.app import LoreApp
    from lore.tui.widgets.prompt import PromptArea

    class MeasuredLore(LoreApp):
        def first_screen_ready(self) -> bool:
            return shown(self.query_one(Footer)) and shown(self.query_one(PromptArea))

    def make() -> App[None]:
        return MeasuredLore(LoreSession(Vault.open(root)))

    return make


async def measure_startup(root: Path, rounds: int) -> tuple[list[float], list[float]]:
    make_lore = lore_factory(root)
    # Warm-up: imports and first-use caches of both, not counted.
    await first_screen_ms(BareApp)
    await first_screen_ms(make_lore)
    bare: list[float] = []
    lore: list[float] = []
    for _ in range(rounds):
        bare.append(await first_screen_ms(BareApp))
        lore.append(await first_screen_ms(make_lore))
    return bare, lore


# -- history scrolling -----------------------------------------------------------------------


async def measure_history(root: Path, pages: int) -> tuple[float, list[float], int]:
    """In the whole app, as a user would: once started, Alt+2 shows History, then Page Down."""
    from lore.tui.widgets.history_list import HistoryList

    app = lore_factory(root)()
    timings: list[float] = []
    shown_ms = 0.0
    total = 0

    def rows_loaded(listing: HistoryList) -> bool:
        height = listing.scrollable_content_region.height
        top = listing.scroll_offset.y
        last = min(listing.row_count, top + height) - 1
        return bool(listing.row_count) and listing.row_read(top) and listing.row_read(last)

    async def drawn(listing: HistoryList) -> float:
        """When the rows on screen are read from disk and a frame shows them."""
        while not (shown(listing) and rows_loaded(listing)):
            await asyncio.sleep(0.0005)
        return await next_frame_after(time.perf_counter())

    def started_up() -> bool:
        # The panes other than Ask are mounted just after the first screen.
        return all(app.pane(pane_id) is not None for pane_id in app.PANE_LABELS)  # type: ignore[attr-defined]

    async def autopilot(pilot: Pilot[None]) -> None:
        nonlocal shown_ms, total
        while not started_up():
            await asyncio.sleep(0.001)
        await pilot.pause()
        listing = app.query_one(HistoryList)
        started = time.perf_counter()
        # As the terminal would send it; `pilot.press` would also wait for the whole screen
        # to settle, after the rows are already on it. (Focus is in the Ask prompt, where a
        # bare 2 is text.)
        app.simulate_key("alt+2")
        shown_ms = (await drawn(listing) - started) * 1000
        total = listing.row_count
        listing.focus()
        await pilot.pause()
        for _ in range(pages):
            before = time.perf_counter()
            listing.action_page(1)
            timings.append((await drawn(listing) - before) * 1000)
        app.exit()

    await app.run_async(headless=True, size=SIZE, auto_pilot=autopilot)
    app.session.close()  # type: ignore[attr-defined]
    return shown_ms, timings, total


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=45, help="alternating runs of each app")
    parser.add_argument("--pages", type=int, default=60, help="pages of history to scroll")
    parser.add_argument("--fresh", action="store_true", help="write the bench vault again")
    args = parser.parse_args()
    root = prepare(args.fresh)
    print(f"corpus: {CORPUS_NAME}")
    print(f"vault:  {root}  ({NOTES:,} notes, {TURNS:,} turns)\n", flush=True)

    bare, lore = asyncio.run(measure_startup(root, args.rounds))
    bare_ms, lore_ms = statistics.median(bare), statistics.median(lore)
    ratio = lore_ms / bare_ms
    verdict = "ok" if ratio <= TARGET_RATIO else "OVER TARGET"
    print(f"first screen, median of {args.rounds} alternating runs ({SIZE[0]}x{SIZE[1]}, headless)")
    print(f"  bare Textual app (header, footer, 5 empty tabs): {bare_ms:7.1f} ms")
    print(f"  lore on the bench vault:                         {lore_ms:7.1f} ms")
    print(f"  ratio: {ratio:.2f}x   (target <= {TARGET_RATIO}x: {verdict})\n")

    shown_ms, pages, total = asyncio.run(measure_history(root, args.pages))
    worst = max(pages) if pages else 0.0
    verdict = "ok" if pages and percentile(pages, 0.95) < PAGE_TARGET_MS else "OVER TARGET"
    print(f"History pane on {total:,} turns")
    print(f"  Alt+2 until its first rows are shown: {shown_ms:7.1f} ms")
    print(
        f"  Page Down x{len(pages)}: p50 {statistics.median(pages):.1f} ms, "
        f"p95 {percentile(pages, 0.95):.1f} ms, max {worst:.1f} ms   "
        f"(target p95 < {PAGE_TARGET_MS:.0f} ms: {verdict})"
    )


if __name__ == "__main__":
    main()
