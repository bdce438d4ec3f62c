"""The admission gates: sanitise, provenance, trust, review, similarity, in that order.

`run_gates` takes every claim of one source and returns one verdict per claim. A claim is
held by the first gate that objects; a source whose claims are mostly flagged by the
sanitiser is hostile, and then all of its claims are held.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lore.config import GateSettings
from lore.core.gates import provenance, sanitise, similarity, trust
from lore.core.gates.review import Reviewer
from lore.core.gates.similarity import SimilarityIndex
from lore.core.gates.types import TRUST_RANK, Claim, Decision, Flag, Verdict, claim_id

__all__ = [
    "TRUST_RANK",
    "Claim",
    "Decision",
    "Flag",
    "GateContext",
    "SimilarityIndex",
    "Verdict",
    "claim_id",
    "run_gates",
]


@dataclass
class GateContext:
    settings: GateSettings
    index: SimilarityIndex = field(default_factory=SimilarityIndex)
    reviewer: Reviewer = field(default_factory=Reviewer)
    # casefolded title -> path, for notes whose trust is "trusted"
    trusted_titles: dict[str, str] = field(default_factory=dict)


def run_gates(claims: list[Claim], ctx: GateContext) -> list[Verdict]:
    settings = ctx.settings
    verdicts: dict[str, Verdict] = {}

    for claim in claims:
        if claim.extract_failure:
            verdicts[claim.id] = Verdict(claim, "hold", "extract", [claim.extract_failure])

    if settings.sanitise:
        for claim in claims:
            claim.flags = sanitise.scan(claim.text)
        flagged = [claim for claim in claims if claim.flags]
        hostile = bool(claims) and len(flagged) / len(claims) > settings.hostile_source_ratio
        for claim in claims:
            if claim.id in verdicts:
                continue
            if claim.flags:
                verdicts[claim.id] = Verdict(
                    claim, "hold", "sanitise", sanitise.summarise(claim.flags)
                )
            elif hostile:
                verdicts[claim.id] = Verdict(
                    claim,
                    "hold",
                    "sanitise",
                    [f"source is hostile: {len(flagged)} of {len(claims)} claims were flagged"],
                )

    for claim in claims:
        if claim.id in verdicts:
            continue
        reasons = provenance.check(claim)
        if reasons:
            verdicts[claim.id] = Verdict(claim, "hold", "provenance", reasons)
        elif settings.trust:
            reasons, path = trust.check(
                claim, ctx.index, ctx.trusted_titles, settings.subject_threshold
            )
            if reasons:
                verdicts[claim.id] = Verdict(claim, "hold", "trust", reasons, related_path=path)

    if settings.review:
        pending = [claim for claim in claims if claim.id not in verdicts]
        for held_id, reasons in ctx.reviewer.review(pending, sanitised=settings.sanitise).items():
            claim = next(claim for claim in pending if claim.id == held_id)
            verdicts[held_id] = Verdict(claim, "hold", "review", reasons)

    for claim in claims:
        if claim.id in verdicts:
            continue
        if settings.similarity:
            outcome = similarity.check(
                claim, ctx.index, settings.duplicate_threshold, settings.contradiction_threshold
            )
            if outcome.decision != "admit":
                match = outcome.match
                verdicts[claim.id] = Verdict(
                    claim,
                    "merge" if outcome.decision == "merge" else "hold",
                    "similarity",
                    outcome.reasons,
                    related_path=match.path if match else None,
                    related_text=match.text if match else None,
                )
                continue
        verdicts[claim.id] = Verdict(claim, "admit", "admitted", [])

    return [verdicts[claim.id] for claim in claims]
