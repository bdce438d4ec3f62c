"""The memory status line agrees with compaction, and stays cheap on a long history."""

from __future__ import annotations

import json

from lore.core.compaction import compact
from lore.core.memory_status import memory_status
from lore.core.turns import Turn
from lore.core.vault import Vault


def _write(vault: Vault, count: int, start: int = 0) -> None:
    with open(vault.layout.history, "a", encoding="utf-8") as handle:
        for n in range(start, start + count):
            turn = Turn(
                id=f"t{n:011d}",
                time="2026-11-30T10:00:00Z",
                question=f"How far is planet number {n} from its star?",
                answer=f"Planet {n} orbits at about {n} astronomical units [1].",
            )
            handle.write(json.dumps(turn.to_record()) + "\n")


def test_an_empty_vault_has_nothing_live_and_no_memory(vault: Vault) -> None:
    status = memory_status(vault)
    assert (status.live_turns, status.live_tokens, status.levels) == (0, 0, {})
    assert not status.compaction_due
    assert status.describe().startswith("live 0 turns, 0 / 6,000 tokens · memory empty")


def test_one_live_turn_is_one_turn(vault: Vault) -> None:
    _write(vault, 1)
    assert memory_status(vault).describe().startswith("live 1 turn, ")


def test_live_figures_match_what_compaction_counts(vault: Vault) -> None:
    _write(vault, 12)
    status = memory_status(vault)
    plan = compact(vault, dry_run=True)
    assert status.live_turns == plan.live_turns_before == 12
    assert status.live_tokens == plan.live_tokens_before
    assert not status.live_over_threshold


def test_after_compaction_levels_and_watermark_are_shown(vault: Vault) -> None:
    vault.config.history.compact_threshold_tokens = 200
    vault.config.history.keep_recent_turns = 3
    _write(vault, 20)
    report = compact(vault)
    status = memory_status(vault)
    assert status.watermark == report.watermark_after == "t00000000016"
    assert status.live_turns == 3
    assert sum(level.entries for level in status.levels.values()) == sum(report.levels.values())
    assert status.frontier_tokens == report.memory_tokens_after
    assert "watermark t00000000016" in status.describe()


def test_a_long_uncompacted_history_stops_counting_past_the_threshold(vault: Vault) -> None:
    vault.config.history.compact_threshold_tokens = 500
    _write(vault, 5_000)
    status = memory_status(vault)
    assert status.compaction_due and status.live_over_threshold
    # Only enough turns to pass the threshold were read, not all 5,000.
    assert status.live_turns < 50
    assert "(compaction due)" in status.describe() and "+ turns" in status.describe()


def test_a_torn_last_line_is_not_counted(vault: Vault) -> None:
    _write(vault, 2)
    with open(vault.layout.history, "a", encoding="utf-8") as handle:
        handle.write('{"id": "t99", "question": "half writ')
    assert memory_status(vault).live_turns == 2
