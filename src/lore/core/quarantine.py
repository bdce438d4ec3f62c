"""The quarantine: held claims waiting for a person, as Markdown files under `quarantine/`.

Each held claim is one file whose front matter carries everything needed to judge it: the
text, its source, trust, the gate that held it, the reasons and flags, and the note it may
duplicate or contradict. Promotion files the claim into a note; rejection moves the file to
`quarantine/rejected/` as a tombstone. Every action is recorded in `actions.jsonl` with what
it changed, so `undo` can put things back, and in the audit log with who and when.
"""

from __future__ import annotations

import builtins
import secrets
from dataclasses import field
from pathlib import Path
from typing import Any

import yaml

from lore.config import TrustLevel
from lore.core.audit import AuditEntry, AuditLog
from lore.core.dataclass_lite import dataclass_own_init
from lore.core.display_text import is_hidden_char as is_hidden_char  # the faces read it here
from lore.core.display_text import strip_hidden, visible
from lore.core.gates.types import Claim, Flag, Verdict
from lore.core.notes import split_front_matter, utc_now
from lore.core.source_ledger import current_versions
from lore.core.storage import append_record, atomic_write_many, atomic_write_text, iter_records
from lore.core.vault import Vault
from lore.errors import QuarantineError


def make_visible(text: str) -> str:
    """Hidden characters spelled out, e.g. ⟦U+200B ZWSP⟧, so a reviewer sees them."""
    return visible(text, multiline=True)


@dataclass_own_init
class HeldClaim:
    """A claim in the quarantine as its file holds it: its text and source, the gate that held
    it and why, the note it may duplicate or contradict, and whether it was rejected."""

    id: str
    text: str
    section: str
    source_uri: str
    source_title: str
    source_sha256: str
    trust: TrustLevel
    gate: str
    reasons: list[str]
    flags: list[Flag] = field(default_factory=list)
    held_at: str = ""
    related_path: str | None = None
    related_text: str | None = None
    status: str = "held"
    rejected_at: str | None = None
    rejected_by: str | None = None
    rejected_reason: str | None = None

    def visible_text(self) -> str:
        return make_visible(self.text)

    def to_claim(self, *, text: str | None = None, trust: TrustLevel | None = None) -> Claim:
        return Claim(
            id=self.id,
            text=text if text is not None else self.text,
            section=self.section,
            source_uri=self.source_uri,
            source_sha256=self.source_sha256,
            source_title=self.source_title,
            trust=trust or self.trust,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "section": self.section,
            "source": {
                "uri": self.source_uri,
                "title": self.source_title,
                "sha256": self.source_sha256,
            },
            "trust": self.trust,
            "gate": self.gate,
            "reasons": list(self.reasons),
            "flags": [flag.to_dict() for flag in self.flags],
            "held_at": self.held_at,
            "related": {"path": self.related_path, "text": self.related_text}
            if self.related_path
            else None,
            "status": self.status,
            "rejected_at": self.rejected_at,
            "rejected_by": self.rejected_by,
            "rejected_reason": self.rejected_reason,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HeldClaim:
        source = data.get("source") or {}
        related = data.get("related") or {}
        trust = data.get("trust")
        return cls(
            id=str(data["id"]),
            text=str(data.get("text", "")),
            section=str(data.get("section", "")),
            source_uri=str(source.get("uri", "")),
            source_title=str(source.get("title", "")),
            source_sha256=str(source.get("sha256", "")),
            trust=trust if trust in ("trusted", "semi-trusted", "untrusted") else "untrusted",
            gate=str(data.get("gate", "")),
            reasons=[str(reason) for reason in data.get("reasons") or []],
            flags=[
                Flag.from_dict(flag) for flag in data.get("flags") or [] if isinstance(flag, dict)
            ],
            held_at=str(data.get("held_at", "")),
            related_path=related.get("path") if isinstance(related, dict) else None,
            related_text=related.get("text") if isinstance(related, dict) else None,
            status=str(data.get("status", "held")),
            rejected_at=data.get("rejected_at"),
            rejected_by=data.get("rejected_by"),
            rejected_reason=data.get("rejected_reason"),
        )

    @classmethod
    def from_verdict(cls, verdict: Verdict) -> HeldClaim:
        claim = verdict.claim
        return cls(
            id=claim.id,
            text=claim.text,
            section=claim.section,
            source_uri=claim.source_uri,
            source_title=claim.source_title,
            source_sha256=claim.source_sha256,
            trust=claim.trust,
            gate=verdict.gate,
            reasons=list(verdict.reasons),
            flags=list(claim.flags),
            held_at=utc_now(),
            related_path=verdict.related_path,
            related_text=verdict.related_text,
        )


def render_held(held: HeldClaim) -> str:
    front = yaml.safe_dump(held.to_dict(), sort_keys=False, allow_unicode=True, width=100)
    lines = [
        f"# Held claim {held.id}",
        "",
        held.visible_text(),
        "",
        f"Held by the {held.gate} gate:",
    ]
    lines += [f"- {reason}" for reason in held.reasons]
    return f"---\n{front}---\n" + "\n".join(lines) + "\n"


def parse_held(text: str) -> HeldClaim | None:
    front, _, _ = split_front_matter(text)
    if not front:
        return None
    try:
        data = yaml.safe_load(front)
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict) or not data.get("id"):
        return None
    return HeldClaim.from_dict(data)


@dataclass_own_init
class Promotion:
    """What a promotion wrote, and how many hidden characters it left out of the notes."""

    notes: list[str]
    hidden_removed: int = 0

    def hidden_note(self) -> str:
        """`removed 3 hidden characters`, or nothing when none were."""
        count = self.hidden_removed
        return f"removed {count} hidden character{'s' if count != 1 else ''}" if count else ""


def _removed_reason(count: int) -> list[str]:
    return [Promotion([], count).hidden_note()] if count else []


OUTDATED_NOTICE = (
    "From an older version of its source: the source has been read again since, and the notes "
    "made from this version are superseded."
)


class Quarantine:
    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.folder = vault.layout.quarantine
        self.rejected_folder = self.folder / "rejected"
        self.actions_path = self.folder / "actions.jsonl"
        self.audit = AuditLog(vault)

    # -- reading ---------------------------------------------------------------------------

    def _path(self, claim_id: str) -> Path:
        return self.folder / f"{claim_id}.md"

    def _tombstone(self, claim_id: str) -> Path:
        return self.rejected_folder / f"{claim_id}.md"

    @staticmethod
    def _read(path: Path) -> HeldClaim | None:
        try:
            return parse_held(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            return None

    def list(self) -> builtins.list[HeldClaim]:
        if not self.folder.is_dir():
            return []
        found = [self._read(path) for path in sorted(self.folder.glob("*.md"))]
        held = [claim for claim in found if claim is not None]
        # Grouped by source, sources in the order they were first held: a hostile source's
        # claims are judged together.
        first_held: dict[str, str] = {}
        for claim in held:
            known = first_held.get(claim.source_uri)
            if known is None or claim.held_at < known:
                first_held[claim.source_uri] = claim.held_at
        held.sort(
            key=lambda claim: (
                first_held[claim.source_uri],
                claim.source_uri,
                claim.held_at,
                claim.id,
            )
        )
        return held

    def rejected(self) -> builtins.list[HeldClaim]:
        if not self.rejected_folder.is_dir():
            return []
        found = [self._read(path) for path in sorted(self.rejected_folder.glob("*.md"))]
        return [claim for claim in found if claim is not None]

    def outdated(self, held: builtins.list[HeldClaim]) -> set[str]:
        """Ids of the claims that came from a version of their source since read again.

        The notes made from that version are superseded; a claim held from it still waits
        here, and whoever judges it should know its source has changed.
        """
        versions = current_versions(self.vault)
        return {
            claim.id
            for claim in held
            if claim.source_sha256
            and versions.get(claim.source_uri, claim.source_sha256) != claim.source_sha256
        }

    def count(self) -> int:
        return len(list(self.folder.glob("*.md"))) if self.folder.is_dir() else 0

    def get(self, claim_id: str) -> HeldClaim:
        claim_id = claim_id.strip()
        path = self._path(claim_id)
        if not claim_id or "/" in claim_id or not path.is_file():
            matches = (
                [held for held in self.list() if held.id.startswith(claim_id)] if claim_id else []
            )
            if len(matches) == 1:
                return matches[0]
            if len(matches) > 1:
                raise QuarantineError(
                    f"{len(matches)} held claims start with {claim_id!r}; give more of the id"
                )
            if claim_id and self._tombstone(claim_id).is_file():
                raise QuarantineError(
                    f"claim {claim_id} was rejected (undo with: lore quarantine undo)"
                )
            raise QuarantineError(f"no held claim {claim_id!r} (see: lore quarantine list)")
        held = self._read(path)
        if held is None:
            raise QuarantineError(f"{path} is not a readable held claim")
        return held

    def for_source(self, uri: str) -> builtins.list[HeldClaim]:
        held = [claim for claim in self.list() if claim.source_uri == uri]
        if not held:
            raise QuarantineError(f"no held claims from {uri}")
        return held

    # -- holding (used by ingestion) -------------------------------------------------------

    def hold(self, verdicts: builtins.list[Verdict]) -> builtins.list[str]:
        """Write a file per held claim; claims a person already rejected stay rejected."""
        written = []
        files = []
        with self.vault.lock():
            for verdict in verdicts:
                if self._tombstone(verdict.claim.id).exists():
                    continue
                text = render_held(HeldClaim.from_verdict(verdict))
                files.append((self._path(verdict.claim.id), text.encode("utf-8")))
                written.append(verdict.claim.id)
            if files:
                atomic_write_many(files)
        return written

    # -- decisions ---------------------------------------------------------------------------

    def promote(
        self,
        claim_id: str,
        *,
        trust: TrustLevel | None = None,
        text: str | None = None,
        actor: str = "user",
    ) -> builtins.list[str]:
        """File the claim into a note; returns the note paths written."""
        return self.promote_and_report(claim_id, trust=trust, text=text, actor=actor).notes

    def promote_source(
        self, uri: str, *, trust: TrustLevel | None = None, actor: str = "user"
    ) -> builtins.list[str]:
        return self.promote_source_and_report(uri, trust=trust, actor=actor).notes

    def promote_and_report(
        self,
        claim_id: str,
        *,
        trust: TrustLevel | None = None,
        text: str | None = None,
        actor: str = "user",
    ) -> Promotion:
        """As `promote`, also saying how many hidden characters were left out of the note."""
        with self.vault.operation("promote", actor=actor, summary=f"claim {claim_id}"):
            return self._promote([self.get(claim_id)], trust=trust, text=text, actor=actor)

    def promote_source_and_report(
        self, uri: str, *, trust: TrustLevel | None = None, actor: str = "user"
    ) -> Promotion:
        with self.vault.operation("promote", actor=actor, summary=f"the claims held from {uri}"):
            return self._promote(self.for_source(uri), trust=trust, text=None, actor=actor)

    def _promote(
        self,
        held: builtins.list[HeldClaim],
        *,
        trust: TrustLevel | None,
        text: str | None,
        actor: str,
    ) -> Promotion:
        from lore.core.ingest.filing import Catalog, Filer

        self.vault.ensure_writable()
        if text is not None and not text.strip():
            raise QuarantineError("the edited text is empty; nothing was promoted")
        filer = Filer(self.vault, Catalog.build(self.vault))
        # A person promotes what they saw: the hidden characters, spelled out for them in
        # the review, do not go into the note.
        removed: dict[str, int] = {}
        for claim in held:
            filed, removed[claim.id] = strip_hidden(text if text is not None else claim.text)
            if not filed.strip():
                raise QuarantineError(
                    f"claim {claim.id} has nothing but hidden characters; nothing was promoted"
                )
            filer.admit(claim.to_claim(text=filed, trust=trust), pinned=trust is not None)
        changes = filer.flush()
        files = {claim.id: self._path(claim.id).read_text(encoding="utf-8") for claim in held}
        self._record(
            "promote",
            actor,
            held_files=files,
            notes=[{"path": change.path, "before": change.before} for change in changes],
        )
        for claim in held:
            self._path(claim.id).unlink(missing_ok=True)
        reasons = [f"trust set to {trust}"] if trust else []
        if text is not None:
            reasons.append("text edited before promotion")
        self.audit.append_many(
            [
                AuditEntry(
                    claim.id,
                    claim.source_uri,
                    "quarantine",
                    "promoted",
                    reasons + _removed_reason(removed[claim.id]),
                    actor,
                )
                for claim in held
            ]
        )
        self.vault.reconcile()
        return Promotion([change.path for change in changes], sum(removed.values()))

    def reject(self, claim_id: str, *, reason: str = "", actor: str = "user") -> HeldClaim:
        with self.vault.operation("reject", actor=actor, summary=f"claim {claim_id}"):
            return self._reject([self.get(claim_id)], reason=reason, actor=actor)[0]

    def reject_source(
        self, uri: str, *, reason: str = "", actor: str = "user"
    ) -> builtins.list[HeldClaim]:
        with self.vault.operation("reject", actor=actor, summary=f"the claims held from {uri}"):
            return self._reject(self.for_source(uri), reason=reason, actor=actor)

    def _reject(
        self, held: builtins.list[HeldClaim], *, reason: str, actor: str
    ) -> builtins.list[HeldClaim]:
        self.vault.ensure_writable()
        files = {claim.id: self._path(claim.id).read_text(encoding="utf-8") for claim in held}
        self._record("reject", actor, held_files=files, notes=[])
        now = utc_now()
        for claim in held:
            claim.status = "rejected"
            claim.rejected_at, claim.rejected_by, claim.rejected_reason = now, actor, reason
            atomic_write_text(self._tombstone(claim.id), render_held(claim))
            self._path(claim.id).unlink(missing_ok=True)
        self.audit.append_many(
            [
                AuditEntry(
                    claim.id,
                    claim.source_uri,
                    "quarantine",
                    "rejected",
                    [reason] if reason else [],
                    actor,
                )
                for claim in held
            ]
        )
        return held

    # -- undo --------------------------------------------------------------------------------

    def _record(
        self,
        action: str,
        actor: str,
        *,
        held_files: dict[str, str],
        notes: builtins.list[dict[str, Any]],
    ) -> None:
        append_record(
            self.actions_path,
            {
                "action_id": secrets.token_hex(6),
                "action": action,
                "actor": actor,
                "time": utc_now(),
                "held_files": held_files,
                "notes": notes,
            },
        )

    def _last_action(self) -> dict[str, Any] | None:
        undone: set[str] = set()
        actions: builtins.list[dict[str, Any]] = []
        for record in iter_records(self.actions_path):
            if record.get("action") == "undo":
                undone.add(str(record.get("undoes")))
            else:
                actions.append(record)
        for record in reversed(actions):
            if str(record.get("action_id")) not in undone:
                return record
        return None

    def undo(self, actor: str = "user") -> dict[str, Any]:
        """Reverse the last promotion or rejection not yet undone; returns what was undone."""
        with self.vault.operation("undo", actor=actor) as operation:
            self.vault.ensure_writable()
            action = self._last_action()
            if action is None:
                raise QuarantineError("nothing to undo")
            operation.describe(f"the last {action.get('action')}")
            for note in action.get("notes") or []:
                path = self.vault.resolve_inside(str(note["path"]))
                if note.get("before") is None:
                    path.unlink(missing_ok=True)
                else:
                    atomic_write_text(path, str(note["before"]))
            held_files: dict[str, str] = action.get("held_files") or {}
            for claim_id, text in held_files.items():
                atomic_write_text(self._path(claim_id), text)
                self._tombstone(claim_id).unlink(missing_ok=True)
            append_record(
                self.actions_path,
                {
                    "action": "undo",
                    "undoes": action.get("action_id"),
                    "actor": actor,
                    "time": utc_now(),
                },
            )
            self.audit.append_many(
                [
                    AuditEntry(
                        claim_id, "", "quarantine", f"undo-{action.get('action')}", [], actor
                    )
                    for claim_id in held_files
                ]
            )
            self.vault.reconcile()
            return {
                "undone": action.get("action"),
                "claims": sorted(held_files),
                "notes": [note["path"] for note in action.get("notes") or []],
            }
