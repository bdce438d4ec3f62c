"""Async code that runs under an event loop, or to its end without one.

The ask engine is written for an event loop: the app's, where a slow step must run on a
worker thread so the screen goes on drawing meanwhile. An ask answered offline has nothing
to wait for, no socket and no timer, yet importing asyncio (and the ssl, socket and
concurrent.futures it loads) takes 64 ms in a process of its own. So the engine's awaits go
through these helpers, which take a worker thread only when a loop runs them, and
`run_without_loop` drives a coroutine that never waits for a future to its end, in the
calling thread. asyncio is imported only where a loop already runs.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Coroutine, Generator
from typing import Any, TypeVar

T = TypeVar("T")


def loop_running() -> bool:
    """Whether an event loop runs the calling code (none can unless asyncio is loaded)."""
    events = sys.modules.get("asyncio.events")
    return events is not None and events._get_running_loop() is not None


async def off_loop(function: Callable[..., T], *args: Any, **keywords: Any) -> T:
    """`function(*args, **keywords)`: on a worker thread when an event loop runs this, so
    that the loop goes on meanwhile; here when none does."""
    if not loop_running():
        return function(*args, **keywords)
    import asyncio

    return await asyncio.to_thread(function, *args, **keywords)


async def off_loop_to_the_end(function: Callable[..., T], *args: Any) -> T:
    """`off_loop`, carried to its end on its thread even if the task awaiting it is
    cancelled again meanwhile."""
    if not loop_running():
        return function(*args)
    import asyncio

    return await asyncio.shield(asyncio.to_thread(function, *args))


@types.coroutine
def pass_turn() -> Generator[None, None, None]:
    """Let an event loop run its other tasks for a moment, as `asyncio.sleep(0)` does (a
    bare yield); without a loop, `run_without_loop` goes straight on."""
    yield


def is_cancellation(error: BaseException) -> bool:
    """Whether `error` is asyncio's cancellation of the task (none without asyncio)."""
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(error, asyncio.CancelledError)


def run_without_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` to its end in this thread, with no event loop, and return its value.

    It may pass its turn (`pass_turn`), but not wait for a future: that raises RuntimeError
    into it. Ctrl+C is raised into it wherever it lands, between two of its steps as within
    one, and it is closed if it stops early, so its handlers always see how it ended.
    """
    pending: BaseException | None = None
    try:
        while True:
            try:
                if pending is None:
                    step = coroutine.send(None)
                else:
                    error, pending = pending, None
                    step = coroutine.throw(error)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            except KeyboardInterrupt:
                if getattr(coroutine, "cr_frame", None) is None:
                    raise  # raised within it, and it has ended
                pending = KeyboardInterrupt()  # landed between two steps: into it
                continue
            if step is not None:
                pending = RuntimeError(f"{step!r} can only be waited for in an event loop")
    finally:
        coroutine.close()
