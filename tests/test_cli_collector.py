"""Brief commands run as the `lore` program leave the garbage collector idle, and only they;
every command run so leaves its objects to the exit."""

from __future__ import annotations

import gc
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lore.cli import main

SAMPLE_VAULT = Path(__file__).resolve().parents[1] / "samples" / "vault"

# Runs `lore.cli.main()` as the program does (no argv: sys.argv), counting collections. The
# program ends its process itself once the command is done (lore.cli.process_exit), after
# the exit handlers, so the report is written by one; the status is the process's.
PROBE = """
import atexit, gc, io, json, sys
import lore.cli
collections = []
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info))
sys.argv = ["lore", *json.loads(sys.argv[1])]
out = io.StringIO()

def report():
    sys.__stdout__.write(json.dumps({
        "output": out.getvalue(),
        "collections": len(collections),
        "enabled": gc.isenabled(),
        "frozen": gc.get_freeze_count(),
    }) + "\\n")

atexit.register(report)
sys.stdout = out
code = lore.cli.main()
sys.exit(code)
"""


def run_program(argv: list[str]) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = result.stdout.strip().splitlines()
    assert lines, result.stderr
    report: dict[str, object] = json.loads(lines[-1])
    report["code"] = result.returncode
    return report


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    copy = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, copy, ignore=shutil.ignore_patterns(".lore"))
    return copy


def test_a_search_collects_nothing_and_leaves_its_objects_to_the_exit(vault: Path) -> None:
    report = run_program(["--vault", str(vault), "search", "ocean"])
    assert report["code"] == 0
    assert "Europa" in str(report["output"])
    # Opening a vault for the first time makes the index: still no collection.
    assert report["collections"] == 0
    assert report["frozen"], "nothing was kept out of the last collection"
    assert report["enabled"], "the collector was left off"


def test_a_command_that_may_run_long_collects_while_it_runs_then_leaves_the_rest(
    vault: Path,
) -> None:
    report = run_program(["--vault", str(vault), "reindex"])
    assert report["code"] == 0
    assert report["collections"] > 0
    # Done, the process ends: its objects are left to the exit all the same.
    assert report["frozen"]
    assert report["enabled"]


def test_a_caller_running_commands_in_its_own_process_keeps_its_collector(vault: Path) -> None:
    frozen = gc.get_freeze_count()
    assert main(["--vault", str(vault), "search", "ocean"]) == 0
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen


def test_lore_alone_keeps_the_collector_paused_for_the_app_to_resume(vault: Path) -> None:
    # Piped, `lore` alone prints the summary; in a terminal the same action starts the app,
    # which is handed the paused collector (tests/tui/test_app.py checks it resumes).
    probe = PROBE.replace(
        "code = lore.cli.main()",
        "import lore.cli.notes_cmd as notes\n"
        "seen = []\n"
        "summary = notes.cmd_summary\n"
        "notes.cmd_summary = lambda ctx: seen.append("
        "(gc.isenabled(), ctx.args.collector_paused)) or summary(ctx)\n"
        "atexit.register(lambda: print(json.dumps(seen), file=sys.stderr))\n"
        "code = lore.cli.main()",
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, json.dumps(["--vault", str(vault)])],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stderr.strip().splitlines()[-1]) == [[False, True]]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["enabled"], "the collector was left off"
