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
  finds nothing (a full scan);
- compacting 100,000 turns offline in a fresh process: time and peak resident memory
  (target: under 5 s and 300 MB).

    python bench/history_bench.py [--big N] [--compact-turns N] [--rebuild]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from lore.core.history import HistoryStore
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


def write_history(path: Path, turns: int, sentences: list[str], seed: int) -> None:
    """`turns` records shaped exactly as HistoryStore.append writes them, written in bulk."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(".tmp")
    base = 0x19000000000
    with open(temp, "wb") as handle:
        batch: list[bytes] = []
        for number in range(turns):
            question = rng.choice(sentences).rstrip(".") + "?"
            answer = " ".join(
                rng.choice(sentences) + f" [{rng.randint(1, 6)}]" for _ in range(rng.randint(2, 6))
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


def vault_with_history(name: str, turns: int, sentences: list[str], rebuild: bool) -> Vault:
    root = DATA / name
    marker = root / ".turns"
    if rebuild or not marker.exists() or marker.read_text() != str(turns):
        shutil.rmtree(root, ignore_errors=True)
        init_vault(root, name)
        print(f"  writing {turns:,} turns to {root} …", flush=True)
        write_history(root / "history.jsonl", turns, sentences, seed=turns)
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
    miss = timings_ms(lambda: store.search("zzqxv nothing", limit=50), 3)
    print(
        f"  search with no hit (scans all {turns:,} turns): p50 {statistics.median(miss):,.0f} ms"
    )


COMPACT_CHILD = """
import resource, sys, time
from pathlib import Path
from lore.core.compaction import compact
from lore.core.vault import Vault
vault = Vault.open(Path(sys.argv[1]))
start, cpu = time.perf_counter(), time.process_time()
report = compact(vault)
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{elapsed:.3f} {cpu:.3f} {peak:.0f} {report.turns_covered} {len(report.entries_written)} "
      f"{report.memory_tokens_after} {max(report.levels)}")
"""


def bench_compaction(sentences: list[str], turns: int, rebuild: bool) -> None:
    source = vault_with_history(f"compact-{turns}", turns, sentences, rebuild)
    work = DATA / f"compact-{turns}-run"
    shutil.rmtree(work, ignore_errors=True)
    init_vault(work, "compaction run")
    shutil.copyfile(source.layout.history, work / "history.jsonl")
    print(f"Compacting {turns:,} turns offline, in a fresh process (default settings)")
    result = subprocess.run(
        [sys.executable, "-c", COMPACT_CHILD, str(work)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        print("  failed:", result.stderr.strip().splitlines()[-1:])
        return
    elapsed, cpu, peak, covered, entries, memory_tokens, top = result.stdout.split()
    print(
        f"  {float(elapsed):.2f} s ({float(cpu):.2f} s of CPU), peak memory {peak} MB "
        "(whole process) — "
        f"{int(covered):,} turns covered by {int(entries):,} entries up to level {top}, "
        f"{int(memory_tokens):,} memory tokens sent (targets: under 5 s, under 300 MB)"
    )
    shutil.rmtree(work, ignore_errors=True)


def machine_load() -> str:
    try:
        return f"load average {Path('/proc/loadavg').read_text().split()[0]}"
    except OSError:
        return "load unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", type=int, default=1_000_000, help="turns in the long history")
    parser.add_argument("--pane-turns", type=int, default=100_000)
    parser.add_argument("--compact-turns", type=int, default=100_000)
    parser.add_argument("--rebuild", action="store_true", help="write the histories again")
    args = parser.parse_args()
    sentences = corpus_sentences()
    source = "Python 3.11 documentation" if DOC_SOURCES.is_dir() else "a generated vocabulary"
    print(f"Turn text: {len(sentences):,} sentences from {source}; {machine_load()}")
    bench_tail(sentences, args.big, args.rebuild)
    bench_pane(sentences, args.pane_turns, args.rebuild)
    bench_compaction(sentences, args.compact_turns, args.rebuild)
    return 0


if __name__ == "__main__":
    sys.exit(main())
