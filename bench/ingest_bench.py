"""Offline ingest of a real document set, then the injection corpus, with the figures printed.

Run: .venv/bin/python bench/ingest_bench.py [FOLDER] [--pairs N] [--log-only]
     [--one-document-only]
Without FOLDER it reads Debian's python3.11-doc reST sources (installed with apt-get when
missing). Targets: the whole set in under 60 s on two cores, peak memory under 300 MB,
every hostile case held, at most one benign document in twenty wrongly held.

The set is ingested into a vault that commits each operation to git and into one that
does not (versioning.auto_commit: false), each run a fresh process, the two kinds taking
turns (--pairs N, 2 by default), and the medians are printed side by side: target,
versioning costs under 10% more. Then the first half of the set alone, for what peak memory
grows by with each MB of input (run one after the other in one process, the second run paid
for the first one's heap and looked 28% dearer whichever it was); and the half and the whole
set again with the similarity index's budget of claims in memory lowered, so that it moves
claims to disk as a larger corpus makes it do. Last, `lore notes log` as a person runs it, a
whole process started fresh, on a vault with 10,000 commits (made with git fast-import):
target under 200 ms, printed beside `lore --version` started the same way. And `lore
ingest` of one small document into a vault of 10,000 notes, with the catalog of notes
taken from its cache and, alternating, read from every note as without one (no target).
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from lore.core.gates import similarity  # noqa: E402
from lore.core.ingest import IngestEvent, ingest, ingest_text  # noqa: E402
from lore.core.notes import Note, render_note  # noqa: E402
from lore.core.vault import Vault, init_vault  # noqa: E402

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html/_sources")
CORPUS = REPO / "tests" / "corpus"


def ensure_python_docs() -> Path | None:
    if PYTHON_DOCS.is_dir():
        return PYTHON_DOCS
    if shutil.which("apt-get"):
        print("installing python3.11-doc with apt-get ...", flush=True)
        subprocess.run(
            ["apt-get", "install", "-y", "-q", "python3.11-doc"], check=False, capture_output=True
        )
    return PYTHON_DOCS if PYTHON_DOCS.is_dir() else None


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def children_cpu_seconds() -> float:
    """CPU time of finished child processes: the git commands of a versioned vault."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class IngestRun:
    wall: float
    cpu: float
    git_cpu: float
    commits: int
    peak_mb: float = 0.0
    # The peak until the last source was filed, before the search index is built.
    filing_peak_mb: float = 0.0
    # How many claims were admitted, merged and held.
    claims: dict[str, int] = field(default_factory=dict)


def bench_corpus(folder: Path, scratch: Path, *, versioned: bool = True) -> IngestRun:
    root = init_vault(scratch / ("docs-vault" if versioned else "docs-vault-unversioned"))
    if not versioned:
        (root / "lore.yaml").write_text("versioning:\n  auto_commit: false\n")
    vault = Vault.open(root)
    print(f"versioning {'on' if versioned else 'off'}:")
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    git_cpu_started = children_cpu_seconds()
    started, cpu_started = time.perf_counter(), cpu_seconds()
    last_source = [started]
    filing_peak = [0.0]

    def on_event(event: IngestEvent) -> None:
        last_source[0] = time.perf_counter()
        filing_peak[0] = peak_rss_mb()

    report = ingest(vault, [str(folder)], recursive=True, progress=on_event)
    elapsed, cpu = time.perf_counter() - started, cpu_seconds() - cpu_started
    filing = last_source[0] - started
    vault.close()
    megabytes = report.bytes_read / 1e6
    counts, claims = report.counts(), report.claim_counts()
    print(f"corpus: {folder} ({len(files)} files, {megabytes:.1f} MB)")
    print(f"  sources: {counts}")
    print(f"  claims:  {claims}")
    print(
        f"  time:    {elapsed:.1f} s  ->  {len(report.sources) / elapsed:.1f} documents/s, {megabytes / elapsed:.2f} MB/s"
    )
    print(
        f"  of which reading, gating and filing {filing:.1f} s, search index build {elapsed - filing:.1f} s"
    )
    print(f"  CPU time: {cpu:.1f} s (wall time includes waiting for other processes and the disk)")
    print(f"  load average while running: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"  peak memory (max RSS): {peak_rss_mb():.0f} MB "
        f"({filing_peak[0]:.0f} MB until the last source was filed)"
    )
    status = "OK" if elapsed < 60 and peak_rss_mb() < 300 else "MISSED"
    print(f"  target < 60 s and < 300 MB: {status} (wall); CPU {'OK' if cpu < 60 else 'MISSED'}")
    held = [s for s in report.sources if s.held]
    if held:
        print(f"  documents with held claims: {len(held)}")
        for source in held[:8]:
            print(f"    {Path(source.target).name}: {'; '.join(source.reasons)[:110]}")
    git_cpu = children_cpu_seconds() - git_cpu_started
    commits = 0
    if (root / ".git").exists():
        log = subprocess.run(
            ["git", "-C", str(root), "rev-list", "--count", "HEAD"], capture_output=True, text=True
        )
        commits = int(log.stdout.strip() or 0)
    return IngestRun(elapsed, cpu, git_cpu, commits, peak_rss_mb(), filing_peak[0], claims)


RESULT_MARK = "ingest-run: "


def one_run(mode: str, folder: Path, memory_claims: int | None) -> int:
    """One ingest in this process (started by `compare_versioning`); the figures last. With
    `memory_claims`, the similarity index keeps no more claims than that in memory."""
    if memory_claims is not None:
        similarity.MEMORY_CLAIMS = memory_claims
    with tempfile.TemporaryDirectory(prefix="lore-ingest-run-") as scratch:
        run = bench_corpus(folder, Path(scratch), versioned=mode == "on")
    print(RESULT_MARK + json.dumps(run.__dict__), flush=True)
    return 0


def run_in_fresh_process(mode: str, folder: Path, memory_claims: int | None = None) -> IngestRun:
    command = [sys.executable, __file__, str(folder), "--one", mode]
    if memory_claims is not None:
        command += ["--memory-claims", str(memory_claims)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    print("\n".join(line for line in lines if not line.startswith(RESULT_MARK)), flush=True)
    figures = next(line for line in lines if line.startswith(RESULT_MARK))
    return IngestRun(**json.loads(figures[len(RESULT_MARK) :]))


def median_run(runs: list[IngestRun]) -> IngestRun:
    return IngestRun(
        statistics.median(run.wall for run in runs),
        statistics.median(run.cpu for run in runs),
        statistics.median(run.git_cpu for run in runs),
        max(run.commits for run in runs),
        max(run.peak_mb for run in runs),
        max(run.filing_peak_mb for run in runs),
        runs[0].claims,
    )


def memory_growth(folder: Path, whole: IngestRun, scratch: Path) -> None:
    """Peak memory of an ingest of the first half of the set's files (by name, versioning
    off, a fresh process) against the whole set's: what memory grows by for each MB more."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    half = scratch / "half"
    half.mkdir()
    for number, path in enumerate(files[: len(files) // 2]):
        (half / f"{number:04d}-{path.name}").write_bytes(path.read_bytes())
    print("the first half of the set, for memory's growth:")
    part = run_in_fresh_process("off", half)
    part_mb = sum(path.stat().st_size for path in files[: len(files) // 2]) / 1e6
    whole_mb = sum(path.stat().st_size for path in files) / 1e6
    growth = (whole.peak_mb - part.peak_mb) / (whole_mb - part_mb)
    print(
        f"memory's growth: peak {part.peak_mb:.0f} MB for {part_mb:.1f} MB of input, "
        f"{whole.peak_mb:.0f} MB for {whole_mb:.1f} MB: {growth:.1f} MB more per MB of input"
    )
    # What stays while sources are filed (the catalog of notes and the claims' sketches)
    # apart from the search index build's writer, whose pool the half set does not fill.
    filing = (whole.filing_peak_mb - part.filing_peak_mb) / (whole_mb - part_mb)
    print(
        f"  until the last source was filed: {part.filing_peak_mb:.0f} MB and "
        f"{whole.filing_peak_mb:.0f} MB: {filing:.1f} MB more per MB of input"
    )
    # Past its budget the similarity index moves claims to disk. The set files too few
    # claims to pass the budget, so the half and the whole set are run again with it
    # lowered, as a corpus ten times the size would run.
    print(
        f"the half and the whole set again, the similarity index keeping at most "
        f"{SPILL_BUDGET:,} claims in memory (its budget is {similarity.MEMORY_CLAIMS:,}):"
    )
    part_spilled = run_in_fresh_process("off", half, SPILL_BUDGET)
    whole_spilled = run_in_fresh_process("off", folder, SPILL_BUDGET)
    filing = (whole_spilled.filing_peak_mb - part_spilled.filing_peak_mb) / (whole_mb - part_mb)
    growth = (whole_spilled.peak_mb - part_spilled.peak_mb) / (whole_mb - part_mb)
    same = part_spilled.claims == part.claims and whole_spilled.claims == whole.claims
    print(
        f"  memory's growth with claims moved to disk: peak {growth:.1f} MB more per MB of "
        f"input; until the last source was filed {part_spilled.filing_peak_mb:.0f} MB and "
        f"{whole_spilled.filing_peak_mb:.0f} MB: {filing:.1f} MB more per MB of input"
    )
    print(
        f"  claims admitted, merged and held the same as with every claim in memory: "
        f"{'yes' if same else 'NO'}; wall {whole_spilled.wall:.1f} s for the whole set"
    )


# The similarity index's budget of claims in memory in the runs that show it moving claims
# to disk: the Python documentation's 62,000 claims pass it six times.
SPILL_BUDGET = 10_000


def compare_versioning(folder: Path, pairs: int) -> IngestRun:
    """The same ingest with versioning off and on, taking turns, each a fresh process; the
    files are read once first, so no run pays for a cold disk cache. Returns the median
    run with versioning off."""
    for path in folder.rglob("*"):
        if path.is_file():
            path.read_bytes()
    runs: dict[str, list[IngestRun]] = {"off": [], "on": []}
    for number in range(pairs):
        for mode in ("off", "on") if number % 2 == 0 else ("on", "off"):
            runs[mode].append(run_in_fresh_process(mode, folder))
    off, on = median_run(runs["off"]), median_run(runs["on"])
    print(f"versioning off and on, side by side (medians of {pairs} fresh processes each):")
    print(f"  {'':<22}{'off':>10}{'on':>10}{'cost':>10}")
    for label, before, after in (
        ("wall time (s)", off.wall, on.wall),
        ("CPU, Lore (s)", off.cpu, on.cpu),
        ("CPU, git (s)", off.git_cpu, on.git_cpu),
        ("CPU, both (s)", off.cpu + off.git_cpu, on.cpu + on.git_cpu),
    ):
        cost = f"{(after - before) / before * 100:+9.1f}%" if before >= 0.1 else f"{'-':>10}"
        print(f"  {label:<22}{before:>10.1f}{after:>10.1f}{cost}")
    print(f"  {'commits':<22}{off.commits:>10}{on.commits:>10}")
    print(f"  {'peak memory (MB)':<22}{off.peak_mb:>10.0f}{on.peak_mb:>10.0f}")
    for mode, each in runs.items():
        walls = ", ".join(f"{run.wall:.1f}" for run in each)
        print(f"  wall times, versioning {mode}: {walls} s")
    wall_cost = (on.wall - off.wall) / off.wall * 100
    cpu_cost = ((on.cpu + on.git_cpu) - (off.cpu + off.git_cpu)) / (off.cpu + off.git_cpu) * 100
    verdict = "OK" if wall_cost < 10 and cpu_cost < 10 else "MISSED"
    print(
        f"  target: versioning costs < 10% more: {verdict} (wall {wall_cost:+.1f}%, CPU {cpu_cost:+.1f}%)"
    )
    return off


# -- `lore notes log` on a long history ---------------------------------------------------------

LOG_COMMITS = 10_000
LOG_NOTES = 2_000
LOG_TARGET_MS = 200.0


def note_file(number: int, revision: int) -> bytes:
    note = Note(
        path=f"notes/note-{number}.md",
        id=f"n{number:017x}",
        title=f"Note {number}",
        body=f"Note {number}, revision {revision}.\n",
        created="2026-01-01T00:00:00Z",
        updated="2026-01-01T00:00:00Z",
        trust="trusted",
        status="active",
    )
    return render_note(note).encode("utf-8")


def build_long_history(root: Path) -> None:
    """LOG_COMMITS commits on top of the vault's first: one filing LOG_NOTES notes, then
    edits of one to three notes each, `Note 7` among them every hundredth."""
    rng = random.Random(7)
    stream: list[bytes] = []
    first = int(time.time()) - LOG_COMMITS
    template = {number: note_file(number, 0) for number in range(LOG_NOTES)}
    for commit in range(LOG_COMMITS):
        if commit == 0:
            touched = list(range(LOG_NOTES))
            operation, summary = "ingest", f"{LOG_NOTES} sources"
        else:
            touched = sorted({rng.randrange(LOG_NOTES) for _ in range(rng.randint(1, 3))})
            if commit % 100 == 0 and 7 not in touched:
                touched.append(7)
            operation, summary = "edit", f"Note {touched[0]}"
        message = (
            f"{operation}: {summary}\n\nLore-Operation: {operation}\nLore-Actor: user\n"
            f"Lore-Id: {commit:012x}\n"
        ).encode()
        stream.append(
            f"commit refs/heads/main\ncommitter Lore <lore@localhost> {first + commit} +0000\n"
            f"data {len(message)}\n".encode()
            + message
        )
        if commit == 0:
            stream.append(b"from refs/heads/main^0\n")
        for number in touched:
            data = (
                template[number]
                if commit == 0
                else template[number].replace(b"revision 0.", f"revision {commit}.".encode())
            )
            stream.append(f"M 100644 inline notes/note-{number}.md\ndata {len(data)}\n".encode())
            stream.append(data + b"\n")
        stream.append(b"\n")
    git = ["git", "-C", str(root)]
    subprocess.run([*git, "fast-import", "--quiet"], input=b"".join(stream), check=True)
    subprocess.run([*git, "reset", "--quiet", "--hard", "main"], check=True)


def whole_process_ms(command: list[str], environment: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=environment, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - started) * 1000


def bench_note_log(scratch: Path, rounds: int = 9) -> None:
    root = init_vault(scratch / "log-vault", "Long history")
    started = time.perf_counter()
    build_long_history(root)
    built = time.perf_counter() - started
    lore = [sys.executable, "-m", "lore"]
    environment = dict(os.environ, LORE_HOME=str(scratch / "home"))
    # Bytecode cached, as for an installed package; see bench/startup_bench.py.
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    environment["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    log = [*lore, "--vault", str(root), "notes", "log", "Note 7"]
    started = time.perf_counter()
    subprocess.run(log, env=environment, stdout=subprocess.DEVNULL, check=True)
    first = time.perf_counter() - started
    yardsticks = {
        "version": [*lore, "--version"],
        "show": [*lore, "--vault", str(root), "notes", "show", "Note 7", "--json"],
    }
    times: dict[str, list[float]] = {"log": [], "version": [], "show": []}
    for number in range(rounds):
        trio = [("log", log), *yardsticks.items()]
        for name, command in trio if number % 2 else reversed(trio):
            times[name].append(whole_process_ms(command, environment))
    from lore.core.versioning import note_versions

    vault = Vault.open(root)
    note_versions(vault, "Note 7")
    started = time.perf_counter()
    versions = note_versions(vault, "Note 7")
    in_process = (time.perf_counter() - started) * 1000
    vault.close()
    print(f"lore notes log on a vault with {LOG_COMMITS + 1:,} commits and {LOG_NOTES:,} notes:")
    print(f"  history made with git fast-import in {built:.1f} s")
    print(
        f"  first log after the import: {first:.1f} s (builds the version catalog and the "
        "search index once, as any first command after a clone would)"
    )
    log_ms = statistics.median(times["log"])
    print(
        f'  lore notes log "Note 7" ({len(versions)} versions): median {log_ms:.0f} ms, '
        f"p90 {sorted(times['log'])[int(rounds * 0.9) - 1]:.0f} ms over {rounds} fresh processes"
    )
    print(
        f"  yardsticks started the same way: lore --version {statistics.median(times['version']):.0f}"
        ' ms (start-up alone), lore notes show "Note 7" --json '
        f"{statistics.median(times['show']):.0f} ms (start-up and opening the vault)"
    )
    print(f"  the versions themselves, in process: {in_process:.1f} ms")
    verdict = "OK" if log_ms < LOG_TARGET_MS else "MISSED"
    print(f"  target whole process < {LOG_TARGET_MS:.0f} ms: {verdict}")


# -- one document into a vault of 10,000 notes ---------------------------------------------------

SMALL_VAULT_NOTES = 10_000
# The vault bench/index_bench.py builds, the same notes.
SMALL_VAULT = REPO / "bench" / ".data" / f"vault-{SMALL_VAULT_NOTES}"
SMALL_ROUNDS = 7


def bench_one_document(scratch: Path, rounds: int = SMALL_ROUNDS) -> None:
    """`lore ingest` of a one-paragraph document into a vault of 10,000 notes (sections of
    the Python documentation, built once under bench/.data/ and copied with their times),
    each run a fresh process: the first run, which reads every note and caches it, then
    runs taking the catalog from the cache, alternating with runs that cannot read it (a
    folder stands where the cache would be, so every note is read as before the cache)."""
    if not (SMALL_VAULT / ".bench-complete").exists():
        from index_bench import build_vault

        print(f"building a vault of {SMALL_VAULT_NOTES:,} notes in {SMALL_VAULT} ...", flush=True)
        build_vault(SMALL_VAULT, SMALL_VAULT_NOTES)
    root = scratch / "one-document"
    shutil.copytree(SMALL_VAULT, root, symlinks=True)
    environment = dict(os.environ, LORE_HOME=str(scratch / "home"))
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    environment["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    lore = [sys.executable, "-m", "lore", "--vault", str(root)]
    # The search index is built once, as the first command after a copy would.
    subprocess.run([*lore, "notes", "list"], env=environment, stdout=subprocess.DEVNULL, check=True)
    cache = root / ".lore" / "catalog.sqlite3"
    documents = scratch / "documents"
    documents.mkdir()

    def ingest_one(number: int) -> float:
        document = documents / f"kelp-{number}.md"
        document.write_text(
            f"# Kelp forest {number}\n\nKelp forest {number} off Monterey grows "
            f"{number + 20} cm a day in spring and shelters {number + 40} kinds of fish.\n",
            encoding="utf-8",
        )
        return whole_process_ms([*lore, "ingest", str(document)], environment) / 1000

    first = ingest_one(0)
    times: dict[str, list[float]] = {"cached": [], "uncached": []}
    for number in range(rounds):
        for kind in ("cached", "uncached") if number % 2 == 0 else ("uncached", "cached"):
            if kind == "uncached":
                cache.rename(cache.with_name("catalog.kept"))
                cache.mkdir()
            times[kind].append(ingest_one(1 + 2 * number + (kind == "uncached")))
            if kind == "uncached":
                cache.rmdir()
                cache.with_name("catalog.kept").rename(cache)
    cached, uncached = (statistics.median(times[kind]) for kind in ("cached", "uncached"))
    print(
        f"lore ingest of one document into a vault of {SMALL_VAULT_NOTES:,} notes, whole process:"
    )
    print(f"  first run, reading every note and caching the catalog: {first:.2f} s")
    print(
        f"  later runs: median {cached:.2f} s with the catalog's cache, {uncached:.2f} s "
        f"reading every note ({uncached / cached:.1f}x), {rounds} alternating rounds "
        f"(runs: {', '.join(f'{value:.2f}' for value in times['cached'])} and "
        f"{', '.join(f'{value:.2f}' for value in times['uncached'])} s)"
    )
    print(f"  the cache: {cache.stat().st_size / 1e6:.1f} MB")
    # The same document again, unchanged, as a person re-runs an ingest of a folder.
    again = [
        whole_process_ms([*lore, "ingest", str(documents / "kelp-0.md")], environment) / 1000
        for _ in range(rounds)
    ]
    print(
        f"  the first document again, unchanged: median {statistics.median(again):.2f} s "
        f"over {rounds} runs"
    )


def bench_injection(scratch: Path) -> None:
    vault = Vault.open(init_vault(scratch / "corpus-vault"))
    cases = yaml.safe_load((CORPUS / "hostile.yaml").read_text(encoding="utf-8"))
    missed = []
    for case in cases:
        report = ingest_text(
            vault, case["text"], uri=f"corpus:{case['id']}", title=case["id"], trust="semi-trusted"
        )
        source = report.sources[0]
        if source.admitted or source.merged or not source.held:
            missed.append(case["id"])
    benign = sorted(p for p in (CORPUS / "benign").iterdir() if p.is_file())
    report = ingest(vault, [str(p) for p in benign])
    wrongly = [s.target for s in report.sources if s.held]
    vault.close()
    print(
        f"hostile cases held: {len(cases) - len(missed)} / {len(cases)}"
        + (f"  missed: {missed}" if missed else "")
    )
    print(
        f"benign documents wrongly held: {len(wrongly)} / {len(benign)}  (target <= {len(benign) // 20})"
    )
    for target in wrongly:
        print(f"    {Path(target).name}")


def main() -> int:
    options = sys.argv[1:]
    if "--one" in options:
        budget = (
            options[options.index("--memory-claims") + 1] if "--memory-claims" in options else None
        )
        return one_run(
            options[options.index("--one") + 1],
            Path(options[0]),
            int(budget) if budget is not None else None,
        )
    pairs = int(options[options.index("--pairs") + 1]) if "--pairs" in options else 2
    arguments = [
        argument
        for number, argument in enumerate(options)
        if not argument.startswith("--") and (number == 0 or options[number - 1] != "--pairs")
    ]
    log_only = "--log-only" in options
    if "--one-document-only" in options:
        with tempfile.TemporaryDirectory(prefix="lore-ingest-bench-") as scratch:
            bench_one_document(Path(scratch))
        return 0
    folder = Path(arguments[0]) if arguments else None if log_only else ensure_python_docs()
    with tempfile.TemporaryDirectory(prefix="lore-ingest-bench-") as scratch:
        if not log_only:
            if folder is None:
                print("no document set: install python3.11-doc or pass a folder")
            else:
                off = compare_versioning(folder, pairs)
                memory_growth(folder, off, Path(scratch))
            bench_injection(Path(scratch))
        bench_note_log(Path(scratch))
        if not log_only:
            bench_one_document(Path(scratch))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
