"""History at scale: tail loads, paging, search and compaction on long histories.

Turns are built from real text: questions and answers are sentences of the Python
documentation's reStructuredText sources (Debian's python3.11-doc,
/usr/share/doc/python3.11/html/_sources), about 1 KB a turn like a real ask. Without that
package a fixed pseudo-random vocabulary is used instead. Histories are written once under
bench/.data/ and reused.

Printed, not asserted:
- loading the last 50 turns from histories of 1,000 and 1,000,000 turns, p50/p95, and their
  ratio (target: under 10 ms at any size, ratio near 1);
- the History pane's reads on 100,000 turns: `count()` the first time (building the offset
  index) and after, a page of 50 from the middle, a search that finds 50 hits, a search that
  finds nothing (a full scan, with a plain word and with an accented one) and the same
  through `search_page`, which stops at its read budget;
- opening the History pane cold at 100,000 and 1,000,000 turns, each run a new process:
  what the pane reads first (`count()`, the newest page of 200 rows, the memory status)
  with the offset index saved beside the history and with none (target: under 300 ms at
  1,000,000 turns with the index), timed inside the process after its imports and for the
  whole process; and one `append` in a new process, which extends the saved index;
- compacting 100,000 turns offline in a fresh process, ending as the `lore` program ends:
  time compacting and as a whole process, and peak resident memory (target: under 5 s and
  300 MB); `lore compact` as a person runs it and `lore compact --json` as a script does
  (it prints all the entries written); the three taking turns, each run in a vault of its
  own outside any repository as `lore init` makes one, so the commit of the memory written
  counts too (target: under 5 s), its history copied and on the disk before the run;
  medians of five runs each, with a host probe in a process of its own before each round
  (dict lookups of words just split, as digests do most: a host slowed by other work
  slows it too, where a loop of additions does not show it); then `lore ask --json` in the vault
  `lore compact` made, reading the view of the archive an ask keeps, alternating with the
  same ask reading the whole archive; and `lore compact` of 60 more turns at a time, as later
  asks make it due, with what each adds to the vault's git objects. Last, with no target,
  as many turns whose sentences never repeat (each one's words in a new order), as in a
  model's answers, compacted as the first: the turns above quote a pool of sentences, as
  the offline answerer quotes notes, and a digest reads each sentence it has seen once.

    python bench/history_bench.py [--big N] [--compact-turns N] [--rebuild] [--only PART]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from lore.core.history import HistoryStore
from lore.core.memory_status import memory_status
from lore.core.vault import Vault, init_vault

DOC_SOURCES = Path("/usr/share/doc/python3.11/html/_sources")
DATA = Path(__file__).resolve().parent / ".data" / "history"
SENTENCE = re.compile(r"(?<=[.!?])\s+")
MARKUP = re.compile(r"[`*_:|<>\[\]]+|\.\. \S+::?")


def corpus_sentences(limit: int = 60_000) -> list[str]:
    sentences: list[str] = []
    if DOC_SOURCES.is_dir():
        for path in sorted(DOC_SOURCES.rglob("*.rst.txt")):
            text = MARKUP.sub(" ", path.read_text(encoding="utf-8", errors="replace"))
            for paragraph in text.split("\n\n"):
                flat = " ".join(paragraph.split())
                for sentence in SENTENCE.split(flat):
                    if 40 <= len(sentence) <= 240 and sentence[0].isalpha():
                        sentences.append(sentence)
            if len(sentences) >= limit:
                break
    if len(sentences) < 1000:
        rng = random.Random(0)
        words = [
            f"{rng.choice('bcdfglmnprst')}{rng.choice('aeiou')}{rng.choice('nrst')}"
            for _ in range(3000)
        ]
        sentences = [
            " ".join(rng.choice(words) for _ in range(rng.randint(8, 30))).capitalize() + "."
            for _ in range(20_000)
        ]
    return sentences


def write_history(
    path: Path, turns: int, sentences: list[str], seed: int, *, reworded: bool = False
) -> None:
    """`turns` records shaped exactly as HistoryStore.append writes them, written in bulk.

    Their questions and answers quote the sentences as they are, as the offline answerer
    quotes notes; `reworded`, each sentence quoted has its words in a new order, so that
    none repeats, as in a model's answers."""
    rng = random.Random(seed)

    def quoted() -> str:
        sentence = rng.choice(sentences)
        if not reworded:
            return sentence
        words = sentence.rstrip(".!?").split()
        rng.shuffle(words)
        return " ".join(words) + sentence[-1:]

    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(".tmp")
    base = 0x19000000000
    with open(temp, "wb") as handle:
        batch: list[bytes] = []
        for number in range(turns):
            question = quoted().rstrip(".") + "?"
            answer = " ".join(
                quoted() + f" [{rng.randint(1, 6)}]" for _ in range(rng.randint(2, 6))
            )
            record = {
                "v": 1,
                "id": f"t{base + number * 1000:011x}{rng.randrange(16**6):06x}",
                "time": "2026-01-01T00:00:00Z",
                "question": question,
                "resolved_question": question,
                "answer": answer,
                "cited": [f"notes/doc-{rng.randint(1, 10_000)}.md"],
                "provider": "offline",
                "model": "extractive",
                "usage": {
                    "estimated_prompt_tokens": rng.randint(800, 4000),
                    "estimated_completion_tokens": rng.randint(50, 400),
                    "prompt_tokens": None,
                    "completion_tokens": None,
                },
                "timings": {"retrieval_ms": 3.1, "first_token_ms": 9.0, "total_ms": 15.2},
                "status": "ok" if rng.random() < 0.95 else "cancelled",
                "error": None,
            }
            batch.append(
                (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
            )
            if len(batch) >= 10_000:
                handle.write(b"".join(batch))
                batch.clear()
        handle.write(b"".join(batch))
    temp.replace(path)


def vault_with_history(
    name: str, turns: int, sentences: list[str], rebuild: bool, *, reworded: bool = False
) -> Vault:
    root = DATA / name
    marker = root / ".turns"
    if rebuild or not marker.exists() or marker.read_text() != str(turns):
        shutil.rmtree(root, ignore_errors=True)
        init_vault(root, name)
        print(f"  writing {turns:,} turns to {root} …", flush=True)
        write_history(root / "history.jsonl", turns, sentences, seed=turns, reworded=reworded)
        marker.write_text(str(turns))
    return Vault.open(root)


def timings_ms(action: Callable[[], object], rounds: int) -> list[float]:
    values = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        values.append((time.perf_counter() - start) * 1000)
    return values


def p(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def bench_tail(sentences: list[str], big: int, rebuild: bool) -> None:
    print("Loading the last 50 turns (HistoryStore.tail(50)), 200 rounds each")
    results = {}
    for turns in (1_000, big):
        vault = vault_with_history(f"tail-{turns}", turns, sentences, rebuild)
        store = HistoryStore(vault)
        assert len(store.tail(50)) == 50
        values = timings_ms(lambda store=store: store.tail(50), 200)
        size_mb = vault.layout.history.stat().st_size / 1e6
        results[turns] = statistics.median(values)
        print(
            f"  {turns:>9,} turns ({size_mb:,.0f} MB): p50 {statistics.median(values):.2f} ms, "
            f"p95 {p(values, 0.95):.2f} ms"
        )
    ratio = results[big] / results[1_000]
    print(f"  ratio {big:,} / 1,000 turns: {ratio:.2f} (target: near 1; each under 10 ms)")


def bench_pane(sentences: list[str], turns: int, rebuild: bool) -> None:
    vault = vault_with_history(f"pane-{turns}", turns, sentences, rebuild)
    (vault.layout.state / "history.idx").unlink(missing_ok=True)
    print(f"The History pane's reads on {turns:,} turns")
    start = time.perf_counter()
    count = HistoryStore(vault).count()
    first = (time.perf_counter() - start) * 1000
    print(f"  count() with no saved index (builds and saves it): {first:,.0f} ms → {count:,} turns")
    again = timings_ms(lambda: HistoryStore(vault).count(), 20)
    print(
        f"  count() in a new process-like store (saved index): p50 {statistics.median(again):.1f} ms"
    )
    store = HistoryStore(vault)
    store.count()
    middle = turns // 2
    page = timings_ms(lambda: store.read_range(middle, middle + 50), 50)
    print(f"  read_range of 50 turns from the middle: p50 {statistics.median(page):.2f} ms")
    word = "function"
    hits = timings_ms(lambda: store.search(word, limit=50), 10)
    print(f"  search({word!r}, limit=50): p50 {statistics.median(hits):.1f} ms")
    miss = timings_ms(lambda: store.search("zzqxv nothing", limit=50), 5)
    print(
        f"  search with no hit (scans all {turns:,} turns): p50 {statistics.median(miss):,.0f} ms"
    )
    accented = timings_ms(lambda: store.search("Ünïcode", limit=50), 5)
    print(f"  search with no hit, an accented word: p50 {statistics.median(accented):,.0f} ms")
    size = vault.layout.history.stat().st_size
    bounded = timings_ms(lambda: store.search_page("zzqxv nothing"), 5)
    page = store.search_page("zzqxv nothing")
    read = "all of it" if page.complete else f"{page.scanned_bytes / size:.0%}, then stopped"
    print(
        f"  search_page with no hit (default budget): p50 {statistics.median(bounded):,.0f} ms, "
        f"read {read}"
    )


COMPACT_CHILD = """
import resource, sys, time
from pathlib import Path
from lore.cli.process_exit import end_process
from lore.core.compaction import compact
from lore.core.vault import Vault
vault = Vault.open(Path(sys.argv[1]))
start, cpu = time.perf_counter(), time.process_time()
report = compact(vault)
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{elapsed:.3f} {cpu:.3f} {peak:.0f} {report.turns_covered} {len(report.entries_written)} "
      f"{report.memory_tokens_after} {max(report.levels)}")
# As the `lore` program ends: without taking apart the archive object by object.
end_process(0)
"""
# Each compaction is timed this many times, a fresh vault each time; medians are printed.
COMPACT_ROUNDS = 5
# What a digest does most: look up, in a large dict, the words `str.split` has just made.
# A host that slows for other work slows this as it slows compaction, where a loop of
# additions, which fits in a core's cache, stays as fast (`machine_speed`).
HOST_PROBE_CHILD = """
import random, time
rng = random.Random(7)
words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 12)))
         for _ in range(200_000)]
table = {word: (word, len(word), word[:4]) for word in words}
text = " ".join(rng.choices(words, k=600_000))
started = time.perf_counter()
sum(map(len, filter(None, map(table.get, text.split()))))
print(time.perf_counter() - started)
"""


def bench_compaction(sentences: list[str], turns: int, rebuild: bool) -> None:
    source = vault_with_history(f"compact-{turns}", turns, sentences, rebuild)
    work = DATA / f"compact-{turns}-run"
    print(
        f"Compacting {turns:,} turns offline, in a fresh process (default settings), "
        f"medians of {COMPACT_ROUNDS} runs"
    )
    # A shared or virtual machine's speed changes from one minute to the next: a fixed loop
    # timed once, and the host probe before each round of compactions (see
    # `bench_compaction_three_ways`), tell a slower machine from slower code.
    print(f"  {machine_speed()}")
    bench_compaction_three_ways(source, turns)
    reworded = vault_with_history(
        f"compact-{turns}-reworded", turns, sentences, rebuild, reworded=True
    )
    fresh = compaction_runs(reworded, work, REWORDED_ROUNDS)
    if fresh is not None:
        print(
            f"  the same number of turns with each sentence's words in a new order, so that no "
            f"sentence repeats, as in a model's answers (the turns above quote "
            f"{len(sentences):,} sentences, as the offline answerer quotes notes): "
            f"{statistics.median(run[0] for run in fresh):.2f} s as a whole process "
            f"(runs: {_seconds(run[0] for run in fresh)}; no target)"
        )


# The reworded history is compacted this many times.
REWORDED_ROUNDS = 3


def fresh_vault(source: Vault, folder: Path) -> Path:
    """A vault in `folder`, as `lore init` makes one, holding a copy of `source`'s history.

    The copy is on the disk before the run it is for: written back while that run reads,
    it would keep a core busy, and compaction reads in a second process only onto a core
    nothing else holds, as a history that was not just written leaves it."""
    shutil.rmtree(folder, ignore_errors=True)
    init_vault(folder, "compaction run")
    shutil.copyfile(source.layout.history, folder / "history.jsonl")
    os.sync()
    return folder


def compact_in_child(vault: Path) -> tuple[float, list[str]] | None:
    """`COMPACT_CHILD` in `vault`: the whole process's seconds and what it printed; None
    (and why, printed) if it failed."""
    whole, result = timed_process([sys.executable, "-c", COMPACT_CHILD, str(vault)])
    if result.returncode != 0:
        print("  failed:", result.stderr.strip().splitlines()[-1:])
        return None
    return whole, result.stdout.split()


def compaction_runs(source: Vault, work: Path, rounds: int) -> list[tuple[float, list[str]]] | None:
    """`COMPACT_CHILD` on a copy of `source`'s history, `rounds` times, a fresh vault and a
    fresh process each time: the whole process's seconds and what it printed; None (and
    why, printed) if one failed."""
    runs: list[tuple[float, list[str]]] = []
    for _ in range(rounds):
        run = compact_in_child(fresh_vault(source, work))
        if run is None:
            return None
        runs.append(run)
    shutil.rmtree(work, ignore_errors=True)
    return runs


def _seconds(values: Iterable[float]) -> str:
    return ", ".join(f"{value:.2f}" for value in values)


def bench_compaction_three_ways(source: Vault, turns: int) -> None:
    """The history compacted by `compact()` in a process of its own, by `lore compact` as a
    person runs it, and by `lore compact --json` as a script does (it prints every entry
    written), taking turns `COMPACT_ROUNDS` times, so that the three see the same machine.
    Each runs in a vault of its own outside any repository (as `lore init` makes one), so
    the commit of the memory it writes counts."""
    script = Path(sys.executable).with_name("lore")
    program = [str(script)] if script.exists() else [sys.executable, "-m", "lore"]
    runs: list[tuple[float, list[str]]] = []
    seconds: dict[str, list[float]] = {"": [], "--json": []}
    probes: list[float] = []
    with tempfile.TemporaryDirectory(prefix="lore-compact-") as folder:
        # The vault of the first `lore compact` is kept for the asks and compactions after.
        kept = Path(folder) / "vault"
        another = Path(folder) / "another"
        for number in range(COMPACT_ROUNDS):
            probes.append(host_probe())
            run = compact_in_child(fresh_vault(source, another))
            if run is None:
                return
            runs.append(run)
            for options in ([], ["--json"]):
                vault = fresh_vault(source, kept if not options and number == 0 else another)
                command = ["compact", *options]
                whole, result = timed_process([*program, "--vault", str(vault), *command])
                if result.returncode != 0:
                    print(
                        f"  lore {' '.join(command)} failed:",
                        result.stderr.strip().splitlines()[-1:],
                    )
                    return
                seconds[" ".join(options)].append(whole)
        elapsed, cpu, whole = (
            statistics.median(float(run[1][n]) if n < 2 else run[0] for run in runs)
            for n in range(3)
        )
        peak = max(int(run[1][2]) for run in runs)
        print(
            f"  host probe before each round (600,000 words just split, looked up in a dict of "
            f"200,000, a fresh process): median {statistics.median(probes) * 1000:.0f} ms "
            f"(runs: {', '.join(f'{probe * 1000:.0f}' for probe in probes)}), beside the "
            f"compactions' runs below, in the same order"
        )
        _, _, _, covered, entries, memory_tokens, top = runs[-1][1]
        print(
            f"  {elapsed:.2f} s compacting ({cpu:.2f} s of CPU in this process), "
            f"{whole:.2f} s as a whole process (runs: {_seconds(run[0] for run in runs)}), "
            f"peak memory {peak} MB — {int(covered):,} turns covered by {int(entries):,} "
            f"entries up to level {top}, {int(memory_tokens):,} memory tokens sent "
            f"(targets: under 5 s, under 300 MB)"
        )
        for options, taken in seconds.items():
            command = " ".join(["compact", options]).strip()
            print(
                f"  `lore {command}` as a whole process: {statistics.median(taken):.2f} s "
                f"(runs: {_seconds(taken)}), the commit of memory included (target: under 5 s)"
            )
        live = memory_status(Vault.open(kept)).live_turns
        print(f"  {turns - live:,} of {turns:,} turns covered")
        bench_ask_after_compaction(program, kept, turns)
        bench_compactions_after(program, kept, source.layout.history)


ASK_QUESTION = "what does the dict keys method return"
ASK_ROUNDS = 9


LATER_ROUNDS = 3
LATER_TURNS = 60


def bench_compactions_after(program: list[str], vault: Path, source: Path) -> None:
    """`lore compact` as the asks after a long compaction make it due: 60 more turns at a
    time (about 7,500 tokens, past the default threshold), each a new process, and what
    each adds to the vault's git objects (the archive's sealed parts stay as they are: only
    memory.json, and a new part once enough is covered, are written)."""
    with open(source, "rb") as handle:
        lines = [handle.readline() for _ in range(LATER_ROUNDS * LATER_TURNS)]
    objects = vault / ".git" / "objects"
    seconds: list[float] = []
    grown: list[int] = []
    for round_number in range(LATER_ROUNDS):
        with open(vault / "history.jsonl", "ab") as history:
            for number in range(LATER_TURNS):
                record = json.loads(lines[round_number * LATER_TURNS + number])
                record["id"] = f"tlater{round_number:02d}{number:06d}"
                history.write((json.dumps(record, ensure_ascii=False) + "\n").encode())
        before = _tree_bytes(objects)
        whole, result = timed_process([*program, "--vault", str(vault), "compact"])
        if result.returncode != 0:
            print("  a later lore compact failed:", result.stderr.strip().splitlines()[-1:])
            return
        seconds.append(whole)
        grown.append(_tree_bytes(objects) - before)
    print(
        f"  `lore compact` of {LATER_TURNS} more turns at a time, {LATER_ROUNDS} times: "
        f"{', '.join(f'{value:.2f}' for value in seconds)} s as a whole process; git objects "
        f"grew {', '.join(f'{value / 1e3:,.0f}' for value in grown)} KB; memory.json "
        f"{(vault / 'memory' / 'memory.json').stat().st_size / 1e3:,.0f} KB beside "
        f"{_tree_bytes(vault / 'memory' / 'sealed') / 1e6:.1f} MB in sealed parts"
    )


def _tree_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def bench_ask_after_compaction(program: list[str], vault: Path, turns: int) -> None:
    """`lore ask --json` (offline) in the vault just compacted, each run a new process: with
    the view of the archive an ask keeps beside it, alternating with the same ask made to
    read the whole archive (the view removed before it). The archive is dated an hour back,
    as one compacted a while ago is: the view is saved only for an archive that has been
    still a moment."""
    archive = vault / "memory" / "memory.json"
    an_hour_ago = time.time() - 3600
    os.utime(archive, (an_hour_ago, an_hour_ago))
    view = vault / ".lore" / "memory-view.json"
    ask = [*program, "--vault", str(vault), "--provider", "offline", "ask", "--json", ASK_QUESTION]
    first, result = timed_process(ask)
    if result.returncode != 0:
        print("  lore ask failed:", result.stderr.strip().splitlines()[-1:])
        return
    with_view: list[float] = []
    whole_archive: list[float] = []
    for number in range(ASK_ROUNDS):
        for reads_all in (number % 2 == 0, number % 2 == 1):
            if reads_all:
                view.unlink(missing_ok=True)
            seconds, _ = timed_process(ask)
            (whole_archive if reads_all else with_view).append(seconds * 1000)
    print(
        f"  `lore ask --json` after {turns:,} turns were compacted ({_tree_bytes(archive.parent) / 1e6:.1f} "
        f"MB archive), {ASK_ROUNDS} alternating rounds: median {statistics.median(with_view):.0f} ms "
        f"reading the archive's view, {statistics.median(whole_archive):.0f} ms reading the whole "
        f"archive (first ask {first * 1000:.0f} ms)"
    )


OPEN_CHILD = """
import sys, time
started = time.perf_counter()
from pathlib import Path
from lore.core.history import HistoryStore
from lore.core.memory_status import memory_status
from lore.core.vault import Vault
imported = time.perf_counter()
vault = Vault.open(Path(sys.argv[1]))
store = HistoryStore(vault)
total = store.count()
rows = store.read_lines(max(0, total - 200), total)
memory_status(vault)
done = time.perf_counter()
assert len(rows) == min(200, total)
print(f"{(imported - started) * 1000:.1f} {(done - imported) * 1000:.1f} {total}")
"""

APPEND_CHILD = """
import os, sys, time
from pathlib import Path
from lore.core.history import HistoryStore
from lore.core.turns import Turn
from lore.core.vault import Vault
vault = Vault.open(Path(sys.argv[1]))
index = vault.layout.state / "history.idx"
sizes = (vault.layout.history.stat().st_size, index.stat().st_size)
store = HistoryStore(vault)
started = time.perf_counter()
store.append(Turn(id="tbench", time="2026-01-01T00:00:00Z", question="q", answer="a"))
elapsed = (time.perf_counter() - started) * 1000
grew = index.stat().st_size - sizes[1]
# Put the bench history back as it was.
os.truncate(vault.layout.history, sizes[0])
os.truncate(index, sizes[1])
print(f"{elapsed:.1f} {grew}")
"""


def timed_process(argv: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Wall time in seconds of a new process running `argv`, and how it ended."""
    started = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, result


def run_child(code: str, *args: str) -> tuple[float, list[str]]:
    """Wall time in ms of a new process running `code`, and what it printed."""
    seconds, result = timed_process([sys.executable, "-c", code, *args])
    result.check_returncode()
    return seconds * 1000, result.stdout.split()


def bench_cold_open(sentences: list[str], big: int, pane_turns: int, rebuild: bool) -> None:
    print("Opening the History pane cold: a new process each run (count, newest 200 rows,")
    print("memory status), with the offset index saved and with none; medians")
    for name, turns in ((f"pane-{pane_turns}", pane_turns), (f"tail-{big}", big)):
        vault = vault_with_history(name, turns, sentences, rebuild)
        index = vault.layout.state / "history.idx"
        rounds = 9 if turns <= 100_000 else 5
        # Alternating, so both see the same machine: none (which builds and saves it), saved.
        absent: list[tuple[float, float, float]] = []
        present: list[tuple[float, float, float]] = []
        for _ in range(rounds):
            index.unlink(missing_ok=True)
            wall, (imports, inside, _) = run_child(OPEN_CHILD, str(vault.root))
            absent.append((float(inside), float(imports), wall))
            wall, (imports, inside, _) = run_child(OPEN_CHILD, str(vault.root))
            present.append((float(inside), float(imports), wall))
        for label, runs in (("no saved index", absent), ("saved index   ", present)):
            inside, imports, wall = (statistics.median(run[n] for run in runs) for n in range(3))
            print(
                f"  {turns:>9,} turns, {label}: {inside:,.0f} ms after imports "
                f"(imports {imports:,.0f} ms), {wall:,.0f} ms whole process"
            )
        appends = [run_child(APPEND_CHILD, str(vault.root))[1] for _ in range(rounds)]
        print(
            f"  {turns:>9,} turns, one append in a new process: p50 "
            f"{statistics.median(float(ms) for ms, _ in appends):.1f} ms, the saved index grew "
            f"by {appends[0][1]} bytes (one entry, not reread)"
        )
    print("  (target: under 300 ms at 1,000,000 turns with the saved index)")


def host_probe() -> float:
    """Seconds `HOST_PROBE_CHILD` takes to look its words up, in a process of its own."""
    _, result = timed_process([sys.executable, "-c", HOST_PROBE_CHILD])
    return float(result.stdout)


def machine_speed() -> str:
    """How long a fixed loop of plain Python takes here now (the least of three tries)."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for number in range(2_000_000):
            total += number
        best = min(best, time.perf_counter() - started)
    return f"machine speed: a fixed loop of 2,000,000 additions took {best * 1000:.0f} ms"


def machine_load() -> str:
    try:
        return f"load average {Path('/proc/loadavg').read_text().split()[0]}"
    except OSError:
        return "load unknown"


def cache_bytecode() -> str:
    """Every process the bench starts reads Lore's modules from Python's bytecode cache, as
    it does for an installed package (pip compiles on install), and the cache is filled
    first. Where PYTHONDONTWRITEBYTECODE is set, as in some shells and containers, every
    process would compile each module it imports instead: 0.1-0.3 s of each whole-process
    figure that no user pays."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.pop("PYTHONPYCACHEPREFIX", None)
    package = Path(__file__).resolve().parents[1] / "src" / "lore"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    return f"Bytecode: cached beside {package}'s modules, compiled before the first run"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", type=int, default=1_000_000, help="turns in the long history")
    parser.add_argument("--pane-turns", type=int, default=100_000)
    parser.add_argument("--compact-turns", type=int, default=100_000)
    parser.add_argument("--rebuild", action="store_true", help="write the histories again")
    parser.add_argument(
        "--only", choices=["tail", "pane", "open", "compact"], action="append", help="run part"
    )
    args = parser.parse_args()
    parts = set(args.only or ["tail", "pane", "open", "compact"])
    print(cache_bytecode())
    sentences = corpus_sentences()
    source = "Python 3.11 documentation" if DOC_SOURCES.is_dir() else "a generated vocabulary"
    print(f"Turn text: {len(sentences):,} sentences from {source}; {machine_load()}")
    if "tail" in parts:
        bench_tail(sentences, args.big, args.rebuild)
    if "pane" in parts:
        bench_pane(sentences, args.pane_turns, args.rebuild)
    if "open" in parts:
        bench_cold_open(sentences, args.big, args.pane_turns, args.rebuild)
    if "compact" in parts:
        bench_compaction(sentences, args.compact_turns, args.rebuild)
    print(f"Done; {machine_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
