"""The `lore` program ends its process once a command is done, and loses nothing doing so.

Each case runs `lore.cli.main()` as the program does (no argv), in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SAMPLE_VAULT = Path(__file__).resolve().parent.parent / "samples" / "vault"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    copy = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, copy, ignore=shutil.ignore_patterns(".lore"))
    return copy


def run_program(
    prelude: str, argv: list[str], stdout: int = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    """`lore ARGV` as its own process, after `prelude`; prints "returned" if main returns."""
    code = textwrap.dedent(prelude) + textwrap.dedent(
        f"""
        import sys
        sys.argv = ["lore", *{argv!r}]
        from lore.cli import main
        code = main()
        print("returned", flush=True)
        sys.exit(code)
        """
    )
    # Buffered, as a person's `lore` writes into a pipe: what is left in a buffer must go out.
    environ = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    return subprocess.run(
        [sys.executable, "-c", code],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        env=environ,
    )


def test_the_process_ends_after_the_exit_handlers_and_keeps_the_status(vault: Path) -> None:
    prelude = """
        import atexit
        atexit.register(print, "exit handler ran")
    """
    found = run_program(prelude, ["--vault", str(vault), "search", "ocean"])
    assert found.returncode == 0
    assert "Europa" in found.stdout and "exit handler ran" in found.stdout
    assert "returned" not in found.stdout
    missing = run_program(prelude, ["--vault", str(vault), "notes", "show", "no such note"])
    assert missing.returncode == 1
    assert "no note titled" in missing.stderr
    assert "exit handler ran" in missing.stdout


def test_what_was_written_to_a_replaced_stream_still_goes_out(vault: Path) -> None:
    prelude = """
        import atexit, io, sys
        atexit.register(lambda: sys.__stdout__.write("written by a handler"))
        sys.stdout = io.StringIO()
    """
    found = run_program(prelude, ["--vault", str(vault), "search", "ocean"])
    assert found.returncode == 0
    assert found.stdout == "written by a handler"


def test_all_of_a_long_output_is_written(vault: Path) -> None:
    listed = run_program("", ["--vault", str(vault), "notes", "list", "--json"])
    assert listed.returncode == 0
    notes = json.loads(listed.stdout)
    assert len(notes) == len(list((vault / "notes").rglob("*.md")))


def test_with_another_thread_running_main_returns_as_usual(vault: Path) -> None:
    prelude = """
        import threading
        stop = threading.Event()
        threading.Thread(target=stop.wait, args=(30,), daemon=True).start()
    """
    found = run_program(prelude, ["--vault", str(vault), "search", "ocean"])
    assert found.returncode == 0
    assert found.stdout.rstrip().endswith("returned")


def test_a_reader_gone_before_the_output_is_a_failure_without_a_traceback(vault: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        found = run_program("", ["--vault", str(vault), "notes", "list"], stdout=write_end)
    finally:
        os.close(write_end)
    assert found.returncode == 1
    assert "Traceback" not in found.stderr and "Exception ignored" not in found.stderr


def test_under_a_profiler_the_profile_is_still_printed(vault: Path) -> None:
    profiled = subprocess.run(
        [sys.executable, "-m", "cProfile", "-m", "lore", "--vault", str(vault), "search", "ocean"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert profiled.returncode == 0, profiled.stderr
    assert "Europa" in profiled.stdout
    assert "function calls" in profiled.stdout
