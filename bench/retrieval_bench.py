"""Does the evidence answer? Public question sets with known answers, through Lore's ingestion.

Two question sets, each question paired with the one section that answers it:

- the Python FAQ from Debian's python3.11-doc (/usr/share/doc/python3.11/html/_sources/faq):
  every FAQ answer is a source file of its own, written without its question, ingested
  among all the other documentation files of the package as distractors;
- the Debian FAQ (Debian's debian-faq, /usr/share/doc/debian/FAQ/debian-faq.en.txt.gz): every
  numbered section's answer, again without its question.

A question is a Python FAQ section heading, or a Debian FAQ heading with a question mark. The sources go through
`lore.core.ingest.ingest` as `lore ingest FOLDER` sends them (default trust rules, every gate
on); a note answers a question when it was filed from that question's answer file. Then, for
each question as written:

- `lore search`: the vault index searched with the raw question, as `lore search` does;
- the pack: `AskEngine.prepare`, the function `lore context` and `lore ask` build the pack
  with, at the default budget: does it deliver a note that answers?
- baselines on the same notes in the same run: plain whoosh BM25F (title and body, stemming
  analyzer, the question's words OR'ed) and SQLite FTS5 (porter tokenizer, bm25(), the
  question's words OR'ed).

Printed: success@10, recall@10 and MRR@10 of each ranking; the share of questions whose answer
reaches the pack. Then the ask overhead on the 10,000-note bench vault (bench/ask_bench.py).
Targets: the pack delivers the answer at least 10 points more often than the better baseline
finds it in its top 10; ask overhead (retrieve + pack + offline answer) p50 under 30 ms.

    python bench/retrieval_bench.py [--only python|debian] [--asks N] [--rebuild]

The ingested vaults are kept in the cache folder and rebuilt when the ingestion code changes.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import hashlib
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

from whoosh import index as whoosh_index  # noqa: E402
from whoosh import qparser  # noqa: E402
from whoosh.analysis import StemmingAnalyzer  # noqa: E402
from whoosh.fields import ID, TEXT, Schema  # noqa: E402

from lore.config import AskSettings  # noqa: E402
from lore.core.ask import AskEngine  # noqa: E402
from lore.core.providers.offline import OfflineProvider  # noqa: E402
from lore.core.vault import Vault, init_vault  # noqa: E402
from lore.paths import user_dirs  # noqa: E402

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html/_sources")
DEBIAN_FAQ = Path("/usr/share/doc/debian/FAQ/debian-faq.en.txt.gz")
PACKAGES = {"python": ("python3.11-doc", PYTHON_DOCS), "debian": ("debian-faq", DEBIAN_FAQ)}
TOP = 10
TARGET_MARGIN = 0.10
TARGET_OVERHEAD_MS = 30.0
# Bump when the way the question sets are cut changes, so cached vaults are rebuilt.
DATASET_VERSION = "1"

_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")
_RST_ROLE = re.compile(r":[\w:.-]+:`([^`<]*?)(?:\s*<[^>]*>)?`")
_DEBIAN_HEADING = re.compile(r"^(\d+(?:\.\d+)+)\.[ \xa0]+(\S.*)$")
_DEBIAN_CHAPTER = re.compile(r"^Chapter \d+\.")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class Question:
    text: str
    answer_file: str  # the uri of the source that answers it


@dataclass
class QuestionSet:
    name: str
    questions: list[Question]
    folder: Path  # every source to ingest, answers and distractors
    distractors: int


# -- the question sets ---------------------------------------------------------------------------


def ensure_package(which: str) -> bool:
    package, path = PACKAGES[which]
    if path.exists():
        return True
    if shutil.which("apt-get"):
        print(f"installing {package} with apt-get ...", flush=True)
        subprocess.run(["apt-get", "install", "-y", "-q", package], check=False)
    return path.exists()


def _plain(text: str) -> str:
    """A heading as a person would type it: reST roles and literals read as their words."""
    text = _RST_ROLE.sub(lambda match: match.group(1), text)
    return " ".join(text.replace("``", "").replace("`", "").replace("*", "").split())


def python_faq_sections() -> list[tuple[str, str]]:
    """(question heading, answer text) for every section of every Python FAQ file."""
    found: list[tuple[str, str]] = []
    for path in sorted((PYTHON_DOCS / "faq").glob("*.rst.txt")):
        lines = path.read_text(encoding="utf-8").split("\n")
        # Each section as [heading or None, its lines]; only sections underlined with "-"
        # are single questions ("=" are chapters).
        parts: list[tuple[str | None, list[str]]] = [(None, [])]
        number = 0
        while number < len(lines):
            line = lines[number]
            following = lines[number + 1] if number + 1 < len(lines) else ""
            if line.strip() and _RST_UNDERLINE.match(following) and not _RST_UNDERLINE.match(line):
                parts.append((_plain(line) if following.startswith("-") else None, []))
                number += 2
                continue
            if not _RST_UNDERLINE.match(line):
                parts[-1][1].append(line)
            number += 1
        for heading, body in parts:
            text = "\n".join(body).strip()
            if heading is not None and text:
                found.append((heading, text + "\n"))
    return found


def debian_faq_sections() -> list[tuple[str, str]]:
    """(numbered heading, answer text) for every section of the Debian FAQ."""
    with gzip.open(DEBIAN_FAQ, "rt", encoding="utf-8") as handle:
        lines = handle.read().replace("\xa0", " ").split("\n")
    start = next(i for i, line in enumerate(lines) if _DEBIAN_CHAPTER.match(line))
    parts: list[tuple[list[str] | None, list[str]]] = [(None, [])]
    number = start
    while number < len(lines):
        line = lines[number]
        match = _DEBIAN_HEADING.match(line)
        if match or _DEBIAN_CHAPTER.match(line):
            heading = [match.group(2)] if match else None
            number += 1
            # A long heading wraps onto the following lines, unindented, up to a blank line.
            while heading and number < len(lines) and lines[number].strip():
                if lines[number].startswith(" "):
                    break
                heading.append(lines[number].strip())
                number += 1
            parts.append((heading, []))
            continue
        parts[-1][1].append(line)
        number += 1
    found: list[tuple[str, str]] = []
    for heading, body in parts:
        text = "\n".join(line[4:] if line.startswith("    ") else line for line in body).strip()
        if heading is not None and len(text.split()) >= 5:
            found.append((" ".join(" ".join(heading).split()), text + "\n"))
    return found


def _write_answers(
    folder: Path,
    prefix: str,
    sections: list[tuple[str, str]],
    suffix: str,
    asks: Callable[[str], bool],
) -> list[Question]:
    """Each answer as a file of its own, without its heading; the headings that `asks`."""
    from lore.core.ingest.sources import file_uri

    folder.mkdir(parents=True, exist_ok=True)
    questions = []
    for number, (heading, answer) in enumerate(sections, 1):
        path = folder / f"{prefix}-{number:03d}{suffix}"
        path.write_text(answer, encoding="utf-8")
        if asks(heading):
            questions.append(Question(heading, file_uri(path.resolve())))
    return questions


def python_question_set(root: Path) -> QuestionSet:
    folder = root / "sources"
    # Every "-" section of the Python FAQ is one question, even when it has no question mark.
    sections = python_faq_sections()
    questions = _write_answers(
        folder / "faq-answers", "python-faq", sections, ".rst", lambda heading: True
    )
    distractors = 0
    for path in sorted(PYTHON_DOCS.rglob("*.rst.txt")):
        relative = path.relative_to(PYTHON_DOCS)
        if relative.parts[0] == "faq":
            continue
        target = folder / "docs" / relative.parent / path.name.replace(".rst.txt", ".rst")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        distractors += 1
    return QuestionSet("Python FAQ", questions, folder, distractors)


def debian_question_set(root: Path) -> QuestionSet:
    folder = root / "sources"
    # Numbered sections without a question mark ("8.1.1. dpkg") only introduce a tool.
    sections = debian_faq_sections()
    questions = _write_answers(
        folder, "debian-faq", sections, ".txt", lambda heading: "?" in heading
    )
    return QuestionSet("Debian FAQ", questions, folder, 0)


# -- the vaults ----------------------------------------------------------------------------------


def _ingestion_fingerprint() -> str:
    """Changes whenever the code that turns sources into notes changes."""
    digest = hashlib.sha256(DATASET_VERSION.encode())
    core = REPO / "src" / "lore" / "core"
    for path in sorted([*core.glob("ingest/*.py"), *core.glob("gates/*.py"), core / "notes.py"]):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def build(
    which: str, make: Callable[[Path], QuestionSet], rebuild: bool
) -> tuple[QuestionSet, Vault]:
    root = user_dirs().cache / "bench" / f"retrieval-{which}"
    stamp = root / ".bench-complete"
    fingerprint = _ingestion_fingerprint()
    if rebuild or not stamp.exists() or stamp.read_text() != fingerprint:
        from lore.core.ingest import ingest

        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        question_set = make(root)
        vault = Vault.open(init_vault(root / "vault", f"bench {which}"))
        started = time.perf_counter()
        report = ingest(vault, [str(question_set.folder)], recursive=True)
        counts, claims = report.counts(), report.claim_counts()
        print(
            f"  ingested {len(report.sources)} sources in {time.perf_counter() - started:.1f} s: "
            f"{counts}; claims {claims}"
        )
        stamp.write_text(fingerprint)
        return question_set, vault
    question_set = make(root)
    return question_set, Vault.open(root / "vault")


# -- rankings ------------------------------------------------------------------------------------


@dataclass
class Doc:
    path: str
    note_id: str
    title: str
    body: str
    source_uris: set[str]


def vault_docs(vault: Vault) -> list[Doc]:
    docs = []
    for note in vault.iter_notes():
        if note.status != "active":
            continue
        uris = {source.uri for source in note.sources}
        docs.append(Doc(note.path, note.id, note.title, note.body, uris))
    return docs


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class WhooshBaseline:
    """whoosh as a newcomer would use it: BM25F over title and body, words OR'ed."""

    def __init__(self, docs: list[Doc], folder: Path) -> None:
        schema = Schema(
            path=ID(stored=True, unique=True),
            title=TEXT(analyzer=StemmingAnalyzer()),
            body=TEXT(analyzer=StemmingAnalyzer()),
        )
        self.index = whoosh_index.create_in(str(folder), schema)
        writer = self.index.writer(limitmb=256)
        for doc in docs:
            writer.add_document(path=doc.path, title=doc.title, body=doc.body)
        writer.commit()
        self.searcher = self.index.searcher()
        self.parser = qparser.MultifieldParser(["title", "body"], schema, group=qparser.OrGroup)

    def search(self, question: str, limit: int) -> list[str]:
        words = _words(question)
        if not words:
            return []
        query = self.parser.parse(" ".join(words))
        return [hit["path"] for hit in self.searcher.search(query, limit=limit)]

    def close(self) -> None:
        self.searcher.close()


class Fts5Baseline:
    """SQLite FTS5 with the porter tokenizer, ranked by bm25(), words OR'ed."""

    def __init__(self, docs: list[Doc]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(path UNINDEXED, title, body, "
            "tokenize='porter unicode61')"
        )
        self.db.executemany(
            "INSERT INTO docs VALUES (?, ?, ?)", [(d.path, d.title, d.body) for d in docs]
        )

    def search(self, question: str, limit: int) -> list[str]:
        words = list(dict.fromkeys(_words(question)))
        if not words:
            return []
        match = " OR ".join('"' + word.replace('"', "") + '"' for word in words)
        rows = self.db.execute(
            "SELECT path FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?", (match, limit)
        )
        return [row[0] for row in rows]


@dataclass
class Scores:
    success: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    reciprocal: list[float] = field(default_factory=list)

    def add(self, ranked: list[str], relevant: set[str]) -> None:
        top = ranked[:TOP]
        hits = [position for position, path in enumerate(top, 1) if path in relevant]
        self.success.append(1.0 if hits else 0.0)
        self.recall.append(len(set(top) & relevant) / len(relevant) if relevant else 0.0)
        self.reciprocal.append(1.0 / hits[0] if hits else 0.0)

    def line(self, name: str) -> str:
        return (
            f"  {name:<28} success@{TOP} {statistics.fmean(self.success):6.1%}   "
            f"recall@{TOP} {statistics.fmean(self.recall):6.1%}   "
            f"MRR@{TOP} {statistics.fmean(self.reciprocal):.3f}"
        )


def evaluate(question_set: QuestionSet, vault: Vault) -> bool:
    docs = vault_docs(vault)
    by_path = {doc.path: doc for doc in docs}
    relevant_for = {
        question.text: {doc.path for doc in docs if question.answer_file in doc.source_uris}
        for question in question_set.questions
    }
    answerable = sum(1 for paths in relevant_for.values() if paths)
    print(
        f"{question_set.name}: {len(question_set.questions)} questions, "
        f"{len(question_set.questions) + question_set.distractors}+ sources "
        f"({question_set.distractors} distractor files) -> {len(docs):,} active notes; "
        f"{answerable} questions have their answer in some note"
    )
    with tempfile.TemporaryDirectory() as scratch:
        whoosh_baseline = WhooshBaseline(docs, Path(scratch))
        fts5 = Fts5Baseline(docs)
        engine = AskEngine(vault, OfflineProvider())
        lore_scores, whoosh_scores, fts5_scores = Scores(), Scores(), Scores()
        delivered: list[float] = []
        pack_notes: list[int] = []
        evidence_used: list[int] = []
        pack_ms: list[float] = []
        for question in question_set.questions:
            relevant = relevant_for[question.text]
            hits = vault.index.search(question.text, limit=TOP)
            lore_scores.add([hit.path for hit in hits], relevant)
            whoosh_scores.add(whoosh_baseline.search(question.text, TOP), relevant)
            fts5_scores.add(fts5.search(question.text, TOP), relevant)
            started = time.perf_counter()
            pack = engine.prepare(question.text).pack
            pack_ms.append((time.perf_counter() - started) * 1000)
            paths = {item.path for item in pack.notes()}
            delivered.append(1.0 if paths & relevant else 0.0)
            pack_notes.append(len(paths))
            evidence_used.append(pack.section("evidence").tokens)
            assert pack.total_tokens <= pack.budget
            assert all(path in by_path for path in paths)
        whoosh_baseline.close()
    print(lore_scores.line("lore search"))
    print(whoosh_scores.line("whoosh BM25F (plain)"))
    print(fts5_scores.line("SQLite FTS5 bm25()"))
    share = statistics.fmean(delivered)
    cap = vault.config.ask.evidence_tokens
    print(
        f"  {'lore pack (default budget)':<28} answer delivered {share:6.1%}   "
        f"{statistics.fmean(pack_notes):.1f} notes, "
        f"{statistics.fmean(evidence_used):.0f} of {cap} evidence tokens on average; "
        f"retrieve + pack p50 {statistics.median(pack_ms):.1f} ms"
    )
    best = max(statistics.fmean(whoosh_scores.success), statistics.fmean(fts5_scores.success))
    margin = share - best
    met = margin >= TARGET_MARGIN - 1e-9
    print(
        f"  pack vs the better baseline's top {TOP}: {margin * 100:+.1f} points "
        f"({'meets' if met else 'MISSES'} the +{TARGET_MARGIN * 100:.0f} target)"
    )
    return met


# -- ask overhead --------------------------------------------------------------------------------


def ask_overhead(asks: int) -> bool:
    """The overhead figure of bench/ask_bench.py, measured the same way."""
    import ask_bench

    if not ask_bench.DOC_SOURCES.is_dir():
        print("ask overhead: python3.11-doc is missing", file=sys.stderr)
        return False
    rng = random.Random(42)
    root = user_dirs().cache / "bench" / "ask-vault-10000"
    vault = ask_bench.build_vault(root, 10_000)
    # The defaults of today, whatever lore.yaml a vault cached by an older build holds.
    vault.config.ask = AskSettings()
    ask_bench.write_history(vault, 100_000, rng)
    asked = ask_bench.questions(vault, asks, rng)
    timings = asyncio.run(ask_bench.measure(vault, asked))
    vault.close()
    overhead = timings["overhead: retrieval + pack + answer"]
    print(f"ask overhead, offline provider: 10,000 notes, 100,000-turn history, {asks} asks")
    for name in ("retrieval", "pack", "offline answer", "overhead: retrieval + pack + answer"):
        ask_bench.report(name, timings[name])
    p50 = ask_bench.percentile(overhead, 0.5)
    met = p50 < TARGET_OVERHEAD_MS
    print(
        f"  overhead p50 {p50:.2f} ms {'meets' if met else 'MISSES'} the "
        f"{TARGET_OVERHEAD_MS:.0f} ms target"
    )
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(PACKAGES), default=None)
    parser.add_argument("--asks", type=int, default=200, help="asks for the overhead figure")
    parser.add_argument("--no-overhead", action="store_true", help="skip the ask overhead run")
    parser.add_argument("--rebuild", action="store_true", help="ingest the sources again")
    args = parser.parse_args()
    makers = {"python": python_question_set, "debian": debian_question_set}
    results = []
    for which in [args.only] if args.only else ["python", "debian"]:
        if not ensure_package(which):
            print(f"{PACKAGES[which][1]} is missing: apt-get install -y {PACKAGES[which][0]}")
            return 1
        question_set, vault = build(which, makers[which], args.rebuild)
        try:
            results.append(evaluate(question_set, vault))
        finally:
            vault.close()
    if not args.no_overhead:
        results.append(ask_overhead(args.asks))
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
