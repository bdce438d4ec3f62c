"""Gate 2, provenance: a claim must say where it came from and which version of it."""

from __future__ import annotations

import re

from lore.core.gates.types import Claim

_SHA256 = re.compile(r"[0-9a-f]{64}")


def check(claim: Claim) -> list[str]:
    """Reasons to hold the claim; empty when its provenance is complete."""
    reasons = []
    if not claim.source_uri.strip():
        reasons.append("no source URI")
    if not _SHA256.fullmatch(claim.source_sha256):
        reasons.append("no sha256 of the source")
    return reasons
