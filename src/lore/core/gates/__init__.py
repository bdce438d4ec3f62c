"""The admission gates: sanitise, provenance, trust, review, similarity, in that order.

`run_gates` takes every claim of one source and returns one verdict per claim. A claim is
held by the first gate that objects. The source is judged as well as the sentence: when any
of its claims, or any of its sections read as one passage, shows intent to steer the AI
(an instruction, a tool call, a data-carrying link, a reply to steer), every claim of the
source is held with it, so no remainder of the same attack is filed as fact. A source whose
claims are mostly flagged for hidden characters or encodings is held whole too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lore.config import GateSettings
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


@dataclass
class GateContext:
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


def run_gates(claims: list[Claim], ctx: GateContext) -> list[Verdict]:
    settings = ctx.settings
    verdicts: dict[str, Verdict] = {}
    # Reasons the source as a whole shows hostile intent, in the order they were found.
    intent: list[str] = []
    intent_claims = 0

    for claim in claims:
        if claim.extract_failure:
            verdicts[claim.id] = Verdict(claim, "hold", "extract", [claim.extract_failure])

    hidden_source: str | None = None
    if settings.sanitise:
        headings: dict[str, list[Flag]] = {}
        for claim in claims:
            if claim.section not in headings:
                headings[claim.section] = _heading_flags(claim.section)
            claim.flags = headings[claim.section] + sanitise.scan(claim.text)
        flagged = [claim for claim in claims if claim.flags]
        for claim in flagged:
            if any(flag.kind in INTENT_FLAGS for flag in claim.flags):
                intent_claims += 1
                shown = [flag for flag in claim.flags if flag.kind in INTENT_FLAGS]
                intent.extend(sanitise.summarise(shown)[:1])
        if claims and len(flagged) / len(claims) > settings.hostile_source_ratio:
            hidden_source = (
                f"source is hostile: {len(flagged)} of {len(claims)} claims were flagged"
            )
        for claim in flagged:
            if claim.id not in verdicts:
                verdicts[claim.id] = Verdict(
                    claim, "hold", "sanitise", sanitise.summarise(claim.flags)
                )

    review: dict[str, list[str]] = {}
    if settings.review:
        # Claims the sanitiser held are read too: what they want decides the source.
        readable = [claim for claim in claims if not claim.extract_failure]
        review = {
            claim.id: reasons
            for claim in readable
            if (reasons := ctx.reviewer.claim_reasons(claim.text))
        }
        intent_claims += sum(1 for claim in readable if claim.id in review and not claim.flags)
        intent.extend(reasons[0] for reasons in review.values())
        intent.extend(ctx.reviewer.passage_reasons(claims))
        if not intent and hidden_source is None:
            # Only a source that looks clean offline is worth the model's time.
            review.update(ctx.reviewer.model_reasons([c for c in readable if not c.flags]))
            intent_claims += len(review)
            intent.extend(reasons[0] for reasons in review.values())

    unread: dict[str, str] = {}
    if settings.review:
        detector = ctx.reviewer.detector
        unread = unread_language(
            ((claim.id, claim.text) for claim in claims if claim.id not in review),
            detector.common_words if detector is not None else frozenset(),
        )

    source_reason = hidden_source
    if intent:
        counted = (
            f"{intent_claims} of {len(claims)} claims flagged" if intent_claims else "whole text"
        )
        source_reason = f"source shows hostile intent ({counted}): {intent[0]}"

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
        if claim.id in review:
            verdicts[claim.id] = Verdict(claim, "hold", "review", review[claim.id])
        elif claim.id in unread:
            verdicts[claim.id] = Verdict(claim, "hold", "review", [unread[claim.id]])
        elif source_reason is not None:
            gate = "review" if intent else "sanitise"
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
