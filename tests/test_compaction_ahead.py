"""Summaries made ahead, by the process that read their turns, are the very ones compaction
would make itself: the archive is byte for byte the one a single process writes, round after
round, whether or not each process guessed right where its turns stand."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from history_helpers import assert_every_turn_accounted_for, bulk_append, configure, random_turn
from lore.core import compaction, compaction_scan
from lore.core.compaction import _SummariesAhead, compact
from lore.core.compaction_scan import LiveTurn
from lore.core.vault import Vault


@pytest.fixture(autouse=True)
def same_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both archives are written at the same time, so their files can be compared whole."""
    monkeypatch.setattr(compaction, "utc_now", lambda: "2026-01-01T00:00:00Z")


def _append(vault: Vault, first: int, count: int, garbage: bool = False) -> None:
    rng = random.Random(first)
    turns = [random_turn(rng, number) for number in range(first, first + count)]
    bulk_append(vault, turns[: count // 3])
    if garbage:
        # Lines that are not turns: the second process's guess of where it stands is wrong.
        with open(vault.layout.history, "ab") as handle:
            handle.write(b"not json at all\n[1, 2]\n")
    bulk_append(vault, turns[count // 3 :])


def _archive(vault: Vault) -> bytes:
    return (vault.layout.memory / "memory.json").read_bytes()


@pytest.mark.parametrize(
    ("fanout", "keep", "garbage"), [(4, 5, False), (3, 0, False), (4, 2, True)]
)
def test_two_processes_working_ahead_write_the_archive_one_writes(
    vault: Vault,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fanout: int,
    keep: int,
    garbage: bool,
) -> None:
    copy = Vault.open(Path(shutil.copytree(vault.root, tmp_path / "copy")))
    absorbed: list[tuple[int, int]] = []
    absorb = _SummariesAhead.absorb

    def counted(self: _SummariesAhead, prepared: object) -> None:
        absorb(self, prepared)
        assert isinstance(prepared, tuple)
        absorbed.append((len(prepared[0]), len(prepared[1])))

    try:
        for one in (vault, copy):
            configure(one, threshold=300, keep=keep, budget=200, fanout=fanout)
        # Rounds of new turns after an archive, so merges start after entries already in it.
        for round_, count in enumerate((130, 97, 151)):
            _append(vault, 1000 * round_, count, garbage)
            _append(copy, 1000 * round_, count, garbage)
            alone = compact(vault)
            with monkeypatch.context() as forking:
                forking.setattr(compaction_scan, "TWO_PROCESS_BYTES", 0)
                forking.setattr(compaction_scan, "_can_fork", lambda: True)
                forking.setattr(_SummariesAhead, "absorb", counted)
                both = compact(copy)
            assert both.compacted and alone.compacted
            assert both.to_dict() == alone.to_dict()
            assert _archive(copy) == _archive(vault)
            assert_every_turn_accounted_for(copy)
        # Each process made summaries of turns and of entries, and the first kept them.
        assert len(absorbed) == 6
        assert all(turns and entries for turns, entries in absorbed)
    finally:
        copy.close()


def test_only_the_summaries_compaction_asks_for_are_made_ahead() -> None:
    # Turns 10 to 39 of a history whose newest 3 stay live, 4 to an entry, after one entry
    # already at level 1. Entries cover turns 12-15, 16-19, ... 32-35 (36-39 would cover
    # turns that stay live), and each turn 5 apart is cancelled, so not summarised. A merge
    # takes the archive's entry and new entries 0 to 2, then new entries 3 to 6 (turns 12
    # to 27), 7 to 10 (only 7 and 8 are made here).
    turns: list[LiveTurn] = [
        (f"t{number:03d}", number % 5 != 0, 10, number, f"Q{number}? → fact {number}")
        for number in range(10, 40)
    ]
    ahead = _SummariesAhead(max_tokens=80, fanout=4, keep=3, frontier={1: 1})
    of_turns, of_entries = ahead.prepare(turns, 10, True)
    firsts = [int(key[0].split("?")[0][1:]) for key in of_turns]
    assert firsts == [12, 16, 21, 24, 28, 32]
    assert list(of_entries) == [tuple(text for text, _ in list(of_turns.values())[:4])]
    # Not running to the end of the history, every whole entry's turns are covered.
    assert len(ahead.prepare(turns, 10, False)[0]) == 7
    # What the other process sends is kept only when it is what `prepare` makes.
    ahead.absorb(({("a",): ("b", 1)}, {("c",): 2}))
    ahead.absorb("nonsense")
    assert ahead.of_turns == {("a",): ("b", 1)} and ahead.of_entries == {}


def test_merges_of_entries_from_several_stretches_are_made_ahead_at_every_level() -> None:
    # Two entries to a merge, none in the archive: a stretch of three entries is merged as
    # one pair (0, 1), the third waiting for the next stretch, whose entries 3 to 7 complete
    # the pairs (2, 3) to (6, 7), then (0, 1) and (2, 3) at level 2, and the top pair above.
    turns: list[LiveTurn] = [
        (f"t{number:03d}", True, 10, number, f"Q{number}? → fact {number}") for number in range(16)
    ]
    ahead = _SummariesAhead(max_tokens=80, fanout=2, keep=0, frontier={})
    _, first = ahead.prepare(turns[:6], 0, False)
    _, second = ahead.prepare(turns[6:], 6, True)
    assert len(first) == 1 and len(second) == 3 + 2 + 1
    levels = ahead.made
    assert [len(levels[level]) for level in sorted(levels)] == [8, 4, 2, 1]
    # A merge at level 2 takes the pair the first stretch made and the first the second did.
    assert (levels[2][0], levels[2][1]) in second
    for texts, text in second.items():
        assert text == compaction.roll_up(list(texts), 80)


@pytest.mark.parametrize("existing", [0, 1])
def test_two_processes_leave_compaction_few_merges_of_its_own(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, existing: int
) -> None:
    configure(vault, threshold=300, keep=2, budget=60, fanout=4)
    if existing:
        _append(vault, 0, 60)
        compact(vault)
    _append(vault, 1000, 900)
    planning = False
    made_by_compaction = 0
    plan_roll_up = compaction._Planner.roll_up
    roll_up = compaction.roll_up

    def planned(self: compaction._Planner, budget: int) -> None:
        nonlocal planning
        planning = True
        plan_roll_up(self, budget)

    def counted(texts: list[str], max_tokens: int) -> str:
        nonlocal made_by_compaction
        made_by_compaction += planning
        return roll_up(texts, max_tokens)

    monkeypatch.setattr(compaction_scan, "TWO_PROCESS_BYTES", 0)
    monkeypatch.setattr(compaction_scan, "_can_fork", lambda: True)
    monkeypatch.setattr(compaction._Planner, "roll_up", planned)
    monkeypatch.setattr(compaction, "roll_up", counted)
    report = compact(vault)
    merges = sum(count for level, count in report.levels.items() if level > 1)
    # Of the merges at every level, only those across the processes' parts and chunks.
    assert merges > 60
    assert made_by_compaction < merges // 8
    assert_every_turn_accounted_for(vault)


_DIGESTS = ("Q1 → A1", "Q2 → A2")


@pytest.mark.parametrize(
    ("of_turns", "of_entries", "taken"),
    [
        ({_DIGESTS: ("- Q1 → A1\n- Q2 → A2", 12)}, {("one", "two"): "one two"}, (1, 1)),
        ({}, {}, (0, 0)),
        ({_DIGESTS: ("text", 12), ("Q3",): ("text", "12")}, {}, (0, 0)),
        ({_DIGESTS: ("text", 12), ("Q3",): ("text", 12, 1)}, {}, (0, 0)),
        ({_DIGESTS: ("text", 12), ("Q3",): ["text", 12]}, {}, (0, 0)),
        ({_DIGESTS: ("text", 12), ("Q3", 3): ("text", 12)}, {}, (0, 0)),
        ({_DIGESTS: ("text", 12), "Q3": ("text", 12)}, {}, (0, 0)),
        ({_DIGESTS: ("text", True)}, {}, (0, 0)),
        ({}, {("one", "two"): "one two", ("three",): None}, (0, 0)),
        ({}, {("one", "two"): "one two", ("three", None): "three"}, (0, 0)),
        ({_DIGESTS: ("text", 12)}, [("one", "two")], (1, 0)),
    ],
)
def test_summaries_sent_by_the_other_process_are_taken_only_whole_and_well_formed(
    of_turns: object, of_entries: object, taken: tuple[int, int]
) -> None:
    ahead = _SummariesAhead(max_tokens=60, fanout=2, keep=0, frontier={})
    ahead.absorb((of_turns, of_entries))
    assert (len(ahead.of_turns), len(ahead.of_entries)) == taken
