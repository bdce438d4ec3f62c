"""The audit log: every admission decision, promotion and rejection, appended and never edited.

One JSON record per line in `audit.jsonl`; a torn last line is skipped by readers.
"""

from __future__ import annotations

from dataclasses import field
from datetime import UTC, date, datetime
from typing import Any

from lore.core.dataclass_lite import dataclass_own_init
from lore.core.notes import utc_now
from lore.core.storage import append_raw, encode_record, iter_records
from lore.core.vault import Vault
from lore.errors import UsageError

# The record written after each operation's commit: it names the commit, and the operation's
# other records carry the same operation id, so each of them can tell its commit too.
COMMIT_GATE = "version"


@dataclass_own_init
class AuditEntry:
    """One line of `audit.jsonl`: a decision about a claim from a source (the gate, its verdict
    and reasons), who made it and when, and the operation and commit it belongs to."""

    claim_id: str
    source: str
    gate: str
    verdict: str
    reasons: list[str] = field(default_factory=list)
    actor: str = "lore"
    time: str = field(default_factory=utc_now)
    # The operation that wrote the record, and the commit it was recorded in.
    operation: str = ""
    commit: str = ""

    def to_dict(self) -> dict[str, Any]:
        record = {
            "time": self.time,
            "claim_id": self.claim_id,
            "source": self.source,
            "gate": self.gate,
            "verdict": self.verdict,
            "reasons": list(self.reasons),
            "actor": self.actor,
        }
        if self.operation:
            record["operation"] = self.operation
        if self.commit:
            record["commit"] = self.commit
        return record

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AuditEntry:
        reasons = data.get("reasons") or []
        return cls(
            claim_id=str(data.get("claim_id", "")),
            source=str(data.get("source", "")),
            gate=str(data.get("gate", "")),
            verdict=str(data.get("verdict", "")),
            reasons=[str(reason) for reason in reasons] if isinstance(reasons, list) else [],
            actor=str(data.get("actor", "")),
            time=str(data.get("time", "")),
            operation=str(data.get("operation", "")),
            commit=str(data.get("commit", "")),
        )


def parse_since(value: str) -> str:
    """A date or date-time the user typed, as the UTC timestamp prefix the log uses."""
    text = value.strip()
    try:
        if len(text) == 10:
            return f"{date.fromisoformat(text).isoformat()}T00:00:00Z"
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--since: expected a date like 2026-01-31 (got {value!r})") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class AuditLog:
    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.path = vault.layout.audit

    def append(
        self,
        claim_id: str,
        source: str,
        gate: str,
        verdict: str,
        reasons: list[str],
        actor: str = "lore",
    ) -> AuditEntry:
        entry = AuditEntry(claim_id, source, gate, verdict, list(reasons), actor)
        self.append_many([entry])
        return entry

    def append_many(self, entries: list[AuditEntry]) -> None:
        """All entries in one write: a batch costs one fsync, and each line is whole."""
        if not entries:
            return
        operation = self.vault.versions.current()
        if operation is not None:
            for entry in entries:
                entry.operation = entry.operation or operation.id
        data = b"".join(encode_record(entry.to_dict()) for entry in entries)
        with self.vault.lock():
            append_raw(self.path, data)

    def read(self, since: str | None = None, *, commits: bool = False) -> list[AuditEntry]:
        """The entries, each with the commit of its operation once that was made; the
        records of the commits themselves only when `commits` is set."""
        start = parse_since(since) if since else None
        entries = []
        committed: dict[str, str] = {}
        for record in iter_records(self.path):
            entry = AuditEntry.from_dict(record)
            if entry.gate == COMMIT_GATE:
                committed[entry.operation] = entry.commit
                if not commits:
                    continue
            if start is None or entry.time >= start:
                entries.append(entry)
        for entry in entries:
            if not entry.commit and entry.operation:
                entry.commit = committed.get(entry.operation, "")
        return entries
