"""The values that move through the gates: a claim, what was found in it, and the verdict."""

from __future__ import annotations

import hashlib
from dataclasses import field
from typing import Any, Literal

from lore.config import TrustLevel
from lore.core.dataclass_lite import dataclass_own_init

Decision = Literal["admit", "merge", "hold"]
TRUST_RANK: dict[str, int] = {"untrusted": 0, "semi-trusted": 1, "trusted": 2}


@dataclass_own_init(frozen=True)
class Flag:
    """Something suspicious at `text[start:end]` of a claim."""

    kind: str
    detail: str
    start: int
    end: int

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "detail": self.detail, "start": self.start, "end": self.end}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Flag:
        return cls(
            kind=str(data.get("kind", "")),
            detail=str(data.get("detail", "")),
            start=int(data.get("start", 0)),
            end=int(data.get("end", 0)),
        )


def claim_id(uri: str, sha256: str, section: str, text: str) -> str:
    """Stable across runs, so re-ingesting after a crash finds the same claims again."""
    digest = hashlib.sha1(f"{uri}\0{sha256}\0{section}\0{text}".encode()).hexdigest()
    return f"c{digest[:14]}"


@dataclass_own_init
class Claim:
    """A short statement from one section of one source."""

    id: str
    text: str
    section: str
    source_uri: str
    source_sha256: str
    source_title: str
    trust: TrustLevel
    flags: list[Flag] = field(default_factory=list)
    # Set when the claim could not be extracted safely: it is held by the extract step.
    extract_failure: str | None = None

    @classmethod
    def make(
        cls,
        text: str,
        *,
        section: str,
        uri: str,
        sha256: str,
        title: str,
        trust: TrustLevel,
    ) -> Claim:
        return cls(
            id=claim_id(uri, sha256, section, text),
            text=text,
            section=section,
            source_uri=uri,
            source_sha256=sha256,
            source_title=title,
            trust=trust,
        )


@dataclass_own_init
class Verdict:
    """What the gates decided for one claim; `gate` names the gate that decided."""

    claim: Claim
    decision: Decision
    gate: str
    reasons: list[str] = field(default_factory=list)
    related_path: str | None = None
    related_text: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim_id": self.claim.id,
            "decision": self.decision,
            "gate": self.gate,
            "reasons": list(self.reasons),
            "related_path": self.related_path,
        }
