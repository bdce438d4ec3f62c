"""Asking past the history threshold compacts older turns into memory, losing none."""

from __future__ import annotations

from lore.core.ask import AskEngine, AskFinished, MemoryCompacted
from lore.core.history import HistoryStore
from lore.core.memory import MemoryStore
from lore.core.vault import Vault

QUESTIONS = [
    "How large is Jupiter?",
    "What is the Great Red Spot?",
    "Which moon of Saturn has a thick atmosphere?",
    "What did Voyager 1 discover?",
    "Where is the Kuiper belt?",
    "What heats the interior of Io?",
    "How long is a year on Mars?",
    "What is an astronomical unit?",
    "Why is Venus so hot?",
    "What are the rings of Saturn made of?",
]


async def _ask(engine: AskEngine, question: str) -> list[object]:
    return [event async for event in engine.ask(question)]


async def test_asks_past_the_threshold_compact_and_keep_every_turn(sample_vault: Vault) -> None:
    sample_vault.config.history.compact_threshold_tokens = 300
    sample_vault.config.history.keep_recent_turns = 2
    engine = AskEngine(sample_vault)
    compactions = []
    for question in QUESTIONS:
        events = await _ask(engine, question)
        assert any(isinstance(event, AskFinished) for event in events)
        compactions += [event for event in events if isinstance(event, MemoryCompacted)]

    assert compactions, "the live history passed its threshold but nothing was compacted"
    memory = MemoryStore(sample_vault)
    covered = [turn_id for entry in memory.levels().get(1, []) for turn_id in entry.covers]
    live = [turn.id for turn in memory.live_turns()]
    every_turn = [turn.id for turn in HistoryStore(sample_vault).iter_turns()]
    assert len(every_turn) == len(QUESTIONS)
    assert sorted(covered + live) == sorted(every_turn)
    assert len(covered) == len(set(covered))
    # The next ask sends the memory: the pack has a memory section that is not empty.
    pack = engine.preview("And what about Neptune?")
    memory_section = next(section for section in pack.sections if section.name == "memory")
    assert memory_section.tokens > 0


async def test_no_compaction_below_the_threshold(sample_vault: Vault) -> None:
    engine = AskEngine(sample_vault)
    events = await _ask(engine, "How large is Jupiter?")
    assert not any(isinstance(event, MemoryCompacted) for event in events)
    assert MemoryStore(sample_vault).watermark is None


async def test_a_fact_from_a_compacted_turn_reaches_a_later_pack(sample_vault: Vault) -> None:
    sample_vault.config.history.compact_threshold_tokens = 300
    sample_vault.config.history.keep_recent_turns = 2
    engine = AskEngine(sample_vault)
    first = [event for event in await _ask(engine, "How many moons does Saturn have?")]
    answer = next(event for event in first if isinstance(event, AskFinished)).turn
    assert "274" in answer.answer
    for question in QUESTIONS:
        await _ask(engine, question)
    memory = MemoryStore(sample_vault)
    assert answer.id not in {turn.id for turn in memory.live_turns()}
    [entry] = [e for e in memory.levels()[1] if answer.id in e.covers]
    # The summary keeps the turn's facts: the number, the name, the note it cited.
    assert "274" in entry.text and "Saturn" in entry.text
    assert "(notes: Saturn" in entry.text
    # A new conversation, much later, still gets them in its pack's memory.
    later = AskEngine(sample_vault).preview("Remind me how many moons Saturn has")
    memory_text = later.section("memory").messages[0].content
    assert "274" in memory_text
    assert not later.section("recent_turns").items


async def test_compaction_after_an_answer_never_borrows_the_answers_client(
    sample_vault: Vault,
) -> None:
    from scripted_provider import ScriptedReplies

    sample_vault.config.history.compact_threshold_tokens = 100
    sample_vault.config.history.keep_recent_turns = 2
    answering = ScriptedReplies(["Jupiter is large [1]."] * len(QUESTIONS))
    engine = AskEngine(sample_vault, answering)
    compacted = 0
    for question in QUESTIONS:
        events = await _ask(engine, question)
        compacted += sum(isinstance(event, MemoryCompacted) for event in events)
    assert compacted
    # Every request the answering provider saw was an answer, none a summary.
    assert len(answering.requests) == len(QUESTIONS)
