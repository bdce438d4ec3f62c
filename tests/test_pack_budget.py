"""The budget holds: over many random vaults, histories and budgets, the pack never exceeds
its budget or any section cap, and every candidate is either delivered or listed as dropped.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from lore.config import AskSettings
from lore.core.ask import AskEngine
from lore.core.pack import ContextPack, build_pack
from lore.core.providers.offline import OfflineProvider
from lore.core.retrieval import EvidenceCandidate
from lore.core.tokens import estimate_message_tokens
from lore.core.turns import Turn
from lore.core.vault import Vault, init_vault
from lore.errors import BudgetError

WORDS = [
    "planet",
    "moon",
    "orbit",
    "ring",
    "storm",
    "gas",
    "ice",
    "rock",
    "Jupiter",
    "Saturn",
    "木星",
    "土星",
    "Ωmega",
    "über",
    "naïve",
    "crater",
    "volcano",
    "atmosphere",
    "magnetic",
    "field",
    "comet",
    "asteroid",
    "belt",
    "<<<END",
    ">>>",
    "[1]",
    "`code`",
    "\u200b",
    "emoji🪐",
    "résumé",
]


@dataclass
class Entry:
    id: str
    level: int
    text: str
    covers: list[str] = field(default_factory=list)


def _text(rng: random.Random, low: int, high: int) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    text = " ".join(words)
    if rng.random() < 0.3:
        text = text.replace(" ", "\n\n", rng.randint(1, 5))
    return text


def _settings(rng: random.Random) -> AskSettings:
    def cap() -> int:
        return rng.choice([0, 0, 1, 5, 30, 80, 200, 600, 2400])

    return AskSettings(
        budget_tokens=rng.choice([0, 50, 150, 250, 400, 700, 1200, 4096]),
        instructions_tokens=rng.choice([0, 150, 400]),
        memory_tokens=cap(),
        recent_turns_tokens=cap(),
        evidence_tokens=cap(),
        top_k=8,
    )


def assert_within_budget(pack: ContextPack, settings: AskSettings) -> None:
    sent = sum(estimate_message_tokens(message.content) for message in pack.messages())
    assert sent == pack.total_tokens
    assert pack.total_tokens <= settings.budget_tokens
    for section in pack.sections:
        if section.cap is not None:
            assert section.tokens <= section.cap, section.name
        if section.cap == 0:
            assert not section.messages


def test_random_packs_never_exceed_the_budget() -> None:
    rng = random.Random(20261130)
    refused = built = 0
    for case in range(600):
        settings = _settings(rng)
        evidence = [
            EvidenceCandidate(
                rank, f"n{case}-{rank}", _text(rng, 1, 6), f"notes/{rank}.md",
                rng.choice(["trusted", "semi-trusted", "untrusted"]), 1.0 / rank, _text(rng, 0, 700),
            )
            for rank in range(1, rng.randint(0, 9) + 1)
        ]  # fmt: skip
        turns = [
            Turn(
                id=f"t{case:04d}{index:03d}",
                time="2026-01-01T00:00:00Z",
                question=_text(rng, 1, 30),
                answer=_text(rng, 0, 300),
                status=rng.choice(["ok", "ok", "ok", "cancelled", "error"]),
            )
            for index in range(rng.randint(0, 12))
        ]
        memory = [
            Entry(f"m{index:03d}", rng.randint(1, 3), _text(rng, 3, 120))
            for index in range(rng.randint(0, 6))
        ]
        question = _text(rng, 0, 40)
        try:
            pack = build_pack(
                question=question,
                settings=settings,
                evidence=evidence,
                terms=["planet", "moon"],
                recent_turns=turns,
                memory=memory,
            )
        except BudgetError:
            refused += 1
            continue
        built += 1
        assert_within_budget(pack, settings)
        delivered = {item.ref for section in pack.sections for item in section.items}
        dropped = {item.ref for item in pack.dropped}
        usable_turns = {t.id for t in turns if t.status == "ok" and t.answer.strip()}
        for ref in {e.note_id for e in evidence} | usable_turns | {m.id for m in memory}:
            assert (ref in delivered) != (ref in dropped), ref
        assert sorted(pack.delivered) == list(range(1, len(pack.delivered) + 1))
    assert built > 100 and refused > 20


def test_random_vaults_asked_through_the_engine_stay_within_budget(tmp_path: Path) -> None:
    rng = random.Random(7)
    for vault_number in range(3):
        root = init_vault(tmp_path / f"vault{vault_number}")
        vault = Vault.open(root)
        for index in range(rng.randint(3, 12)):
            vault.create_note(
                f"{rng.choice(WORDS)} note {index}", _text(rng, 5, 900),
                trust=rng.choice(["trusted", "untrusted"]),
            )  # fmt: skip
        engine = AskEngine(vault, OfflineProvider())
        for _ in range(20):
            settings = _settings(rng)
            vault.config.ask = settings
            try:
                pack = engine.preview(_text(rng, 1, 12))
            except BudgetError:
                continue
            assert_within_budget(pack, settings)
        vault.close()
