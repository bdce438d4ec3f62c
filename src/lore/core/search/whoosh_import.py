"""whoosh without asyncio: what the search package does before anything imports whoosh.

whoosh.reading takes its one cached property (`deleted_docs_set`, read by every search) from
the third-party `cached_property` module, whose top level imports asyncio only to ask, when a
property is read, whether its function is a coroutine function. asyncio and what it imports
(subprocess, concurrent.futures, logging, ...) were about a tenth of the start-up of
`lore search`, which never runs an event loop.

So when nothing has imported asyncio yet, `cached_property` is imported with
`_AsyncioOnDemand` standing in for asyncio, and keeps it as its `asyncio`: it answers
`iscoroutinefunction` as asyncio would, and hands anything else to the real asyncio, imported
then. What makes that safe:

- The stand-in is in `sys.modules` only while this thread runs `cached_property`'s top level
  (four imports and three classes), and only when no other thread exists that could import
  asyncio meanwhile (`sys._current_frames()` lists every thread running Python); then it is
  taken out, so every later `import asyncio` (the app, the MCP server, httpx) gets the real
  module, imported the ordinary way. When asyncio or `cached_property` is already imported,
  or another thread runs, this does nothing.
- Anything that did get the stand-in and asks it for more than `iscoroutinefunction` gets
  the real asyncio's answer: the stand-in leaves `sys.modules` first and imports asyncio.
- `asyncio.iscoroutinefunction(f)` is `inspect.iscoroutinefunction(f)` or `f` carrying
  asyncio's own marker object, which nothing can carry before asyncio is imported: while it
  is not, inspect answers; once it is, asyncio does.

importlib.util.LazyLoader cannot do this on Python 3.11: an `import asyncio` statement reads
the module's `__spec__` (to see whether it is still being imported), which loads it.

Bounds (pyproject.toml): cached-property `>=2,<3`, whose top level imports asyncio and whose
properties use only `asyncio.iscoroutinefunction` and `asyncio.ensure_future`; whoosh-reloaded
`<2.8`, which imports it in whoosh.reading. Another version stays correct, since any other use
reaches the real asyncio; only the saving could be lost, and tests/test_startup_imports.py
would say so.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable
from typing import Any

_MODULE = "cached_property"


class _AsyncioOnDemand:
    """Stands for asyncio in `cached_property`'s globals until asyncio is imported."""

    # What an `import asyncio` statement reads of a module already in `sys.modules`.
    __spec__ = None

    def iscoroutinefunction(self, func: Callable[..., Any]) -> bool:
        if "asyncio" in sys.modules and sys.modules["asyncio"] is not self:
            # Imported, or being imported by another thread, which this import waits for.
            import asyncio

            return asyncio.iscoroutinefunction(func)
        return inspect.iscoroutinefunction(func)

    def __getattr__(self, name: str) -> Any:
        if sys.modules.get("asyncio") is self:
            del sys.modules["asyncio"]
        return getattr(importlib.import_module("asyncio"), name)


def import_cached_property() -> None:
    """Import `cached_property` without asyncio when that is safe (see above); else nothing."""
    if "asyncio" in sys.modules or _MODULE in sys.modules:
        return
    current_frames = getattr(sys, "_current_frames", None)
    if current_frames is None or len(current_frames()) != 1:
        return
    stand_in = _AsyncioOnDemand()
    sys.modules["asyncio"] = stand_in  # type: ignore[assignment]
    try:
        importlib.import_module(_MODULE)
    except ImportError:
        pass  # a whoosh that no longer needs it: whoosh imports what it does need itself
    finally:
        if sys.modules.get("asyncio") is stand_in:
            del sys.modules["asyncio"]
