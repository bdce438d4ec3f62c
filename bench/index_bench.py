"""The whoosh note index against SQLite FTS5 on the same 10,000 real notes and 200 queries.

Corpus: the reStructuredText sources of the Python 3.11 documentation as Debian's
`python3.11-doc` package installs them (/usr/share/doc/python3.11/html/_sources/**/*.rst.txt),
split at section headings (and long sections at paragraph breaks) into 10,000 notes, each with
front matter and a title. The vault is written once under bench/.data/ and reused.

Printed, not asserted: full build (notes/s), one-note update (ms), search p50/p95 (ms) and the
open-time reconcile of an unchanged vault (ms). Targets: search p50 within 1.3x of FTS5's,
reconcile under 300 ms, one-note update under 50 ms.

Run: .venv/bin/python bench/index_bench.py [--notes N] [--fresh]
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import re
import shutil
import sqlite3
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from lore.core.notes import Note, render_note
from lore.core.slug import slugify, unique_name
from lore.core.vault import Vault, init_vault

CORPUS = Path("/usr/share/doc/python3.11/html/_sources")
CORPUS_NAME = "Python 3.11 documentation, reST sources (Debian package python3.11-doc)"
DATA = Path(__file__).resolve().parent / ".data"
QUERY_COUNT = 200
SEARCH_PASSES = 3
UPDATE_ROUNDS = 20
RECONCILE_ROUNDS = 5
MAX_SECTION_CHARS = 1200
_STOPWORD_TEXT = """
about after again also because been before being between both could does doing down during
each from further have having here into itself just more most other over same should some such
than that their theirs them then there these they this those through under until very were what
when where which while will with would your used using value example function object method
return returns following section
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_UNDERLINE = re.compile(r"^([=\-~^*+#\"'`:.])\1{2,}\s*$")


# -- the corpus --------------------------------------------------------------------------------


def _sections(text: str) -> Iterator[tuple[str, str]]:
    """(heading, text) for each reST section: a title line followed by an underline."""
    lines = text.splitlines()
    heading = ""
    current: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if (
            line.strip()
            and not _UNDERLINE.match(line)
            and _UNDERLINE.match(following)
            and len(following.strip()) >= len(line.strip())
        ):
            if current and "".join(current).strip():
                yield heading, "\n".join(current)
            heading = line.strip()
            current = []
            index += 2
            continue
        if not _UNDERLINE.match(line):
            current.append(line)
        index += 1
    if current and "".join(current).strip():
        yield heading, "\n".join(current)


def _pieces(body: str) -> Iterator[str]:
    """A long section cut at paragraph breaks into pieces of about MAX_SECTION_CHARS."""
    piece: list[str] = []
    size = 0
    for paragraph in re.split(r"\n\s*\n", body):
        if size and size + len(paragraph) > MAX_SECTION_CHARS:
            yield "\n\n".join(piece)
            piece, size = [], 0
        piece.append(paragraph)
        size += len(paragraph) + 2
    if piece:
        yield "\n\n".join(piece)


def _clean_title(text: str) -> str:
    return " ".join(re.sub(r"[:`*]+", " ", text).replace("---", "-").split())


def corpus_notes(limit: int) -> list[tuple[str, str, str, list[str]]]:
    """(folder, title, body, tags) for the first `limit` sections of the corpus."""
    if not CORPUS.is_dir():
        sys.exit(
            f"the corpus is missing: {CORPUS}\ninstall it with: apt-get install -y python3.11-doc"
        )
    found: list[tuple[str, str, str, list[str]]] = []
    seen_titles: Counter[str] = Counter()
    for source in sorted(CORPUS.rglob("*.rst.txt")):
        relative = source.relative_to(CORPUS)
        folder = relative.parent.as_posix() if relative.parent.parts else "top"
        stem = source.name.removesuffix(".rst.txt")
        text = source.read_text(encoding="utf-8", errors="replace")
        for heading, body in _sections(text):
            for part, piece in enumerate(_pieces(body), 1):
                if len(piece.strip()) < 80:
                    continue
                title = _clean_title(heading) or stem
                title = f"{stem}: {title}" if part == 1 else f"{stem}: {title} ({part})"
                seen_titles[title.casefold()] += 1
                if seen_titles[title.casefold()] > 1:
                    title = f"{title} #{seen_titles[title.casefold()]}"
                found.append((folder, title, piece.strip() + "\n", [folder.split("/")[0], stem]))
                if len(found) >= limit:
                    return found
    return found


def build_vault(root: Path, count: int) -> None:
    if root.exists():
        shutil.rmtree(root)
    init_vault(root, "bench")
    notes = corpus_notes(count)
    if len(notes) < count:
        sys.exit(f"the corpus gave only {len(notes)} notes, fewer than {count}")
    for number, (folder, title, body, tags) in enumerate(notes):
        target = root / "notes" / folder
        target.mkdir(parents=True, exist_ok=True)
        name = unique_name(slugify(title), lambda name, target=target: (target / name).exists())
        note = Note(
            path=f"notes/{folder}/{name}",
            id=f"b{number:06d}",
            title=title,
            body=body,
            tags=tags,
            created="2026-01-01T00:00:00Z",
            updated="2026-01-01T00:00:00Z",
            trust="trusted",
        )
        (target / name).write_text(render_note(note), encoding="utf-8")
    (root / ".bench-complete").write_text(str(count))


# -- the queries -------------------------------------------------------------------------------


def make_queries(bodies: list[str], count: int, seed: int = 7) -> list[str]:
    """Single words, word pairs and two-word phrases drawn from the corpus itself."""
    rng = random.Random(seed)
    document_frequency: Counter[str] = Counter()
    tokenised = []
    for body in bodies:
        words = re.findall(r"[a-z]{4,}", body.lower())
        tokenised.append(words)
        document_frequency.update(set(words))
    # Words that are neither noise nor everywhere: what someone would actually type.
    usable = sorted(
        word
        for word, frequency in document_frequency.items()
        if 3 <= frequency <= len(bodies) // 20 and word not in STOPWORDS
    )
    queries: list[str] = []
    for _ in range(count * 5 // 10):
        queries.append(rng.choice(usable))
    for _ in range(count * 3 // 10):
        queries.append(f"{rng.choice(usable)} {rng.choice(usable)}")
    while len(queries) < count:
        words = rng.choice(tokenised)
        if len(words) < 2:
            continue
        start = rng.randrange(len(words) - 1)
        pair = words[start : start + 2]
        if any(word in STOPWORDS for word in pair):
            continue
        queries.append(f'"{pair[0]} {pair[1]}"')
    rng.shuffle(queries)
    return queries


def fts5_query(query: str) -> str:
    """The same query in FTS5 syntax: a phrase stays a phrase, separate words are OR-ed."""
    if query.startswith('"'):
        return query
    return " OR ".join(f'"{word}"' for word in query.split())


# -- timing helpers ----------------------------------------------------------------------------


def timed_ms(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    position = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[position]


# -- the two engines ---------------------------------------------------------------------------


class Fts5Notes:
    """The same notes in SQLite FTS5, with a (path, size, mtime) manifest table."""

    def __init__(self, database: Path) -> None:
        if database.exists():
            database.unlink()
        self.db = sqlite3.connect(database)
        self.db.executescript(
            """
            PRAGMA journal_mode=WAL;
            CREATE VIRTUAL TABLE notes USING fts5(
                path UNINDEXED, title, tags, body, tokenize='porter unicode61'
            );
            CREATE TABLE manifest (path TEXT PRIMARY KEY, size INTEGER, mtime INTEGER);
            """
        )

    def build(self, vault: Vault) -> int:
        count = 0
        with self.db:
            for relpath, size, mtime in vault.scan_note_files():
                note, _ = vault.load_note(relpath)
                if note is None:
                    continue
                self._insert(note)
                self.db.execute("INSERT INTO manifest VALUES (?, ?, ?)", (relpath, size, mtime))
                count += 1
        return count

    def _insert(self, note: Note) -> None:
        self.db.execute(
            "INSERT INTO notes (path, title, tags, body) VALUES (?, ?, ?, ?)",
            (note.path, note.title, " ".join(note.tags), note.body),
        )

    def update(self, vault: Vault, note: Note) -> None:
        path = vault.root / note.path
        path.write_text(render_note(note), encoding="utf-8")
        info = path.stat()
        with self.db:
            self.db.execute("DELETE FROM notes WHERE path = ?", (note.path,))
            self._insert(note)
            self.db.execute(
                "INSERT OR REPLACE INTO manifest VALUES (?, ?, ?)",
                (note.path, info.st_size, info.st_mtime_ns),
            )

    def search(self, query: str, limit: int = 10) -> list[tuple[str, str, str]]:
        return self.db.execute(
            "SELECT path, title, snippet(notes, 3, '[', ']', ' … ', 24) FROM notes "
            "WHERE notes MATCH ? ORDER BY bm25(notes, 0.0, 3.0, 2.0, 1.0) LIMIT ?",
            (fts5_query(query), limit),
        ).fetchall()

    def reconcile(self, vault: Vault) -> int:
        """Files whose (size, mtime) differ from the manifest: the same check Lore makes."""
        known = {row[0]: (row[1], row[2]) for row in self.db.execute("SELECT * FROM manifest")}
        changed = 0
        on_disk = set()
        for relpath, size, mtime in vault.scan_note_files():
            on_disk.add(relpath)
            if known.get(relpath) != (size, mtime):
                changed += 1
        return changed + len(set(known) - on_disk)


# -- the run -----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--fresh", action="store_true", help="write the bench vault again")
    args = parser.parse_args()

    root = DATA / f"vault-{args.notes}"
    marker = root / ".bench-complete"
    if args.fresh or not marker.exists():
        print(f"writing {args.notes:,} notes to {root} ...", flush=True)
        build_vault(root, args.notes)

    print(f"corpus: {CORPUS_NAME}")
    print(f"vault:  {root}  ({args.notes:,} notes)\n", flush=True)
    rows: list[tuple[str, str, str, str]] = []

    # Full build.
    vault = Vault.open(root)
    started = time.perf_counter()
    report = vault.reindex()
    whoosh_build_s = time.perf_counter() - started
    indexed = len(report.added)
    fts = Fts5Notes(DATA / f"fts5-{args.notes}.sqlite")
    started = time.perf_counter()
    fts_count = fts.build(vault)
    fts_build_s = time.perf_counter() - started
    rows.append(
        (
            "full build (notes/s)",
            f"{indexed / whoosh_build_s:,.0f}",
            f"{fts_count / fts_build_s:,.0f}",
            "",
        )
    )

    # Search: the 200 queries once untimed on each engine, then three timed passes; each
    # query keeps its best time, so a busy machine blurs both engines alike and less.
    notes = [vault.read_note(relpath) for relpath, _, _ in vault.scan_note_files()]
    queries = make_queries([note.body for note in notes], QUERY_COUNT)
    index = vault.index
    for query in queries:
        index.search(query, limit=10, snippets=True)
        fts.search(query)
    gc.collect()
    whoosh_times = [float("inf")] * len(queries)
    bare_times = [float("inf")] * len(queries)
    fts_times = [float("inf")] * len(queries)
    for _ in range(SEARCH_PASSES):
        for number, query in enumerate(queries):
            elapsed = timed_ms(lambda q=query: index.search(q, limit=10, snippets=True))
            whoosh_times[number] = min(whoosh_times[number], elapsed)
            elapsed = timed_ms(lambda q=query: index.search(q, limit=10, snippets=False))
            bare_times[number] = min(bare_times[number], elapsed)
            elapsed = timed_ms(lambda q=query: fts.search(q))
            fts_times[number] = min(fts_times[number], elapsed)
    whoosh_p50, fts_p50 = statistics.median(whoosh_times), statistics.median(fts_times)
    ratio = whoosh_p50 / fts_p50 if fts_p50 else float("inf")
    rows.append(
        (
            "search p50 (ms)",
            f"{whoosh_p50:.2f}",
            f"{fts_p50:.2f}",
            f"{ratio:.2f}x FTS5 (target <= 1.3x): {'met' if ratio <= 1.3 else 'MISSED'}",
        )
    )
    rows.append(
        (
            "search p95 (ms)",
            f"{percentile(whoosh_times, 0.95):.2f}",
            f"{percentile(fts_times, 0.95):.2f}",
            "",
        )
    )
    rows.append(
        (
            "  Lore without snippets p50",
            f"{statistics.median(bare_times):.2f}",
            "",
            "the ranking alone, for comparison",
        )
    )
    empty = sum(1 for query in queries if not index.search(query, limit=1, snippets=False))
    fts_empty = sum(1 for query in queries if not fts.search(query, limit=1))

    # One-note update through Vault.save (write, fsync, index commit, manifest).
    rng = random.Random(3)
    targets = rng.sample(notes, UPDATE_ROUNDS)
    update_times = []
    for round_number, note in enumerate(targets):
        note.body += f"\nEdited in round {round_number}.\n"
        update_times.append(timed_ms(lambda note=note: vault.save(note)))
    fts_update_times = []
    for note in rng.sample(notes, UPDATE_ROUNDS):
        note.body += "\nEdited again.\n"
        fts_update_times.append(timed_ms(lambda note=note: fts.update(vault, note)))
    update_p50 = statistics.median(update_times)
    rows.append(
        (
            "one-note update p50 (ms)",
            f"{update_p50:.1f}",
            f"{statistics.median(fts_update_times):.1f}",
            f"max {max(update_times):.1f} ms (target < 50 ms): "
            f"{'met' if update_p50 < 50 else 'MISSED'}",
        )
    )
    vault.close()
    # FTS5's copy changed on disk behind Lore's back; let Lore's manifest catch up before
    # timing the reconcile of an unchanged vault.
    catch_up = Vault.open(root)
    _ = catch_up.index
    catch_up.close()

    # Open-time reconcile of an unchanged vault: scan the disk and compare with the manifest.
    reconcile_times = []
    open_times = []
    for _ in range(RECONCILE_ROUNDS):
        started = time.perf_counter()
        fresh = Vault.open(root)
        _ = fresh.index
        open_times.append((time.perf_counter() - started) * 1000)
        assert fresh.last_reconcile is not None and fresh.last_reconcile.touched == 0
        fresh.close()
        fresh = Vault.open(root)
        files = fresh.scan_note_files()
        probe = fresh.index  # opens once so the next call measures the reconcile alone
        reconcile_times.append(
            timed_ms(
                lambda probe=probe, files=files, lock=fresh.lock: probe.open(lambda: files, lock)
            )
        )
        fresh.close()
    fts_reconcile = [timed_ms(lambda: fts.reconcile(vault)) for _ in range(RECONCILE_ROUNDS)]
    open_ms = statistics.median(open_times)
    rows.append(
        (
            "reconcile unchanged (ms)",
            f"{open_ms:.0f}",
            f"{statistics.median(fts_reconcile):.0f}",
            f"scan + index open; without the disk scan {statistics.median(reconcile_times):.0f} ms "
            f"(target < 300 ms): {'met' if open_ms < 300 else 'MISSED'}",
        )
    )

    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    header = ("", "Lore (whoosh)", "SQLite FTS5")
    widths = [max(width, len(name)) for width, name in zip(widths, header, strict=True)]
    print(f"{header[0]:<{widths[0]}}  {header[1]:>{widths[1]}}  {header[2]:>{widths[2]}}")
    print("-" * (sum(widths) + 4))
    for name, lore_value, fts_value, verdict in rows:
        print(
            f"{name:<{widths[0]}}  {lore_value:>{widths[1]}}  {fts_value:>{widths[2]}}  {verdict}"
        )
    print(
        f"\n{len(queries)} queries (100 words, 60 word pairs, 40 phrases; "
        f"{empty} with no hit in Lore, {fts_empty} in FTS5); Lore searches with snippets "
        "as `lore search` does; FTS5 with bm25() and snippet()."
    )
    print(
        f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}, {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
