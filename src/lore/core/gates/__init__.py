"""The admission gates: sanitise, provenance, trust, review, similarity, in that order.

`lore.core.gates.admission.run_gates` runs them over every claim of one source. The names
below are imported on first use, so a module that needs only the claim types (the
quarantine, say) does not load and compile every gate.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = ["Claim", "GateContext", "SimilarityIndex", "Verdict", "run_gates"]
