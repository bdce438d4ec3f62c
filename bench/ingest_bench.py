"""Offline ingest of a real document set, then the injection corpus, with the figures printed.

Run: .venv/bin/python bench/ingest_bench.py [FOLDER]
Without FOLDER it reads Debian's python3.11-doc reST sources (installed with apt-get when
missing). Targets: the whole set in under 60 s on two cores, peak memory under 500 MB,
every hostile case held, at most one benign document in twenty wrongly held.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from lore.core.ingest import IngestEvent, ingest, ingest_text  # noqa: E402
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


def bench_corpus(folder: Path, scratch: Path) -> None:
    vault = Vault.open(init_vault(scratch / "docs-vault"))
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    started, cpu_started = time.perf_counter(), cpu_seconds()
    last_source = [started]

    def on_event(event: IngestEvent) -> None:
        last_source[0] = time.perf_counter()

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
    print(f"  peak memory (max RSS): {peak_rss_mb():.0f} MB")
    status = "OK" if elapsed < 60 and peak_rss_mb() < 500 else "MISSED"
    print(f"  target < 60 s and < 500 MB: {status} (wall); CPU {'OK' if cpu < 60 else 'MISSED'}")
    held = [s for s in report.sources if s.held]
    if held:
        print(f"  documents with held claims: {len(held)}")
        for source in held[:8]:
            print(f"    {Path(source.target).name}: {'; '.join(source.reasons)[:110]}")


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
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else ensure_python_docs()
    with tempfile.TemporaryDirectory(prefix="lore-ingest-bench-") as scratch:
        if folder is None:
            print("no document set: install python3.11-doc or pass a folder")
        else:
            bench_corpus(folder, Path(scratch))
        bench_injection(Path(scratch))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
