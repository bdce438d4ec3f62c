"""Whether compaction is due: read back from the end of the live turns, as compaction counts."""

from __future__ import annotations

from history_helpers import configure
from lore.core import compaction
from lore.core.compaction_due import compaction_due
from lore.core.history import HistoryStore
from lore.core.turns import Turn
from lore.core.vault import Vault


def test_due_only_once_the_live_turns_pass_the_threshold_and_not_after(vault: Vault) -> None:
    configure(vault, threshold=60, keep=1, budget=10_000, fanout=4)
    history = HistoryStore(vault)
    history.append(Turn(time="x", question="short question", answer="short answer"))
    assert not compaction_due(vault)
    for n in range(6):
        history.append(Turn(time="x", question=f"question {n} " * 3, answer="an answer " * 5))
    assert compaction_due(vault)
    assert compaction.compact(vault).compacted
    assert not compaction_due(vault)


def test_an_unreadable_archive_leaves_compaction_due_so_it_can_refuse(vault: Vault) -> None:
    configure(vault, threshold=60, keep=1, budget=10_000, fanout=4)
    history = HistoryStore(vault)
    for n in range(6):
        history.append(Turn(time="x", question=f"question {n} " * 3, answer="an answer " * 5))
    vault.layout.memory.mkdir(parents=True, exist_ok=True)
    (vault.layout.memory / "memory.json").write_text('{"entries": [')
    assert compaction_due(vault)
    assert compaction_due(vault) == compaction.compaction_due(vault)
