"""Gate 3, trust: an untrusted claim may not speak on a subject trusted notes already cover.

The judgement is per subject: an untrusted source can still add notes about things no trusted
note covers, and one of its claims being held does not hold the rest.
"""

from __future__ import annotations

from lore.core.gates.similarity import SimilarityIndex
from lore.core.gates.types import Claim


def check(
    claim: Claim,
    index: SimilarityIndex,
    trusted_titles: dict[str, str],
    subject_threshold: float,
) -> tuple[list[str], str | None]:
    """(reasons to hold, path of the trusted note on the same subject)."""
    if claim.trust != "untrusted":
        return [], None
    section_key = claim.section.casefold().strip()
    if section_key and section_key in trusted_titles:
        path = trusted_titles[section_key]
        return [f"untrusted source on a subject a trusted note covers ({path})"], path
    for match in index.nearest(claim.text, limit=5):
        if match.trust == "trusted" and match.word_similarity >= subject_threshold:
            return [
                f"untrusted source on a subject a trusted note covers ({match.path}, "
                f"{match.word_similarity:.0%} of words shared)"
            ], match.path
    return [], None
