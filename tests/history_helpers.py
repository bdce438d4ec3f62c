"""Shared by the history and compaction tests: random turns and the no-turn-lost check."""

from __future__ import annotations

import random
from collections import Counter

from lore.core.history import HistoryStore
from lore.core.memory import MemoryStore
from lore.core.storage import encode_record
from lore.core.turns import Turn
from lore.core.vault import Vault

WORDS = [
    "mars",
    "jupiter",
    "saturn",
    "venus",
    "mercury",
    "moon",
    "orbit",
    "ring",
    "storm",
    "crater",
    "volcano",
    "ice",
    "dust",
    "atmosphere",
    "pressure",
    "gravity",
    "probe",
    "lander",
    "rover",
    "telescope",
    "comet",
    "asteroid",
    "belt",
]


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def random_turn(rng: random.Random, number: int) -> Turn:
    status = rng.choices(["ok", "cancelled", "error"], weights=[8, 1, 1])[0]
    return Turn(
        id=f"t{number:011x}{rng.randrange(16**6):06x}",
        time="2026-01-01T00:00:00Z",
        question=sentence(rng, rng.randint(3, 20)).rstrip(".") + "?",
        answer=" ".join(sentence(rng, rng.randint(4, 25)) for _ in range(rng.randint(0, 6))),
        status=status,
    )


def bulk_append(vault: Vault, turns: list[Turn]) -> None:
    """Many turns in one write: the records are what `HistoryStore.append` writes, unsynced."""
    with open(vault.layout.history, "ab") as handle:
        handle.write(b"".join(encode_record(turn.to_record()) for turn in turns))


def configure(vault: Vault, threshold: int, keep: int, budget: int, fanout: int) -> None:
    settings = vault.config.history
    settings.compact_threshold_tokens = threshold
    settings.keep_recent_turns = keep
    settings.memory_budget_tokens = budget
    settings.memory_fanout = fanout


def assert_every_turn_accounted_for(vault: Vault) -> None:
    """Each turn is live or covered by exactly one level-1 entry; each entry at most once above."""
    store = MemoryStore(vault)
    assert store.problem is None
    all_ids = [turn.id for turn in HistoryStore(vault).iter_turns()]
    live = {turn.id for turn in store.live_turns()}
    levels = store.levels()
    entries = {entry.id: entry for entry in store.entries()}
    level_one = Counter(turn_id for entry in levels.get(1, []) for turn_id in entry.covers)
    for turn_id in all_ids:
        covered = level_one[turn_id]
        assert (turn_id in live) + covered == 1, turn_id
    assert set(level_one) <= set(all_ids)
    for level, items in levels.items():
        if level == 1:
            continue
        children = Counter(child for entry in items for child in entry.covers)
        assert all(count == 1 for count in children.values())
        assert all(entries[child].level == level - 1 for child in children)
    # The frontier stands for the whole compacted past, once.
    from_frontier: Counter[str] = Counter()

    def expand(entry_id: str) -> None:
        entry = entries[entry_id]
        if entry.level == 1:
            from_frontier.update(entry.covers)
        else:
            for child in entry.covers:
                expand(child)

    for entry in store.frontier():
        expand(entry.id)
    assert from_frontier == level_one
