"""Ingestion from end to end: read, chunk, extract, gate, file, hold, audit, record.

Provenance makes it resumable: a source is recorded in `raw/sources.jsonl` only after all of
its notes, held claims and audit records are written. Running the same ingest again after a
crash reads the source again, finds the claims already filed (they merge as duplicates) and
finishes the job; an unchanged, recorded source does no work at all.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any, Literal

from lore.config import TrustLevel
from lore.core.audit import AuditEntry, AuditLog
from lore.core.dataclass_lite import dataclass_own_init
from lore.core.gates.admission import GateContext, run_gates
from lore.core.gates.detector import InjectionDetector, load_detector
from lore.core.gates.llm import AsyncRunner
from lore.core.gates.review import Reviewer
from lore.core.gates.types import Verdict
from lore.core.ingest.chunking import chunk
from lore.core.ingest.extract import Extractor
from lore.core.ingest.filing import Catalog, Filer
from lore.core.ingest.sources import (
    SourceDocument,
    SourceError,
    document_from_text,
    is_url,
    read_file,
    read_url,
    walk,
)
from lore.core.notes import utc_now
from lore.core.providers.base import Provider
from lore.core.quarantine import Quarantine
from lore.core.source_ledger import current_versions, ledger_path
from lore.core.storage import append_raw, encode_record
from lore.core.trust_rules import TrustRules
from lore.core.vault import Vault

Outcome = Literal["admitted", "merged", "held", "unchanged", "failed"]


@dataclass_own_init
class SourceOutcome:
    """How ingesting one source went: its outcome, how many claims were admitted, merged or
    held, the notes it touched, and why."""

    target: str
    outcome: Outcome
    uri: str = ""
    title: str = ""
    trust: str = ""
    sha256: str = ""
    admitted: int = 0
    merged: int = 0
    held: int = 0
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    held_ids: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "outcome": self.outcome,
            "uri": self.uri,
            "title": self.title,
            "trust": self.trust,
            "sha256": self.sha256,
            "admitted": self.admitted,
            "merged": self.merged,
            "held": self.held,
            "reasons": list(self.reasons),
            "notes": list(self.notes),
            "held_ids": list(self.held_ids),
            "superseded": list(self.superseded),
        }


@dataclass_own_init
class IngestReport:
    """How each source of an ingest went, whether it was a dry run, and how long it took."""

    sources: list[SourceOutcome] = field(default_factory=list)
    dry_run: bool = False
    elapsed_s: float = 0.0

    def counts(self) -> dict[str, int]:
        counted = Counter(source.outcome for source in self.sources)
        return {
            name: counted.get(name, 0)
            for name in ("admitted", "merged", "held", "unchanged", "failed")
        }

    def claim_counts(self) -> dict[str, int]:
        return {
            "admitted": sum(source.admitted for source in self.sources),
            "merged": sum(source.merged for source in self.sources),
            "held": sum(source.held for source in self.sources),
        }

    @property
    def bytes_read(self) -> int:
        return sum(source.bytes for source in self.sources)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "elapsed_s": round(self.elapsed_s, 3),
            "sources": [source.to_dict() for source in self.sources],
            "counts": self.counts(),
            "claims": self.claim_counts(),
        }


@dataclass_own_init
class IngestEvent:
    """Progress: `planned` once with the total, then `done` after each source."""

    kind: Literal["planned", "done"]
    total: int
    done: int = 0
    outcome: SourceOutcome | None = None


ProgressCallback = Callable[[IngestEvent], None]


def _plan(targets: list[str], recursive: bool) -> list[tuple[str, str | Path | None]]:
    """(label, what to read) per source; None when the target itself is unusable."""
    planned: list[tuple[str, str | Path | None]] = []
    for target in targets:
        if is_url(target):
            planned.append((target, target))
            continue
        path = Path(target).expanduser()
        if path.is_dir():
            files = walk(path, recursive)
            if not files:
                planned.append((target, None))
            planned.extend((str(file), file) for file in files)
        else:
            planned.append((target, path))
    return planned


class IngestSession:
    """Everything one ingest run shares: the catalog of notes, rules, gates and writers."""

    def __init__(
        self,
        vault: Vault,
        *,
        trust: TrustLevel | None,
        dry_run: bool,
        provider: Provider | None,
        read_url_with: Callable[[str], SourceDocument] | None = None,
    ) -> None:
        self.vault = vault
        self.trust = trust
        self.dry_run = dry_run
        config = vault.config
        self.provider = provider
        self.rules = TrustRules.load(vault.layout.trust_rules)
        self.runner = AsyncRunner()
        self.extractor = Extractor(
            max_claim_chars=config.ingest.max_claim_chars,
            provider=provider,
            runner=self.runner,
            retries=config.ingest.extract_retries,
        )
        # The catalog, the gates and the filer are made for the first source that changed:
        # a run whose sources are all unchanged reads no note and loads no gate.
        self._catalog: Catalog | None = None
        self._gates: GateContext | None = None
        self._filer: Filer | None = None
        self.quarantine = Quarantine(vault)
        self.audit = AuditLog(vault)
        self.ledger_path = ledger_path(vault)
        self.ledger = current_versions(vault)
        self._read_url = read_url_with or (lambda url: read_url(url, config.ingest))
        self._start_batch()

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            # A dry run changes the catalog without writing, so it works on a private copy.
            # Under the lock: the kept catalog is shared by every thread using this vault.
            with self.vault.lock():
                self._catalog = (
                    Catalog.build(self.vault, keep=False)
                    if self.dry_run
                    else Catalog.for_vault(self.vault)
                )
        return self._catalog

    @property
    def gates(self) -> GateContext:
        if self._gates is None:
            settings = self.vault.config
            self._gates = GateContext(
                settings=settings.gates,
                index=self.catalog.index,
                reviewer=Reviewer(
                    self.provider,
                    self.runner,
                    settings.ingest.extract_retries,
                    detector=_detector(self.vault),
                ),
                trusted_titles=self.catalog.trusted_titles,
            )
        return self._gates

    @property
    def filer(self) -> Filer:
        if self._filer is None:
            self._filer = Filer(self.vault, self.catalog)
        return self._filer

    def _start_batch(self) -> None:
        self._filer = None
        self.pending_files: list[tuple[Path, bytes]] = []
        self.pending_held: list[Verdict] = []
        self.pending_audit: list[AuditEntry] = []
        self.pending_ledger: list[dict[str, Any]] = []

    def commit(self) -> None:
        """Write what the sources since the last commit produced, in an order that keeps a
        crash harmless: notes and raw copies, held claims, audit, and last the ledger that
        marks the sources done."""
        try:
            # Raw copies are kept only for a source that was filed, which made the filer.
            if self._filer is not None:
                self._filer.flush(write=not self.dry_run, extra=self.pending_files)
            if not self.dry_run:
                self.quarantine.hold(self.pending_held)
                self.audit.append_many(self.pending_audit)
                if self.pending_ledger:
                    append_raw(
                        self.ledger_path, b"".join(encode_record(r) for r in self.pending_ledger)
                    )
        finally:
            self._start_batch()

    def close(self) -> None:
        self.runner.close()

    def read(self, what: str | Path | None) -> SourceDocument:
        if what is None:
            raise SourceError("no readable documents there (.md, .txt, .rst, .html)")
        if isinstance(what, str):
            return self._read_url(what)
        if not what.exists():
            raise SourceError("no such file or folder")
        return read_file(what, self.vault.config.ingest)

    def ingest_document(
        self, label: str, document: SourceDocument, explicit_trust: TrustLevel | None
    ) -> SourceOutcome:
        trust = explicit_trust or self.trust or self.rules.level_for(document.uri)[0]
        outcome = SourceOutcome(
            label,
            "admitted",
            document.uri,
            document.title,
            trust,
            document.sha256,
            bytes=len(document.raw),
        )
        if self.ledger.get(document.uri) == document.sha256:
            outcome.outcome = "unchanged"
            return outcome
        settings = self.vault.config.ingest
        claims = self.extractor.claims(
            document,
            chunk(document.text, document.format, document.title, settings.chunk_chars),
            trust,
        )
        if not claims:
            outcome.outcome = "failed"
            outcome.reasons = ["no text found in the document"]
            return outcome
        raw_copy = self.vault.layout.raw / document.sha256
        if not raw_copy.exists() and all(path != raw_copy for path, _ in self.pending_files):
            self.pending_files.append((raw_copy, document.raw))
        filer = self.filer
        if document.uri in self.ledger:
            outcome.superseded = filer.supersede(document.uri, document.sha256)
        verdicts = run_gates(claims, self.gates)
        notes: list[str] = []
        held: list[Verdict] = []
        for verdict in verdicts:
            if verdict.decision == "admit":
                path, joined = filer.admit(
                    verdict.claim, pinned=explicit_trust is not None or self.trust is not None
                )
                if joined:
                    outcome.merged += 1
                else:
                    outcome.admitted += 1
                notes.append(path)
            elif verdict.decision == "merge" and verdict.related_path:
                notes.append(filer.merge(verdict.claim, verdict.related_path))
                outcome.merged += 1
            else:
                held.append(verdict)
        outcome.held = len(held)
        outcome.held_ids = [verdict.claim.id for verdict in held]
        outcome.notes = sorted(set(notes))
        outcome.reasons = _held_reasons(held)
        if outcome.admitted:
            outcome.outcome = "admitted"
        elif outcome.merged:
            outcome.outcome = "merged"
        else:
            outcome.outcome = "held"
        self.pending_held.extend(held)
        self.pending_audit.extend(
            AuditEntry(
                verdict.claim.id,
                document.uri,
                verdict.gate,
                {"admit": "admitted", "merge": "merged", "hold": "held"}[verdict.decision],
                verdict.reasons,
                "lore",
            )
            for verdict in verdicts
        )
        self.pending_ledger.append(
            {
                "uri": document.uri,
                "sha256": document.sha256,
                "title": document.title,
                "trust": trust,
                "time": utc_now(),
                "admitted": outcome.admitted,
                "merged": outcome.merged,
                "held": outcome.held,
            }
        )
        self.ledger[document.uri] = document.sha256
        return outcome


def _detector(vault: Vault) -> InjectionDetector | None:
    settings = vault.config.gates
    if not (settings.review and settings.detector):
        return None
    if settings.detector_model is None:
        return load_detector()
    return load_detector(vault.root / Path(settings.detector_model).expanduser())


def _held_reasons(held: list[Verdict]) -> list[str]:
    by_gate: dict[str, list[str]] = {}
    for verdict in held:
        by_gate.setdefault(verdict.gate, []).extend(verdict.reasons[:1])
    reasons = []
    for gate, found in by_gate.items():
        first = found[0] if found else ""
        more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
        reasons.append(f"{gate}: {first}{more}")
    return reasons


def ingest(
    vault: Vault,
    targets: list[str],
    *,
    trust: TrustLevel | None = None,
    recursive: bool = False,
    dry_run: bool = False,
    provider: Provider | None = None,
    progress: ProgressCallback | None = None,
    read_url_with: Callable[[str], SourceDocument] | None = None,
) -> IngestReport:
    """Read every target (file, folder or URL) through the gates into the vault."""
    started = time.perf_counter()
    report = IngestReport(dry_run=dry_run)
    planned = _plan(targets, recursive)
    if progress:
        progress(IngestEvent("planned", len(planned)))
    if not dry_run:
        vault.ensure_writable()
    session = IngestSession(
        vault, trust=trust, dry_run=dry_run, provider=provider, read_url_with=read_url_with
    )

    def one(label: str, what: str | Path | None, document: SourceDocument | None) -> None:
        try:
            if document is None:
                document = session.read(what)
            outcome = session.ingest_document(label, document, None)
        except SourceError as exc:
            outcome = SourceOutcome(label, "failed", reasons=[exc.reason])
        report.sources.append(outcome)
        if progress:
            progress(IngestEvent("done", len(planned), len(report.sources), outcome))

    # One commit for the whole run; the lock is still taken a batch at a time.
    recording = contextlib.nullcontext() if dry_run else vault.operation("ingest", hold_lock=False)
    with recording:
        completed = False
        try:
            for group in _batches(planned):
                prefetched: SourceDocument | None = None
                if len(group) == 1 and isinstance(group[0][1], str):
                    # A URL is fetched before the lock is taken: other Lore processes need not
                    # wait for a slow server.
                    try:
                        prefetched = session.read(group[0][1])
                    except SourceError as exc:
                        one_failed = SourceOutcome(group[0][0], "failed", reasons=[exc.reason])
                        report.sources.append(one_failed)
                        if progress:
                            progress(
                                IngestEvent("done", len(planned), len(report.sources), one_failed)
                            )
                        continue
                # Local files are read, gated and filed a batch at a time under the lock, and
                # written together: one sync per batch instead of several per source.
                with vault.lock():
                    for label, what in group:
                        one(label, what, prefetched)
                    session.commit()
            completed = True
        finally:
            describe_run(vault, report)
            session.close()
            if not completed:
                Catalog.forget(vault)
            if not dry_run:
                vault.reconcile()
    report.elapsed_s = time.perf_counter() - started
    return report


BATCH_SOURCES = 25
BATCH_BYTES = 4_000_000


def _batches(
    planned: list[tuple[str, str | Path | None]],
) -> list[list[tuple[str, str | Path | None]]]:
    """Consecutive local files up to a count and size; each URL on its own."""
    groups: list[list[tuple[str, str | Path | None]]] = []
    current: list[tuple[str, str | Path | None]] = []
    size = 0
    for item in planned:
        what = item[1]
        if isinstance(what, str):
            if current:
                groups.append(current)
                current, size = [], 0
            groups.append([item])
            continue
        try:
            size += what.stat().st_size if what is not None else 0
        except OSError:
            pass
        current.append(item)
        if len(current) >= BATCH_SOURCES or size >= BATCH_BYTES:
            groups.append(current)
            current, size = [], 0
    if current:
        groups.append(current)
    return groups


def ingest_text(
    vault: Vault,
    text: str,
    *,
    uri: str,
    title: str,
    trust: TrustLevel,
    provider: Provider | None = None,
    dry_run: bool = False,
) -> IngestReport:
    """File text that is not a file (a saved answer, a pasted snippet) through the gates."""
    started = time.perf_counter()
    report = IngestReport(dry_run=dry_run)
    if not dry_run:
        vault.ensure_writable()
    with vault.lock() if dry_run else vault.operation("ingest"):
        session = IngestSession(vault, trust=None, dry_run=dry_run, provider=provider)
        try:
            try:
                document = document_from_text(text, uri, title)
                report.sources.append(session.ingest_document(uri, document, trust))
                session.commit()
            except SourceError as exc:
                report.sources.append(SourceOutcome(uri, "failed", uri=uri, reasons=[exc.reason]))
        except BaseException:
            Catalog.forget(vault)
            raise
        finally:
            session.close()
            if not dry_run:
                vault.reconcile()
            describe_run(vault, report)
    report.elapsed_s = time.perf_counter() - started
    return report


def describe_run(vault: Vault, report: IngestReport) -> None:
    """What the run's commit message says: how many sources, what became of their claims."""
    operation = vault.versions.current()
    if operation is None or operation.name != "ingest" or not report.sources:
        return
    claims = ", ".join(
        f"{count} {'claim' if count == 1 else 'claims'} {name}"
        for name, count in report.claim_counts().items()
        if count
    )
    if not claims:
        claims = ", ".join(f"{count} {name}" for name, count in report.counts().items() if count)
    first = report.sources[0]
    label = first.title or first.uri or first.target
    what = label if len(report.sources) == 1 else f"{len(report.sources)} sources"
    operation.describe(
        f"{what} ({claims})",
        [f"{source.outcome}: {source.uri or source.target}" for source in report.sources],
    )
