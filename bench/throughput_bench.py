"""Throughput: compacting a long history and ingesting a real document set, each a whole
process, optionally run in turn with an older version of the code.

    python bench/throughput_bench.py [--only compact|ingest|index] [--rounds N]
        [--compact-turns N] [--against REV | --against-src DIR]

Every run is a new Python process started for it, timed from outside (interpreter start and
imports included) and from inside; peak memory is the process's VmHWM. With `--against`, each
round runs the working tree's code and the other version one after the other, in alternating
order, so both see the same machine; medians are printed. The machine's load average is
printed with every part: other work on a two-core machine slows these runs by up to half.

- compact: `compact()` of 100,000 turns (the history of bench/history_bench.py, written
  there once, copied fresh for each run), offline with the default settings.
  Targets: under 5 s, under 300 MB.
- ingest: the Python 3.11 documentation (Debian's python3.11-doc, installed as
  bench/admission_bench.py installs it; 497 files, 11 MB) into a new vault with the default
  settings, then every other file of it (half the set): the time filing and building the
  search index, and peak memory at both sizes, with what it grew per MB of input.
  Targets: the whole set under 60 s and 300 MB; memory that does not grow with the input.
- index: rebuilding the search index of the ingested vault (`Vault.reindex`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

import admission_corpora  # noqa: E402
import history_bench  # noqa: E402

CHILD_PRELUDE = """
import os, sys, time
started = time.perf_counter()

def peak_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
    return 0.0
"""

COMPACT_CHILD = (
    CHILD_PRELUDE
    + """
from pathlib import Path
from lore.core.compaction import compact
from lore.core.vault import Vault
imported = time.perf_counter()
cpu = time.process_time()
report = compact(Vault.open(Path(sys.argv[1])))
done = time.perf_counter()
print("inside", done - imported, "imports", imported - started, "cpu", time.process_time() - cpu,
      "peak", peak_mb(), "covered", report.turns_covered, "entries", len(report.entries_written))
"""
)

INGEST_CHILD = (
    CHILD_PRELUDE
    + """
from pathlib import Path
from lore.core.ingest import ingest
from lore.core.vault import Vault, init_vault
imported = time.perf_counter()
vault = Vault.open(init_vault(Path(sys.argv[2])))
last = [imported, 0.0]

def on_event(event):
    last[0] = time.perf_counter()
    last[1] = peak_mb()

cpu = time.process_time()
report = ingest(vault, [sys.argv[1]], recursive=True, progress=on_event)
done = time.perf_counter()
print("inside", done - imported, "imports", imported - started, "cpu", time.process_time() - cpu,
      "peak", peak_mb(), "filing", last[0] - imported, "index", done - last[0],
      "filing_peak", last[1], "megabytes", report.bytes_read / 1e6,
      "notes", sum(1 for _ in vault.scan_note_files()))
"""
)

INDEX_CHILD = (
    CHILD_PRELUDE
    + """
from pathlib import Path
from lore.core.vault import Vault
imported = time.perf_counter()
vault = Vault.open(Path(sys.argv[1]))
cpu = time.process_time()
report = vault.reindex()
done = time.perf_counter()
print("inside", done - imported, "imports", imported - started, "cpu", time.process_time() - cpu,
      "peak", peak_mb(), "notes", len(report.added))
"""
)


@dataclass
class Code:
    """A version of Lore's source to run: its label and the folder holding `lore`."""

    label: str
    src: Path


@dataclass
class Run:
    whole: float
    figures: dict[str, float]


def run_child(code: Code, child: str, *args: str) -> Run:
    environment = dict(os.environ, PYTHONPATH=str(code.src))
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", child, *args],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    whole = time.perf_counter() - started
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"{code.label}: the run failed: {last}")
    words = done.stdout.split()
    return Run(whole, {words[i]: float(words[i + 1]) for i in range(0, len(words) - 1, 2)})


def load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def median(runs: list[Run], name: str) -> float:
    return statistics.median(run.whole if name == "whole" else run.figures[name] for run in runs)


def in_turn(codes: list[Code], rounds: int, one: Callable[[Code], Run]) -> dict[str, list[Run]]:
    """`rounds` runs of each version, alternating which goes first."""
    runs: dict[str, list[Run]] = {code.label: [] for code in codes}
    for number in range(rounds):
        order = codes if number % 2 == 0 else list(reversed(codes))
        for code in order:
            runs[code.label].append(one(code))
    return runs


def verdict(value: float, target: float) -> str:
    return "OK" if value < target else "MISSED"


# -- compaction ---------------------------------------------------------------------------------


def bench_compact(codes: list[Code], rounds: int, turns: int, scratch: Path) -> None:
    sentences = history_bench.corpus_sentences()
    source = history_bench.vault_with_history(f"compact-{turns}", turns, sentences, False)
    from lore.core.vault import init_vault

    def one(code: Code) -> Run:
        work = scratch / "compact-run"
        shutil.rmtree(work, ignore_errors=True)
        init_vault(work, "compaction run")
        shutil.copyfile(source.layout.history, work / "history.jsonl")
        return run_child(code, COMPACT_CHILD, str(work))

    print(f"Compacting {turns:,} turns offline, each run a new process; {load()}")
    runs = in_turn(codes, rounds, one)
    for label, found in runs.items():
        whole = median(found, "whole")
        print(
            f"  {label:<10} whole process {whole:5.2f} s (compact() {median(found, 'inside'):.2f} s, "
            f"{median(found, 'cpu'):.2f} s of CPU; imports {median(found, 'imports'):.2f} s), "
            f"peak {median(found, 'peak'):.0f} MB — {int(found[0].figures['covered']):,} turns "
            f"in {int(found[0].figures['entries']):,} entries; medians of {len(found)}"
        )
        print(
            f"  {'':<10} target under 5 s whole process: {verdict(whole, 5)}; "
            f"under 300 MB: {verdict(median(found, 'peak'), 300)}"
        )
    print(f"  done; {load()}")


# -- ingest and the index -----------------------------------------------------------------------


def document_sets(scratch: Path) -> tuple[Path, Path]:
    """The Python documentation, and every other file of it copied into `scratch`."""
    admission_corpora._ensure_debian("python3.11-doc")
    full = admission_corpora.PYTHON_DOCS
    half = scratch / "python-docs-half"
    if not half.exists():
        for number, path in enumerate(sorted(p for p in full.rglob("*") if p.is_file())):
            if number % 2 == 0:
                target = half / path.relative_to(full)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
    for path in full.rglob("*"):
        if path.is_file():
            path.read_bytes()  # a warm disk cache for every run alike
    return full, half


def bench_ingest(codes: list[Code], rounds: int, scratch: Path) -> Path:
    full, half = document_sets(scratch)
    kept = scratch / "ingested"

    def ingest_into(folder: Path) -> Callable[[Code], Run]:
        def one(code: Code) -> Run:
            vault = scratch / "ingest-run"
            shutil.rmtree(vault, ignore_errors=True)
            run = run_child(code, INGEST_CHILD, str(folder), str(vault))
            if code is codes[0] and folder == full:
                shutil.rmtree(kept, ignore_errors=True)
                shutil.move(str(vault), kept)
            return run

        return one

    print(f"Ingesting the Python 3.11 documentation, each run a new process; {load()}")
    results: dict[str, dict[str, list[Run]]] = {}
    for name, folder in (("whole set", full), ("half", half)):
        results[name] = in_turn(codes, rounds, ingest_into(folder))
    for code in codes:
        whole_set, half_set = results["whole set"][code.label], results["half"][code.label]
        for name, found in (("whole set", whole_set), ("half", half_set)):
            print(
                f"  {code.label:<10} {name:<9} {median(found, 'megabytes'):4.1f} MB, "
                f"{int(found[0].figures['notes']):,} notes: whole process "
                f"{median(found, 'whole'):5.1f} s (filing {median(found, 'filing'):.1f} s, "
                f"search index {median(found, 'index'):.1f} s; {median(found, 'cpu'):.1f} s of "
                f"CPU), peak {median(found, 'peak'):.0f} MB (filing {median(found, 'filing_peak'):.0f}"
                f" MB); medians of {len(found)}"
            )
        grown = median(whole_set, "peak") - median(half_set, "peak")
        grown_filing = median(whole_set, "filing_peak") - median(half_set, "filing_peak")
        more = median(whole_set, "megabytes") - median(half_set, "megabytes")
        print(
            f"  {'':<10} memory grew {grown / more:.1f} MB per MB of input at its peak, "
            f"{grown_filing / more:.1f} MB per MB while filing"
        )
        print(
            f"  {'':<10} targets: whole set under 60 s: "
            f"{verdict(median(whole_set, 'whole'), 60)}; under 300 MB: "
            f"{verdict(median(whole_set, 'peak'), 300)}"
        )
    print(f"  done; {load()}")
    return kept


def bench_index(codes: list[Code], rounds: int, vault: Path) -> None:
    print(f"Rebuilding the search index of the ingested documentation; {load()}")
    runs = in_turn(codes, rounds, lambda code: run_child(code, INDEX_CHILD, str(vault)))
    for label, found in runs.items():
        print(
            f"  {label:<10} {int(found[0].figures['notes']):,} notes: whole process "
            f"{median(found, 'whole'):.1f} s (reindex {median(found, 'inside'):.1f} s, "
            f"{median(found, 'cpu'):.1f} s of CPU), peak {median(found, 'peak'):.0f} MB; "
            f"medians of {len(found)}"
        )
    print(f"  done; {load()}")


# -- the versions -------------------------------------------------------------------------------


def other_version(arguments: argparse.Namespace, scratch: Path) -> Code | None:
    if arguments.against_src:
        return Code("other", Path(arguments.against_src).resolve())
    if not arguments.against:
        return None
    folder = scratch / "other"
    folder.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", arguments.against, "src"],
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return Code(arguments.against[:10], folder / "src")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["compact", "ingest", "index"], action="append")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each version per part")
    parser.add_argument("--compact-turns", type=int, default=100_000)
    parser.add_argument("--against", metavar="REV", help="also run this git revision's code")
    parser.add_argument("--against-src", metavar="DIR", help="also run the code in DIR")
    arguments = parser.parse_args()
    parts = set(arguments.only or ["compact", "ingest", "index"])
    with tempfile.TemporaryDirectory(prefix="lore-throughput-") as folder:
        scratch = Path(folder)
        codes = [Code("this tree", REPO / "src")]
        other = other_version(arguments, scratch)
        if other is not None:
            codes.append(other)
        if "compact" in parts:
            bench_compact(codes, arguments.rounds, arguments.compact_turns, scratch)
        vault = None
        if "ingest" in parts or "index" in parts:
            vault = bench_ingest(codes, arguments.rounds if "ingest" in parts else 1, scratch)
        if "index" in parts and vault is not None:
            bench_index(codes, arguments.rounds, vault)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
