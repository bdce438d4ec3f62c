"""The search package imports whoosh without asyncio, urllib.request, html or OpenSSL's
hashlib, and leaves each whole for the rest of the process.

Each case runs in a fresh interpreter, as a command starts: this test process imported both
long ago, so lore.core.search.whoosh_import does nothing in it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any


def run_fresh(code: str) -> Any:
    """Run `code` in a new interpreter; what it prints last, read as JSON."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_index_module_loads_no_asyncio_and_a_later_import_gets_the_real_one() -> None:
    report = run_fresh(
        """
        import json, sys, types
        import lore.core.search.index
        before = "asyncio" in sys.modules
        import asyncio
        import asyncio.events

        async def answer():
            await asyncio.sleep(0)
            return 42

        print(json.dumps({
            "before": before,
            "module": type(asyncio) is types.ModuleType,
            "registered": sys.modules["asyncio"] is asyncio,
            "events": asyncio.events is sys.modules["asyncio.events"],
            "ran": asyncio.run(answer()),
        }))
        """
    )
    assert report == {
        "before": False,
        "module": True,
        "registered": True,
        "events": True,
        "ran": 42,
    }


def test_cached_properties_work_before_and_after_asyncio_is_imported() -> None:
    report = run_fresh(
        """
        import json, sys
        import lore.core.search
        from cached_property import cached_property

        class Thing:
            calls = 0

            @cached_property
            def value(self):
                Thing.calls += 1
                return "computed"

            @cached_property
            async def later(self):
                return "awaited"

        thing = Thing()
        first = [thing.value, thing.value, Thing.calls]
        stand_in = sys.modules["cached_property"].asyncio
        coroutine_seen = stand_in.iscoroutinefunction(Thing.__dict__["later"].func)
        plain_seen = stand_in.iscoroutinefunction(Thing.__dict__["value"].func)
        still_without = "asyncio" in sys.modules

        import asyncio

        async def main():
            other = Thing()
            return [await other.later, await other.later]

        print(json.dumps({
            "first": first,
            "coroutine": coroutine_seen,
            "plain": plain_seen,
            "imported": still_without,
            "awaited": asyncio.run(main()),
            "after": [Thing().value, stand_in.iscoroutinefunction(asyncio.sleep)],
        }))
        """
    )
    assert report == {
        "first": ["computed", "computed", 1],
        "coroutine": True,
        "plain": False,
        "imported": False,
        "awaited": ["awaited", "awaited"],
        "after": ["computed", True],
    }


def test_with_asyncio_already_imported_cached_property_gets_it() -> None:
    report = run_fresh(
        """
        import asyncio, json, sys
        import lore.core.search.index
        print(json.dumps(sys.modules["cached_property"].asyncio is asyncio))
        """
    )
    assert report is True


def test_with_another_thread_running_nothing_stands_in() -> None:
    report = run_fresh(
        """
        import json, sys, threading
        release = threading.Event()
        waiting = threading.Thread(target=release.wait)
        waiting.start()
        try:
            import lore.core.search.index
        finally:
            release.set()
            waiting.join()
        import urllib.request
        print(json.dumps([
            sys.modules["cached_property"].asyncio is sys.modules.get("asyncio"),
            sys.modules["whoosh.compat"].urlretrieve is urllib.request.urlretrieve,
        ]))
        """
    )
    assert report == [True, True]


def test_without_cached_property_nothing_fails_and_no_stand_in_is_left() -> None:
    report = run_fresh(
        """
        import importlib.abc, json, sys
        from lore.core.search import whoosh_import

        class Refuse(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name == "cached_property":
                    raise ImportError("refused")
                return None

        # As if the package had not imported it yet.
        del sys.modules["cached_property"]
        sys.meta_path.insert(0, Refuse())
        whoosh_import._import_standing_in("cached_property", whoosh_import._AsyncioOnDemand())
        print(json.dumps(["asyncio" in sys.modules, "cached_property" in sys.modules]))
        """
    )
    assert report == [False, False]


def test_anything_else_asked_of_the_stand_in_comes_from_the_real_asyncio() -> None:
    report = run_fresh(
        """
        import json, sys
        import lore.core.search
        stand_in = sys.modules["cached_property"].asyncio
        sleep = stand_in.sleep
        import asyncio
        print(json.dumps([sleep is asyncio.sleep, sys.modules["asyncio"] is asyncio]))
        """
    )
    assert report == [True, True]


def test_whoosh_compat_loads_no_urllib_request_and_its_urlretrieve_still_works(
    tmp_path: Path,
) -> None:
    source, copy = tmp_path / "source.txt", tmp_path / "copy.txt"
    source.write_text("fetched", encoding="utf-8")
    report = run_fresh(
        f"""
        import json, sys, types
        import lore.core.search.index
        from whoosh.compat import urlretrieve
        before = "urllib.request" in sys.modules or "http.client" in sys.modules
        urlretrieve({source.as_uri()!r}, {str(copy)!r})
        import urllib.request
        from urllib.request import Request
        print(json.dumps({{
            "before": before,
            "module": type(urllib.request) is types.ModuleType,
            "registered": sys.modules["urllib.request"] is urllib.request,
            "request": Request is urllib.request.Request,
        }}))
        """
    )
    assert report == {"before": False, "module": True, "registered": True, "request": True}
    assert copy.read_text(encoding="utf-8") == "fetched"


def test_whoosh_query_loads_no_english_word_forms_until_a_variations_query_needs_them() -> None:
    report = run_fresh(
        """
        import json, sys, types
        import lore.core.search.index
        import whoosh.query.terms
        before = "whoosh.lang.morph_en" in sys.modules
        forms = sorted(whoosh.query.terms.variations("rendering"))
        import whoosh.lang.morph_en
        print(json.dumps({
            "before": before,
            "expands": {"render", "rendering", "renderings"} <= set(forms),
            "same": forms == sorted(whoosh.lang.morph_en.variations("rendering")),
            "module": type(whoosh.lang.morph_en) is types.ModuleType,
            "registered": sys.modules["whoosh.lang.morph_en"] is whoosh.lang.morph_en,
        }))
        """
    )
    assert report == {
        "before": False,
        "expands": True,
        "same": True,
        "module": True,
        "registered": True,
    }


def test_a_variations_query_matches_word_forms_in_an_index() -> None:
    report = run_fresh(
        """
        import json
        import lore.core.search.index
        from whoosh.fields import TEXT, Schema
        from whoosh.filedb.filestore import RamStorage
        from whoosh.query import Variations

        index = RamStorage().create_index(Schema(body=TEXT(stored=True)))
        with index.writer() as writer:
            writer.add_document(body="the moons were rendered in colour")
        with index.searcher() as searcher:
            hits = [hit["body"] for hit in searcher.search(Variations("body", "render"))]
        print(json.dumps(hits))
        """
    )
    assert report == ["the moons were rendered in colour"]


def test_whoosh_compat_loads_no_html_and_its_escape_still_escapes() -> None:
    report = run_fresh(
        """
        import json, sys, types
        import lore.core.search.index
        from whoosh.compat import htmlescape
        before = "html" in sys.modules or "html.entities" in sys.modules
        escaped = [htmlescape('<a href="x">&</a>'), htmlescape('"q"', quote=False)]
        import html
        print(json.dumps({
            "before": before,
            "escaped": escaped,
            "module": type(html) is types.ModuleType,
            "registered": sys.modules["html"] is html,
            "unescape": html.unescape("&eacute;"),
        }))
        """
    )
    assert report == {
        "before": False,
        "escaped": ["&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;", '"q"'],
        "module": True,
        "registered": True,
        "unescape": "é",
    }


def test_whoosh_hash_files_load_no_openssl_and_hash_keys_as_hashlib_does() -> None:
    report = run_fresh(
        """
        import json, sys, types
        import lore.core.search.index
        from whoosh.filedb import filetables
        before = "hashlib" in sys.modules or "_hashlib" in sys.modules
        keys = [b"", b"ocean", "Europa's ice".encode()]
        ours = [filetables.md5_hash(key) for key in keys]
        import hashlib
        theirs = [int(hashlib.md5(key).hexdigest(), 16) & 0xFFFFFFFF for key in keys]
        print(json.dumps({
            "before": before,
            "same": ours == theirs,
            "module": type(hashlib) is types.ModuleType,
            "registered": sys.modules["hashlib"] is hashlib,
            "sha256": hashlib.sha256(b"x").hexdigest()[:8],
        }))
        """
    )
    assert report == {
        "before": False,
        "same": True,
        "module": True,
        "registered": True,
        "sha256": "2d711642",
    }


def test_an_index_written_and_read_with_the_stand_in_finds_its_terms(tmp_path: Path) -> None:
    # The term dictionary is a hash file: a key hashed otherwise than when written is not found.
    report = run_fresh(
        f"""
        import json, subprocess, sys
        write = '''
        import hashlib
        from whoosh.fields import TEXT, Schema
        from whoosh.index import create_in
        index = create_in({str(tmp_path)!r}, Schema(body=TEXT(stored=True)))
        with index.writer() as writer:
            for word in ["ocean", "europa", "tidal", "heating", "ganymede"]:
                writer.add_document(body=word + " moon")
        '''
        subprocess.run([sys.executable, "-c", write], check=True)
        import lore.core.search.index
        from whoosh.index import open_dir
        from whoosh.query import Term
        with open_dir({str(tmp_path)!r}).searcher() as searcher:
            found = [hit["body"] for word in ["ocean", "tidal", "ganymede"]
                     for hit in searcher.search(Term("body", word))]
        print(json.dumps([found, "hashlib" in sys.modules]))
        """
    )
    assert report == [["ocean moon", "tidal moon", "ganymede moon"], False]
