"""Start-up as a user pays it: whole processes, each started fresh, against yardsticks.

Every figure is the wall time of a new process, from spawning it until it exits (commands)
or until its first screen has been written to a terminal (the app). Each run of Lore is
paired with a run of its yardstick, the two alternating (which goes first swaps each round)
so that a machine busy with something else slows both alike; medians and p90s are over the
rounds.

- `lore --help` against `python -c "import textual"`, and against `python -c pass`;
- `lore search ocean`, `lore notes list`, `lore history` and `lore ask --json QUESTION`
  (offline provider) against `python -c "import whoosh, yaml, pydantic"`, and, with no
  target, `lore search --json ocean`, whose difference from `lore search` is Rich's share,
  and `lore search` against a process importing what a search cannot do without (whoosh's
  index, query, searcher and scoring; Rich's console and table), which leaves Lore's share;
- the app's first screen, launched as `lore --vault X` in a pseudo-terminal of 120x40,
  against bench/bare_textual_app.py (a header, a footer and five empty tabs) launched the
  same way: the time until the five pane names and the footer's palette key are on screen.

The vault is a fresh copy of samples/vault (or of --vault), with LORE_HOME in a temporary
folder. Python's bytecode cache is on, in a temporary folder, as it is for an installed
package (pip compiles on install); --no-bytecode-cache compiles every module on every run
instead, as happens when PYTHONDONTWRITEBYTECODE=1 and the source has no cache. One warm-up
run of each process comes first.

Last, one `python -X importtime` run of `lore search` lists the imports that cost most, and
one of the app lists what it imports before its first screen: in-process figures, printed
beside the whole-process ones, not instead of them.

Run: .venv/bin/python bench/startup_bench.py [--rounds N] [--only search,notes,ask,history,...]
     [--vault PATH] [--no-bytecode-cache]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
SAMPLE_VAULT = ROOT / "samples" / "vault"
PYTHON = sys.executable
SCREEN_COLUMNS, SCREEN_LINES = 120, 40
PANE_NAMES = ("Ask", "History", "Metrics", "Quarantine", "Notes")
# The command palette's key, the last thing the footer shows in both apps.
FOOTER_MARK = "^p palette"
QUESTION = "how thick is the ice over the ocean on Europa?"
SEARCH_LIBRARIES = (
    "import whoosh.index, whoosh.query, whoosh.searching, whoosh.scoring, rich.console, rich.table"
)
SCREEN_TIMEOUT_S = 30.0
# Terminal control sequences: CSI, OSC, and two-byte escapes.
ESCAPES = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
FORBIDDEN_FOR_SEARCH = (
    "textual",
    "prompt_toolkit",
    "httpx",
    "mcp",
    "lore.core.ingest",
    "lore.core.gates",
    "lore.core.ask",
    "asyncio",
    "urllib.request",
    "whoosh.lang.morph_en",
)


@dataclass
class Case:
    name: str
    run: Callable[[], float]
    yardsticks: dict[str, Callable[[], float]]
    target: float | None = None
    times: dict[str, list[float]] = field(default_factory=dict)


# -- running one process ---------------------------------------------------------------------


def child_env(home: Path, pycache: Path | None) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("LORE_")}
    env["LORE_HOME"] = str(home)
    env.pop("PYTHONPYCACHEPREFIX", None)
    if pycache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    env["COLUMNS"], env["LINES"] = str(SCREEN_COLUMNS), str(SCREEN_LINES)
    env["TERM"] = "xterm-256color"
    return env


def process_runner(argv: list[str], env: dict[str, str]) -> Callable[[], float]:
    """Spawn to exit, in seconds; the output goes nowhere, as when piped."""

    def run() -> float:
        started = time.perf_counter()
        done = subprocess.run(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(
                f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr.decode()}"
            )
        return elapsed

    return run


def screen_shown(text: str) -> bool:
    return FOOTER_MARK in text and all(name in text for name in PANE_NAMES)


def first_screen(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Spawn in a pseudo-terminal until the first screen is written: the seconds that took,
    and everything written to the terminal until then."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SCREEN_LINES, SCREEN_COLUMNS, 0, 0))
    started = time.perf_counter()
    child = subprocess.Popen(
        argv, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True
    )
    os.close(slave)
    written = b""
    try:
        while True:
            left = SCREEN_TIMEOUT_S - (time.perf_counter() - started)
            if left <= 0 or child.poll() is not None:
                shown = ESCAPES.sub(b"", written).decode("utf-8", "replace")
                raise SystemExit(f"{' '.join(argv)}: no first screen; it showed:\n{shown}")
            ready, _, _ = select.select([master], [], [], min(left, 0.5))
            if not ready:
                continue
            try:
                written += os.read(master, 1 << 16)
            except OSError:  # the child closed the terminal
                continue
            if screen_shown(ESCAPES.sub(b"", written).decode("utf-8", "replace")):
                return time.perf_counter() - started, written.decode("utf-8", "replace")
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
        child.wait()
        os.close(master)


def screen_runner(argv: list[str], env: dict[str, str]) -> Callable[[], float]:
    return lambda: first_screen(argv, env)[0]


# -- the cases -------------------------------------------------------------------------------


def lore_command() -> list[str]:
    script = Path(PYTHON).with_name("lore")
    return [str(script)] if script.exists() else [PYTHON, "-m", "lore"]


def build_cases(vault: Path, env: dict[str, str], only: set[str] | None) -> list[Case]:
    lore = [*lore_command(), "--vault", str(vault)]

    def process(*argv: str) -> Callable[[], float]:
        return process_runner(list(argv), env)

    data_imports = process(PYTHON, "-c", "import whoosh, yaml, pydantic")
    cases = [
        Case(
            "help",
            process(*lore_command(), "--help"),
            {
                "import textual": process(PYTHON, "-c", "import textual"),
                "python -c pass": process(PYTHON, "-c", "pass"),
            },
            target=1.5,
        ),
        Case(
            "search",
            process(*lore, "search", "ocean"),
            {
                "import whoosh+yaml+pydantic": data_imports,
                # No target: the libraries a search cannot do without (whoosh's index, query,
                # searcher and scoring, Rich's console and table), so that the ratio to it
                # is Lore's own share of the start.
                "import search libraries": process(PYTHON, "-c", SEARCH_LIBRARIES),
            },
            1.5,
        ),
        # No target: the same search printed as JSON draws nothing, so the difference from
        # `search` is what Rich's import and its table cost.
        Case(
            "search --json",
            process(*lore, "search", "--json", "ocean"),
            {"import whoosh+yaml+pydantic": data_imports},
        ),
        Case(
            "notes list",
            process(*lore, "notes", "list"),
            {"import whoosh+yaml+pydantic": data_imports},
            1.5,
        ),
        # Before `history`, so that the history has turns to list.
        Case(
            "ask --json",
            process(*lore, "--provider", "offline", "ask", "--json", QUESTION),
            {"import whoosh+yaml+pydantic": data_imports},
            1.5,
        ),
        Case(
            "history", process(*lore, "history"), {"import whoosh+yaml+pydantic": data_imports}, 1.5
        ),
        Case(
            "first screen",
            screen_runner(lore, env),
            {"bare Textual app": screen_runner([PYTHON, str(BENCH / "bare_textual_app.py")], env)},
            1.3,
        ),
    ]
    return [case for case in cases if only is None or named(case.name, only)]


def named(case: str, only: set[str]) -> bool:
    """Whether `--only` names the case, by its whole name or its first word (`notes`, `ask`)."""
    return case in only or case.split()[0] in only


def measure(cases: list[Case], rounds: int) -> None:
    for case in cases:
        # The warm-up: writes the bytecode cache and builds the vault's index once.
        case.run()
        for yardstick in case.yardsticks.values():
            yardstick()
        case.times = {"lore": [], **{label: [] for label in case.yardsticks}}
    for number in range(rounds):
        for case in cases:
            runs: list[tuple[str, Callable[[], float]]] = [("lore", case.run)]
            runs += list(case.yardsticks.items())
            if number % 2:
                runs.reverse()
            for label, run in runs:
                case.times[label].append(run())
        print(f"\rround {number + 1}/{rounds}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)


# -- reporting -------------------------------------------------------------------------------


def p90(values: list[float]) -> float:
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=10, method="inclusive")[8]


def report(cases: list[Case], rounds: int, cached: bool) -> None:
    mode = "bytecode cached" if cached else "no bytecode cache (every module compiled each run)"
    print(f"Whole processes, fresh each run, {rounds} alternating rounds, {mode}; ms")
    header = f"{'case':<13} {'lore p50':>9} {'p90':>7}  {'yardstick':<28} {'p50':>7} {'p90':>7} {'ratio':>6} {'target':>7}"
    print(header)
    print("-" * len(header))
    for case in cases:
        lore = case.times["lore"]
        lore_median = statistics.median(lore)
        for position, label in enumerate(case.yardsticks):
            other = case.times[label]
            median = statistics.median(other)
            ratio = lore_median / median
            target = f"≤{case.target:.1f}x" if case.target and position == 0 else ""
            left = (
                f"{case.name:<13} {lore_median * 1000:>9.0f} {p90(lore) * 1000:>7.0f}"
                if position == 0
                else " " * 31
            )
            print(
                f"{left}  {label:<28} {median * 1000:>7.0f} {p90(other) * 1000:>7.0f} "
                f"{ratio:>5.2f}x {target:>7}"
            )


IMPORT_TIME = re.compile(r"import time:\s*(\d+) \|\s*(\d+) \|( *)([\w.]+)")


def import_rows(text: str) -> list[tuple[int, int, str]]:
    """`-X importtime` lines as (own µs, cumulative µs, name indented by depth)."""
    return [
        (int(own), int(total), depth + name)
        for own, total, depth, name in IMPORT_TIME.findall(text)
    ]


def app_imports_report(vault: Path, env: dict[str, str], top: int = 25) -> None:
    """What the app imports before its first screen, and what each of those imports."""
    argv = [PYTHON, "-X", "importtime", "-m", "lore", "--vault", str(vault)]
    _, written = first_screen(argv, env)
    rows = import_rows(written)
    shown = [row for row in rows if len(row[2]) - len(row[2].lstrip()) <= 4]
    print(
        f"\nIn-process, one start of the app under -X importtime: {len(rows)} modules before the "
        f"first screen, {sum(own for own, _, _ in rows) / 1000:.0f} ms of imports in all. Those "
        f"imported while it starts (not by another module) and what they import, slowest first:"
    )
    print(f"{'cumulative':>11} {'self':>7}  module")
    for own, total, name in sorted(shown, key=lambda row: row[1], reverse=True)[:top]:
        print(f"{total / 1000:>9.1f}ms {own / 1000:>5.1f}ms  {name}")


def importtime_report(vault: Path, env: dict[str, str], top: int = 20) -> None:
    argv = [PYTHON, "-X", "importtime", "-m", "lore", "--vault", str(vault), "search", "ocean"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    rows = import_rows(done.stderr)
    names = {name.strip() for _, _, name in rows}
    everything = sum(own for own, _, _ in rows)
    print(
        f"\nIn-process, one run of `lore search ocean` under -X importtime: {len(rows)} modules, "
        f"{everything / 1000:.0f} ms of imports in all. The {top} slowest, with what they import:"
    )
    print(f"{'cumulative':>11} {'self':>7}  module")
    for own, total, name in sorted(rows, key=lambda row: row[1], reverse=True)[:top]:
        print(f"{total / 1000:>9.1f}ms {own / 1000:>5.1f}ms  {name}")
    print("\nSlowest by their own time:")
    for own, _, name in sorted(rows, key=lambda row: row[0], reverse=True)[:10]:
        print(f"{own / 1000:>9.1f}ms  {name.strip()}")
    loaded = [
        module
        for module in FORBIDDEN_FOR_SEARCH
        if any(name == module or name.startswith(module + ".") for name in names)
    ]
    print(
        f"\n`lore search` imports none of {', '.join(FORBIDDEN_FOR_SEARCH)}: "
        + ("yes" if not loaded else f"no, it imports {', '.join(loaded)}")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="alternating rounds (default 15)")
    parser.add_argument(
        "--only",
        help="comma-separated cases, by name or first word: help, search, notes, ask, history, "
        "first screen",
    )
    parser.add_argument(
        "--vault",
        type=Path,
        default=SAMPLE_VAULT,
        help="vault to copy (e.g. bench/.data/tui-vault-10000 from bench/tui_startup.py)",
    )
    parser.add_argument(
        "--no-bytecode-cache", action="store_true", help="compile every module on every run"
    )
    parser.add_argument("--no-importtime", action="store_true", help="skip the -X importtime run")
    args = parser.parse_args()
    only = {name.strip() for name in args.only.split(",")} if args.only else None
    with tempfile.TemporaryDirectory(prefix="lore-startup-") as scratch:
        work = Path(scratch)
        vault = work / "vault"
        # With its index, if it has one, as a user's vault would have.
        shutil.copytree(args.vault, vault)
        pycache = None if args.no_bytecode_cache else work / "pycache"
        env = child_env(work / "home", pycache)
        # A copy's files are new to the index, which reads them all again once. The app's
        # warm-up is stopped at its first screen, before that is done, so a command does it:
        # a user's vault is in step with its index.
        process_runner([*lore_command(), "--vault", str(vault), "search", "ocean"], env)()
        cases = build_cases(vault, env, only)
        measure(cases, args.rounds)
        report(cases, args.rounds, pycache is not None)
        if not args.no_importtime:
            importtime_report(vault, env)
            if only is None or named("first screen", only):
                app_imports_report(vault, env)


if __name__ == "__main__":
    main()
