"""Random histories against a plain list: every read path agrees with what was written.

Appends (through the store and in bulk, as another process would), garbage and torn lines,
fresh stores (a new process) and hand edits are mixed at random; after each step the tail,
the paged reads, the count, search and get must all agree with the list of turns written.
"""

from __future__ import annotations

import random

import pytest

from lore.core.history import HistoryStore
from lore.core.storage import encode_record
from lore.core.turns import Turn
from lore.core.vault import Vault

PIECES = [
    "Mars",
    "moon",
    "Größe",
    "月",
    "🙂",
    "orbit",
    "\n",
    '"quoted"',
    "back\\slash",
    "tab\t",
    "x" * 300,
]


def random_turn(rng: random.Random, number: int) -> Turn:
    def text(words: int) -> str:
        return " ".join(rng.choice(PIECES) for _ in range(words))

    return Turn(
        id=f"t{number:011x}{rng.randrange(16**6):06x}",
        time="2026-01-01T00:00:00Z",
        question=text(rng.randint(1, 12)),
        answer=text(rng.randint(0, 80)),
        status=rng.choice(["ok", "ok", "ok", "cancelled", "error"]),
    )


def check(store: HistoryStore, written: list[Turn], rng: random.Random) -> None:
    assert store.count() == len(written)
    assert store.tail(7) == written[-7:]
    if written:
        start = rng.randrange(len(written))
        stop = start + rng.randint(1, 60)
        assert store.read_range(start, stop) == written[start:stop]
        assert store.read_range(-5, len(written)) == written[-5:]
        pick = rng.choice(written)
        assert store.get(pick.id) == pick
    word = rng.choice(["mars", "GRÖSSE", "月", '"quoted"', "orbit moon"])
    expected = [
        turn
        for turn in reversed(written)
        if all(
            term in f"{turn.question}\n{turn.resolved_question}\n{turn.answer}".casefold()
            for term in word.casefold().split()
        )
    ][:10]
    assert store.search(word, limit=10) == expected


@pytest.mark.parametrize("seed", range(3))
def test_every_read_agrees_with_what_was_written(vault: Vault, seed: int) -> None:
    rng = random.Random(seed)
    store = HistoryStore(vault)
    written: list[Turn] = []
    path = vault.layout.history
    for _ in range(40):
        action = rng.random()
        if action < 0.35:
            for _ in range(rng.randint(1, 3)):
                written.append(store.append(random_turn(rng, len(written))))
        elif action < 0.6:
            batch = [random_turn(rng, len(written) + n) for n in range(rng.randint(1, 400))]
            with open(path, "ab") as handle:
                handle.write(b"".join(encode_record(turn.to_record()) for turn in batch))
            written.extend(batch)
        elif action < 0.7:
            with open(path, "ab") as handle:
                handle.write(rng.choice([b"garbage\n", b"\n\n", b"[1,2]\n", b"\xff\xfe\n"]))
        elif action < 0.8:
            # A torn write from a crash; the next append must not be swallowed by it.
            with open(path, "ab") as handle:
                handle.write(b'{"id": "torn", "question": "cut sh')
            written.append(store.append(random_turn(rng, len(written))))
        elif action < 0.9:
            store = HistoryStore(Vault.open(vault.root))
        elif path.exists():
            # A person deletes the oldest turns by hand.
            keep = rng.randint(0, len(written))
            lines = path.read_bytes().splitlines(keepends=True)
            survivors = {turn.id for turn in written[len(written) - keep :]}
            path.write_bytes(
                b"".join(line for line in lines if any(i.encode() in line for i in survivors))
            )
            written = written[len(written) - keep :]
        check(store, written, rng)
