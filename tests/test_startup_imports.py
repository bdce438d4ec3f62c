"""Each command loads only what it uses: checked in a fresh interpreter, as a user starts one.

Every command module is imported to build the parser, so a heavy import at the top of any of
them is paid by every command; these tests name what the cheap ones must never load.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lore.core.public import CONTINUE_WINDOW_S

SAMPLE_VAULT = Path(__file__).resolve().parents[1] / "samples" / "vault"

# Runs `lore.cli.main(argv)` and prints the loaded modules that are in `watched`.
PROBE = """
import contextlib, io, json, sys
argv, watched = json.loads(sys.argv[1])
import lore.cli
out = io.StringIO()
code = None
with contextlib.redirect_stdout(out):
    try:
        code = lore.cli.main(argv)
    except SystemExit as exc:
        code = exc.code
loaded = sorted(
    name for name in sys.modules
    if any(name == top or name.startswith(top + ".") for top in watched)
)
print(json.dumps({"code": code, "output": out.getvalue(), "loaded": loaded}))
"""

# Neither the app, the REPL, the network, the MCP server nor the pipelines that use them.
NEVER_FOR_SEARCH = [
    "textual",
    "prompt_toolkit",
    "httpx",
    "mcp",
    "lore.tui",
    "lore.repl",
    "lore.mcp_server",
    "lore.core.ingest",
    "lore.core.gates",
    "lore.core.ask",
    "lore.core.pack",
    "lore.core.providers",
    "markdown_it",
    # Versions are recorded by the operations that write, and read by `lore log`.
    "lore.core.versioning",
    # Words, phrases and tag:/title: are built without whoosh's query parser.
    "whoosh.qparser",
    # whoosh's uses of them are stood in for (lore.core.search.whoosh_import).
    "asyncio",
    "urllib.request",
    "whoosh.lang.morph_en",
    # Their tables are Text throughout, with no emoji codes to look up.
    "rich._emoji_codes",
]
# The help reads no vault, settings or index, and draws nothing: none of their modules or
# libraries, and not Rich.
NEVER_FOR_HELP = [
    *NEVER_FOR_SEARCH,
    "rich",
    "pydantic",
    "yaml",
    "whoosh",
    "lore.config",
    "lore.core.session",
    "lore.core.vault",
    "lore.core.notes",
    "lore.core.search",
    "lore.core.history",
]


def run_lore(argv: list[str], watched: list[str]) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps([argv, watched])],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return report


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    copy = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, copy, ignore=shutil.ignore_patterns(".lore"))
    return copy


def test_search_loads_neither_the_app_the_network_nor_the_pipelines(vault: Path) -> None:
    report = run_lore(["--vault", str(vault), "search", "ocean"], NEVER_FOR_SEARCH)
    assert report["code"] == 0
    assert "Europa" in report["output"], "the search did not run"
    assert report["loaded"] == []


def test_search_as_json_loads_no_more_and_draws_nothing(vault: Path) -> None:
    report = run_lore(
        ["--vault", str(vault), "search", "--json", "ocean"], [*NEVER_FOR_SEARCH, "rich"]
    )
    assert report["code"] == 0
    assert json.loads(report["output"])[0]["title"]
    assert report["loaded"] == []


def test_notes_as_json_draw_nothing(vault: Path) -> None:
    report = run_lore(["--vault", str(vault), "notes", "list", "--json"], ["rich"])
    assert report["code"] == 0
    assert json.loads(report["output"])[0]["title"]
    assert report["loaded"] == []


def test_notes_list_loads_no_more_than_search(vault: Path) -> None:
    report = run_lore(["--vault", str(vault), "notes", "list"], NEVER_FOR_SEARCH)
    assert report["code"] == 0
    assert "Europa" in report["output"]
    assert report["loaded"] == []


def test_notes_list_reads_the_index_manifest_alone_once_the_index_is_current(
    vault: Path,
) -> None:
    built = run_lore(["--vault", str(vault), "search", "ocean"], [])
    assert built["code"] == 0
    report = run_lore(["--vault", str(vault), "notes", "list"], [*NEVER_FOR_SEARCH, "whoosh"])
    assert report["code"] == 0
    assert "Europa" in report["output"] and "53 notes" in report["output"]
    assert report["loaded"] == []


def settle_settings(vault: Path) -> None:
    """Make the vault's settings old enough to be cached (lore.core.storage.settled)."""
    an_hour_ago = time.time() - 3600
    os.utime(vault / "lore.yaml", (an_hour_ago, an_hour_ago))


def test_a_search_with_cached_settings_loads_no_validation_and_no_openssl(vault: Path) -> None:
    settle_settings(vault)
    first = run_lore(["--vault", str(vault), "search", "ocean"], [])
    assert first["code"] == 0
    # whoosh's HTML escape and its md5 are stood in for (lore.core.search.whoosh_import);
    # only validating settings, which the first search did, needs pydantic and its hashlib.
    report = run_lore(
        ["--vault", str(vault), "search", "ocean"],
        [*NEVER_FOR_SEARCH, "pydantic", "yaml", "hashlib", "_hashlib", "html"],
    )
    assert report["code"] == 0
    assert "Europa" in report["output"]
    assert report["loaded"] == []


def test_history_loads_no_more_than_search_and_not_the_index(vault: Path) -> None:
    settle_settings(vault)
    asked = run_lore(["--vault", str(vault), "--provider", "offline", "ask", "what is Europa?"], [])
    assert asked["code"] == 0
    # Turns are read without pydantic, and the settings come from the cache the ask wrote.
    report = run_lore(
        ["--vault", str(vault), "history"],
        [*NEVER_FOR_SEARCH, "whoosh", "pydantic", "yaml"],
    )
    assert report["code"] == 0
    assert "what is Europa?" in report["output"]
    assert report["loaded"] == []


def test_compacting_a_vault_without_notes_loads_no_search_machinery(tmp_path: Path) -> None:
    # A history brought into a new vault: no turn can name a note, so no index is opened.
    from history_helpers import bulk_append, random_turn
    from lore.core.vault import Vault, init_vault

    folder = tmp_path / "new"
    init_vault(folder, "new")
    rng = random.Random(5)
    bulk_append(Vault.open(folder), [random_turn(rng, number) for number in range(300)])
    report = run_lore(
        ["--vault", str(folder), "compact"],
        ["lore.core.search", "whoosh.index", "whoosh.query", "whoosh.analysis", "secrets"],
    )
    assert report["code"] == 0
    assert "Compacted." in report["output"]
    assert report["loaded"] == []


def test_metrics_are_read_without_pydantic(vault: Path) -> None:
    settle_settings(vault)
    asked = run_lore(["--vault", str(vault), "--provider", "offline", "ask", "what is Europa?"], [])
    assert asked["code"] == 0
    report = run_lore(
        ["--vault", str(vault), "metrics", "--last", "5"], ["pydantic", "yaml", "whoosh"]
    )
    assert report["code"] == 0
    assert "offline" in report["output"]
    assert report["loaded"] == []


def test_help_loads_no_vault_settings_or_index_module() -> None:
    report = run_lore(["--help"], NEVER_FOR_HELP)
    assert report["code"] == 0
    assert "usage: lore" in report["output"]
    assert report["loaded"] == []


def test_a_command_help_loads_no_more_and_names_the_core_window() -> None:
    report = run_lore(["ask", "--help"], NEVER_FOR_HELP)
    assert report["code"] == 0
    # The parser states the follow-up window without importing the core's figure for it.
    assert f"within {CONTINUE_WINDOW_S // 60} minutes" in " ".join(report["output"].split())
    assert report["loaded"] == []


def test_ask_still_loads_the_engine_it_needs(vault: Path) -> None:
    report = run_lore(
        ["--vault", str(vault), "--provider", "offline", "ask", "--json", "what is Europa?"],
        # The offline provider speaks no HTTP; an answer not saved files nothing.
        [
            "lore.core.ask",
            "textual",
            "prompt_toolkit",
            "httpx",
            "lore.core.commands",
            "lore.core.ingest",
            "lore.core.gates",
            "lore.core.versioning",
            "whoosh.qparser",
            # The answer is printed as JSON, with nothing drawn.
            "rich",
        ],
    )
    assert report["code"] == 0
    assert json.loads(report["output"])["turn"]["answer"]
    assert "lore.core.ask" in report["loaded"]
    assert [name for name in report["loaded"] if not name.startswith("lore.core.ask")] == []


def test_ask_reads_its_memory_without_pydantic_or_the_compaction_machinery(vault: Path) -> None:
    from lore.core.memory import MemoryEntry, MemoryState, render_state

    settle_settings(vault)
    archive = MemoryState(
        entries=[
            MemoryEntry(
                id="m1-000001",
                level=1,
                text="Europa's ice shell is thought to be tens of kilometres thick.",
                covers=["t0000000000aaaaaa"],
                tokens=14,
                created="2026-01-01T00:00:00Z",
            )
        ]
    )
    (vault / "memory").mkdir(exist_ok=True)
    (vault / "memory" / "memory.json").write_text(render_state(archive), encoding="utf-8")
    asked = run_lore(["--vault", str(vault), "--provider", "offline", "ask", "what is Europa?"], [])
    assert asked["code"] == 0
    # An archive as Lore writes it is taken as it is; nothing was due, so nothing compacted.
    report = run_lore(
        ["--vault", str(vault), "--provider", "offline", "ask", "--json", "what is Europa?"],
        ["pydantic", "yaml", "lore.core.compaction", "lore.core.fact_digest"],
    )
    assert report["code"] == 0
    assert json.loads(report["output"])["turn"]["answer"]
    assert report["loaded"] == []


def test_an_offline_ask_runs_without_asyncio_or_openssl(vault: Path) -> None:
    settle_settings(vault)
    first = run_lore(["--vault", str(vault), "--provider", "offline", "ask", "what is Europa?"], [])
    assert first["code"] == 0
    # Nothing to wait for: no event loop, nor the ssl, socket and concurrent.futures asyncio
    # loads; random ids come from os.urandom, not `secrets`.
    report = run_lore(
        ["--vault", str(vault), "--provider", "offline", "ask", "--json", "what is Europa?"],
        ["asyncio", "ssl", "_ssl", "socket", "concurrent", "secrets", "hashlib", "_hashlib"],
    )
    assert report["code"] == 0
    assert json.loads(report["output"])["turn"]["answer"]
    assert report["loaded"] == []
