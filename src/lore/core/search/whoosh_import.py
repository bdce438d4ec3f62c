"""whoosh without asyncio, urllib.request, html, OpenSSL's hashlib or its English word forms:
done by the search package before it imports whoosh.

Four modules whoosh imports first pull in modules a search never uses, or uses in part:

- the third-party `cached_property`, where whoosh.reading takes its one cached property
  (`deleted_docs_set`, read by every search), imports asyncio at its top level only to ask,
  when a property is read, whether its function is a coroutine function, and to wrap one
  that is (`asyncio.iscoroutinefunction`, `asyncio.ensure_future`);
- `whoosh.compat` imports `urlretrieve` from urllib.request (and with it http.client, email,
  ssl, ...) for Python 2 compatibility, which nothing in whoosh calls, and `escape` from html
  (and with it html.entities, the table of every named character), which only whoosh's HTML
  highlighter calls;
- `whoosh.filedb.filetables` imports `md5` from hashlib, whose import loads OpenSSL and sets
  up its every algorithm (2-3 ms, a tenth of what whoosh cost to import) to hash the keys of
  its hash files: the md5 built into Python (`_md5`) gives the same digests without OpenSSL;
- `whoosh.query.terms` imports `variations` from whoosh.lang.morph_en, which joins its
  hundred-odd rules of English word endings into six large patterns and compiles them as it
  is imported (about 5 ms, the costliest module of whoosh's), for the `Variations` query
  alone, which Lore never makes.

The first two were about a fifth of what `lore search` spent importing. So, when neither the
module nor what it imports has been imported yet, each is imported with a stand-in in
`sys.modules` for the module it would pull in, and keeps the stand-in as its own name for
it: `_AsyncioOnDemand` answers `iscoroutinefunction` as asyncio would,
`_UrllibRequestOnDemand` has an `urlretrieve` that calls the real one, `_HtmlOnDemand` an
`escape` that calls the real one, `_HashlibOnDemand` the `md5` built into Python,
`_WordFormsOnDemand` a `variations` that calls the real one, and each hands anything else to
the real module, imported then. What makes that safe:

- A stand-in is in `sys.modules` only while this thread runs that one import, and only when
  no other thread exists that could import the module it stands for meanwhile
  (`sys._current_frames()` lists every thread running Python); then it is taken out, so every
  later import (the app, the MCP server, httpx, a `Variations` query) gets the real module,
  imported the ordinary way. With another thread running, or the importing module imported
  already, this does nothing; a module imported already is not stood in for.
- Anything that did get a stand-in and asks it for more gets the real module's answer: the
  stand-in leaves `sys.modules` first, then imports the real one.
- `asyncio.iscoroutinefunction(f)` is `inspect.iscoroutinefunction(f)` or `f` carrying
  asyncio's own marker object, which nothing can carry before asyncio is imported: while it
  is not, inspect answers; once it is, asyncio does.
- An interpreter built without its own md5 has no `_md5`: there hashlib is imported as
  whoosh asks, and only the saving is lost.

importlib.util.LazyLoader cannot do this on Python 3.11: an `import asyncio` statement reads
the module's `__spec__` (to see whether it is still being imported), which loads it, and a
`from urllib.request import urlretrieve` reads the name at once.

Bounds (pyproject.toml): cached-property `>=2,<3` and whoosh-reloaded `<2.8`, whose modules
import these as described. Another version stays correct, since any other use reaches the
real module; only the saving could be lost, and tests/test_startup_imports.py would say so.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable
from typing import Any


class _OnDemand:
    """Stands for the module `NAME`: what it does not answer comes from the real one."""

    NAME = ""
    # What an import statement reads of a module already in `sys.modules`.
    __spec__ = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            # What the import system looks up (`__path__`: a `from` import of a package).
            raise AttributeError(name)
        if sys.modules.get(self.NAME) is self:
            del sys.modules[self.NAME]
        return getattr(importlib.import_module(self.NAME), name)

    def _real_module_imported(self) -> bool:
        found = sys.modules.get(self.NAME)
        return found is not None and found is not self


class _AsyncioOnDemand(_OnDemand):
    NAME = "asyncio"

    def iscoroutinefunction(self, func: Callable[..., Any]) -> bool:
        if self._real_module_imported():
            # Imported, or being imported by another thread, which this import waits for.
            import asyncio

            return asyncio.iscoroutinefunction(func)
        return inspect.iscoroutinefunction(func)


def _urlretrieve(*args: Any, **options: Any) -> Any:
    from urllib.request import urlretrieve

    return urlretrieve(*args, **options)


class _UrllibRequestOnDemand(_OnDemand):
    NAME = "urllib.request"
    urlretrieve = staticmethod(_urlretrieve)


def _escape(text: str, quote: bool = True) -> str:
    from html import escape

    return escape(text, quote)


class _HtmlOnDemand(_OnDemand):
    NAME = "html"
    escape = staticmethod(_escape)


class _HashlibOnDemand(_OnDemand):
    NAME = "hashlib"

    def __init__(self, md5: Callable[..., Any]) -> None:
        self.md5 = md5


def _hashlib_stand_ins() -> list[_OnDemand]:
    try:
        from _md5 import md5
    except ImportError:
        return []
    return [_HashlibOnDemand(md5)]


class _WordFormsOnDemand(_OnDemand):
    NAME = "whoosh.lang.morph_en"

    def variations(self, word: str) -> Any:
        # The real module's, even if asked while this one still stands in for it.
        return self.__getattr__("variations")(word)


def import_whoosh_helpers() -> None:
    """Import `cached_property`, `whoosh.compat` and `whoosh.query` without the modules they
    would import, where that is safe (see above); what cannot be done so is left to whoosh."""
    _import_standing_in("cached_property", _AsyncioOnDemand())
    _import_standing_in("whoosh.compat", _UrllibRequestOnDemand(), _HtmlOnDemand())
    _import_standing_in("whoosh.filedb.filetables", *_hashlib_stand_ins())
    _import_standing_in("whoosh.query", _WordFormsOnDemand())


def _import_standing_in(module: str, *stand_ins: _OnDemand) -> None:
    """Import `module` with each stand-in whose module is not imported yet in its place."""
    if module in sys.modules:
        return
    standing = [stand_in for stand_in in stand_ins if stand_in.NAME not in sys.modules]
    if not standing:
        return
    current_frames = getattr(sys, "_current_frames", None)
    if current_frames is None or len(current_frames()) != 1:
        return
    for stand_in in standing:
        sys.modules[stand_in.NAME] = stand_in  # type: ignore[assignment]
    try:
        importlib.import_module(module)
    except ImportError:
        pass  # a whoosh that no longer uses it: whoosh imports what it does need itself
    finally:
        for stand_in in standing:
            if sys.modules.get(stand_in.NAME) is stand_in:
                del sys.modules[stand_in.NAME]
