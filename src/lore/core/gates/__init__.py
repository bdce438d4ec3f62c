"""The admission gates: sanitise, provenance, trust, review, similarity, in that order.

`lore.core.gates.admission.run_gates` runs them over every claim of one source. The names
below are imported on first use, so a module that needs only the claim types (the
quarantine, say) does not load and compile every gate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lore.core.lazy_names import lazy_names

if TYPE_CHECKING:
    from lore.core.gates.admission import GateContext, run_gates
    from lore.core.gates.similarity import SimilarityIndex
    from lore.core.gates.types import Claim, Verdict

_HOME_OF = {
    "GateContext": "lore.core.gates.admission",
    "run_gates": "lore.core.gates.admission",
    "SimilarityIndex": "lore.core.gates.similarity",
    "Claim": "lore.core.gates.types",
    "Verdict": "lore.core.gates.types",
}


__getattr__ = lazy_names(globals(), _HOME_OF)


__all__ = ["Claim", "GateContext", "SimilarityIndex", "Verdict", "run_gates"]
