"""Whether compaction is due: the one question every ask puts to the memory after answering.

Apart from lore.core.compaction, which plans and writes an archive, so that an ask that finds
nothing due (nearly every one) does not import the compaction machinery to learn that.
"""

from __future__ import annotations

from lore.core.compaction_scan import text_of, uncovered_record
from lore.core.memory import MemoryStore
from lore.core.tokens import estimate_tokens
from lore.core.vault import Vault


def compaction_due(vault: Vault) -> bool:
    """Whether the live turns pass the threshold, reading back from the end only that far."""
    threshold = vault.config.history.compact_threshold_tokens
    store = MemoryStore(vault)
    # An unreadable archive reads as empty, so every turn counts as live: when that is past
    # the threshold, compaction is due, and refuses, saying why.
    start, covered = store.live_start()
    total = 0
    for _, raw in store.history.iter_lines_backwards(start):
        record = uncovered_record(raw, covered)
        if record is None:
            continue
        total += estimate_tokens(text_of(record, "question")) + estimate_tokens(
            text_of(record, "answer")
        )
        if total > threshold:
            return True
    return False
