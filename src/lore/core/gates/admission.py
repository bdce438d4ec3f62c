"""The admission gates: sanitise, provenance, trust, review, similarity, in that order.

`run_gates` takes every claim of one source and returns one verdict per claim. A claim is
held by the first gate that objects. The source is judged as well as the sentence: when any
of its claims, or any of its sections read as one passage, shows intent to steer the AI
(an instruction, a tool call, a data-carrying link, a reply to steer), every claim of the
source is held with it, so no remainder of the same attack is filed as fact. A source whose
claims are mostly flagged for hidden characters or encodings is held whole too.
"""

from __future__ import annotations

from dataclasses import field

from lore.config import GateSettings
from lore.core.dataclass_lite import dataclass_own_init
from lore.core.gates import provenance, sanitise, similarity, trust
from lore.core.gates.language import unread_language
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


@dataclass_own_init
class GateContext:
    """What the gates judge the claims of an ingest against: the settings, the claims already
    filed, the reviewer and the titles of trusted notes."""

    settings: GateSettings
    index: SimilarityIndex = field(default_factory=SimilarityIndex)
    reviewer: Reviewer = field(default_factory=Reviewer)
    # casefolded title -> path, for notes whose trust is "trusted"
    trusted_titles: dict[str, str] = field(default_factory=dict)


# Sanitiser findings that show what the text wants from its reader, not only how it hides.
INTENT_FLAGS = frozenset({"instruction", "exfil-link", "frontmatter"})


def _heading_flags(section: str) -> list[Flag]:
    """What the sanitiser finds in a section's heading, which every claim under it carries.

    The flags point at no span of the claim's own text; their detail says where they were.
    """
    return [
        Flag(flag.kind, f"in the section heading: {flag.detail}", 0, 0)
        for flag in sanitise.scan(section)
    ]


@dataclass_own_init
class _Findings:
    """What the sanitiser and the review found in one source, before any verdict."""

    # Reasons the source as a whole shows intent to steer the AI, in the order found.
    intent: list[str] = field(default_factory=list)
    intent_claims: set[str] = field(default_factory=set)
    # Why the source is held whole for hidden text alone, when it is.
    hidden_source: str | None = None
    review: dict[str, list[str]] = field(default_factory=dict)
    unread: dict[str, str] = field(default_factory=dict)

    def source_reason(self, claims: int) -> str | None:
        if not self.intent:
            return self.hidden_source
        flagged = len(self.intent_claims)
        counted = f"{flagged} of {claims} claims flagged" if flagged else "whole text"
        return f"source shows hostile intent ({counted}): {self.intent[0]}"


def _sanitise(claims: list[Claim], settings: GateSettings, found: _Findings) -> None:
    headings: dict[str, list[Flag]] = {}
    for claim in claims:
        if claim.section not in headings:
            headings[claim.section] = _heading_flags(claim.section)
        claim.flags = headings[claim.section] + sanitise.scan(claim.text)
    flagged = [claim for claim in claims if claim.flags]
    for claim in flagged:
        wanted = [flag for flag in claim.flags if flag.kind in INTENT_FLAGS]
        if wanted:
            found.intent_claims.add(claim.id)
            found.intent.extend(sanitise.summarise(wanted)[:1])
    if claims and len(flagged) / len(claims) > settings.hostile_source_ratio:
        found.hidden_source = (
            f"source is hostile: {len(flagged)} of {len(claims)} claims were flagged"
        )


def _review(claims: list[Claim], reviewer: Reviewer, found: _Findings) -> None:
    # Claims the sanitiser held are read too: what they want decides the source.
    readable = [claim for claim in claims if not claim.extract_failure]
    for claim in readable:
        reasons = reviewer.claim_reasons(claim.text)
        if reasons:
            found.review[claim.id] = reasons
            found.intent_claims.add(claim.id)
            found.intent.append(reasons[0])
    found.intent.extend(reviewer.passage_reasons(claims))
    if not found.intent and found.hidden_source is None:
        # Only a source that looks clean offline is worth the model's time.
        for claim_id, reasons in reviewer.model_reasons(readable).items():
            found.review[claim_id] = reasons
            found.intent_claims.add(claim_id)
            found.intent.append(reasons[0])
    detector = reviewer.detector
    found.unread = unread_language(
        ((claim.id, claim.text) for claim in claims if claim.id not in found.review),
        detector.common_words if detector is not None else frozenset(),
    )


def run_gates(claims: list[Claim], ctx: GateContext) -> list[Verdict]:
    settings = ctx.settings
    verdicts: dict[str, Verdict] = {}
    found = _Findings()

    for claim in claims:
        if claim.extract_failure:
            verdicts[claim.id] = Verdict(claim, "hold", "extract", [claim.extract_failure])
    if settings.sanitise:
        _sanitise(claims, settings, found)
        for claim in claims:
            if claim.flags and claim.id not in verdicts:
                verdicts[claim.id] = Verdict(
                    claim, "hold", "sanitise", sanitise.summarise(claim.flags)
                )
    if settings.review:
        _review(claims, ctx.reviewer, found)
    source_reason = found.source_reason(len(claims))

    for claim in claims:
        if claim.id in verdicts:
            continue
        reasons = provenance.check(claim)
        if reasons:
            verdicts[claim.id] = Verdict(claim, "hold", "provenance", reasons)
            continue
        if settings.trust:
            reasons, path = trust.check(
                claim, ctx.index, ctx.trusted_titles, settings.subject_threshold
            )
            if reasons:
                verdicts[claim.id] = Verdict(claim, "hold", "trust", reasons, related_path=path)
                continue
        if claim.id in found.review:
            verdicts[claim.id] = Verdict(claim, "hold", "review", found.review[claim.id])
        elif claim.id in found.unread:
            verdicts[claim.id] = Verdict(claim, "hold", "review", [found.unread[claim.id]])
        elif source_reason is not None:
            gate = "review" if found.intent else "sanitise"
            verdicts[claim.id] = Verdict(claim, "hold", gate, [source_reason])

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
