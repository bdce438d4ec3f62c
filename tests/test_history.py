"""The history keeps every turn, survives torn and garbage lines, and pages without full reads."""

from __future__ import annotations

import threading

import pytest

from history_helpers import bulk_append
from lore.core.history import HistoryStore, TurnNotFound, iter_lines_backwards
from lore.core.storage import encode_record
from lore.core.turns import Turn
from lore.core.vault import Vault
from lore.errors import UsageError, VaultError


def make_turn(number: int, question: str | None = None, answer: str | None = None, **extra) -> Turn:
    return Turn(
        id=f"t{number:011x}aaaaaa",
        time="2026-01-01T00:00:00Z",
        question=question if question is not None else f"question {number}",
        answer=answer if answer is not None else f"answer {number}",
        **extra,
    )


def fill(store: HistoryStore, count: int) -> list[Turn]:
    return [store.append(make_turn(number)) for number in range(count)]


def test_appended_turns_come_back_whole(vault: Vault) -> None:
    store = HistoryStore(vault)
    turn = make_turn(1, "What orbits Mars?", "Phobos and Deimos [1].", cited=["mars"])
    store.append(turn)
    [loaded] = list(store.iter_turns())
    assert loaded == turn
    assert store.get(turn.id) == turn


def test_one_line_per_turn(vault: Vault) -> None:
    store = HistoryStore(vault)
    fill(store, 3)
    store.append(make_turn(9, "multi\nline\nquestion", 'answer with "quotes"\nand lines'))
    lines = vault.layout.history.read_bytes().splitlines()
    assert len(lines) == 4
    assert store.tail(1)[0].question == "multi\nline\nquestion"


def test_tail_returns_the_newest_turns_oldest_first(vault: Vault) -> None:
    store = HistoryStore(vault)
    fill(store, 30)
    assert [t.question for t in store.tail(3)] == ["question 27", "question 28", "question 29"]
    assert len(store.tail(100)) == 30
    assert store.tail(0) == []
    assert store.last() is not None and store.last().question == "question 29"


def test_empty_history_reads_as_empty(vault: Vault) -> None:
    store = HistoryStore(vault)
    assert store.tail(5) == []
    assert store.count() == 0
    assert store.read_range(0, 10) == []
    assert store.search("anything") == []
    assert store.last() is None


def test_garbage_and_torn_lines_are_skipped(vault: Vault) -> None:
    store = HistoryStore(vault)
    fill(store, 3)
    with open(vault.layout.history, "ab") as handle:
        handle.write(b"not json at all\n[1, 2]\n\xff\xfe binary\n")
    store.append(make_turn(3))
    with open(vault.layout.history, "ab") as handle:
        handle.write(b'{"id": "t-torn", "question": "half a li')
    assert [t.question for t in store.iter_turns()] == [f"question {n}" for n in range(4)]
    assert [t.question for t in store.tail(10)] == [f"question {n}" for n in range(4)]
    assert store.count() == 4
    # The next write is not swallowed by the torn line before it.
    store.append(make_turn(4))
    assert store.tail(1)[0].question == "question 4"
    assert store.count() == 5


def test_a_line_nested_deeper_than_json_decodes_is_skipped_everywhere(
    vault: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    # The standard decoder gives up on such a line with RecursionError, not ValueError: it
    # used to stop `lore history`, `lore ask` and `lore compact` with an internal error.
    from lore.cli import main
    from lore.core.compaction import compact
    from lore.core.memory_status import memory_status

    store = HistoryStore(vault)
    fill(store, 2)
    deep = b'{"v": 1, "id": "t-deep", "question": "q", "answer": "a", "x": '
    with open(vault.layout.history, "ab") as handle:
        handle.write(deep + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
    store.append(make_turn(2))
    assert [t.question for t in store.iter_turns()] == [f"question {n}" for n in range(3)]
    assert [t.question for t in store.tail(10)] == [f"question {n}" for n in range(3)]
    assert memory_status(vault).live_turns == 3
    vault.config.history.compact_threshold_tokens = 1
    vault.config.history.keep_recent_turns = 0
    report = compact(vault)
    assert report.compacted and report.turns_covered == 3
    assert main(["--vault", str(vault.root), "history", "--json"]) == 0
    assert "t-deep" not in capsys.readouterr().out


def test_read_range_pages_like_a_slice(vault: Vault) -> None:
    store = HistoryStore(vault)
    fill(store, 25)
    assert store.count() == 25
    assert [t.question for t in store.read_range(0, 3)] == [
        "question 0",
        "question 1",
        "question 2",
    ]
    assert [t.question for t in store.read_range(-2, 25)] == ["question 23", "question 24"]
    assert [t.question for t in store.read_range(20, 999)] == [
        f"question {n}" for n in range(20, 25)
    ]
    assert store.read_range(30, 40) == []


def test_the_offset_index_follows_appends_from_another_process(vault: Vault) -> None:
    first = HistoryStore(vault)
    fill(first, 5)
    assert first.count() == 5
    # Another process (another store) appends; the first store sees the new turns.
    other = HistoryStore(Vault.open(vault.root))
    other.append(make_turn(5))
    assert first.count() == 6
    assert first.read_range(5, 6)[0].question == "question 5"


def test_a_rewritten_history_rebuilds_the_index(vault: Vault) -> None:
    store = HistoryStore(vault)
    fill(store, 10)
    assert store.count() == 10
    # A person trims the file by hand: the saved offsets no longer fit it.
    lines = vault.layout.history.read_bytes().splitlines(keepends=True)
    vault.layout.history.write_bytes(b"".join(lines[4:]))
    fresh = HistoryStore(vault)
    assert fresh.count() == 6
    assert fresh.read_range(0, 1)[0].question == "question 4"
    assert store.count() == 6


def test_a_saved_index_is_reused_and_checked(vault: Vault) -> None:
    store = HistoryStore(vault)
    fill(store, 300)
    assert store.count() == 300
    index_file = vault.layout.state / "history.idx"
    assert index_file.exists()
    # A torn index file (an interrupted save) is repaired, not trusted.
    with open(index_file, "ab") as handle:
        handle.write(b"\x01\x02\x03")
    again = HistoryStore(vault)
    assert again.count() == 300
    assert again.read_range(299, 300)[0].question == "question 299"


def test_search_finds_every_word_newest_first(vault: Vault) -> None:
    store = HistoryStore(vault)
    store.append(make_turn(1, "How big is Jupiter?", "Jupiter is the largest planet."))
    store.append(make_turn(2, "What about Saturn?", "Saturn has rings."))
    store.append(make_turn(3, "Jupiter moons?", "Ganymede is the LARGEST moon."))
    assert [t.id for t in store.search("jupiter")] == [make_turn(3).id, make_turn(1).id]
    assert [t.id for t in store.search("largest JUPITER")] == [make_turn(3).id, make_turn(1).id]
    assert [t.id for t in store.search("jupiter", limit=1)] == [make_turn(3).id]
    assert store.search("rings jupiter") == []
    assert store.search("   ") == []


def test_search_reads_text_not_record_fields(vault: Vault) -> None:
    store = HistoryStore(vault)
    store.append(make_turn(1, "plain", "text", model="llama3"))
    assert store.search("llama3") == []
    assert store.search("status") == []


def test_search_handles_escaped_and_non_ascii_text(vault: Vault) -> None:
    store = HistoryStore(vault)
    store.append(make_turn(1, 'Was ist "Größe"?', "Die Größe von Ünus.\nZweite Zeile."))
    assert len(store.search('"größe"')) == 1
    assert len(store.search("ÜNUS zeile")) == 1


def test_search_spans_many_blocks(vault: Vault) -> None:
    store = HistoryStore(vault)
    filler = "word " * 400
    for number in range(400):
        text = "needle here" if number in (3, 250) else filler
        store.append(make_turn(number, f"q{number}", text))
    assert [t.question for t in store.search("needle")] == ["q250", "q3"]


def test_get_by_unique_prefix_and_clear_errors(vault: Vault) -> None:
    store = HistoryStore(vault)
    a = store.append(Turn(id="tabc111", time="x", question="a"))
    store.append(Turn(id="tabc222", time="x", question="b"))
    assert store.get("tabc1") == a
    with pytest.raises(UsageError, match="2 turns start with"):
        store.get("tabc")
    with pytest.raises(TurnNotFound, match="no turn with id"):
        store.get("tzzz")
    with pytest.raises(UsageError):
        store.get("  ")


def test_a_turn_id_quoted_in_an_answer_is_not_mistaken_for_it(vault: Vault) -> None:
    store = HistoryStore(vault)
    target = store.append(Turn(id="tq1", time="x", question="first"))
    store.append(Turn(id="tq2", time="x", question="second", answer="see turn tq1"))
    assert store.get("tq1") == target


def test_lines_backwards_across_block_boundaries(tmp_path) -> None:
    path = tmp_path / "lines.jsonl"
    lines = [f"line {n} " + "x" * (n * 997 % 5000) for n in range(300)]
    path.write_text("\n".join(lines) + "\n")
    backwards = [line.decode().rstrip("\n") for _, line in iter_lines_backwards(path)]
    assert backwards == list(reversed(lines))
    data = path.read_bytes()
    for offset, line in iter_lines_backwards(path):
        assert data[offset : offset + len(line)] == line


def test_concurrent_appends_from_threads_lose_nothing(vault: Vault) -> None:
    store = HistoryStore(vault)

    def worker(base: int) -> None:
        for number in range(base, base + 25):
            store.append(make_turn(number))

    threads = [threading.Thread(target=worker, args=(base,)) for base in (0, 100, 200, 300)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.count() == 100
    assert len({t.id for t in store.iter_turns()}) == 100


def test_an_unreadable_history_is_one_clear_error(vault: Vault) -> None:
    vault.layout.history.mkdir()
    store = HistoryStore(vault)
    with pytest.raises(VaultError, match="cannot read"):
        store.search("anything")
    with pytest.raises(VaultError, match="cannot read"):
        store.get("t1")


def test_get_finds_turns_recorded_out_of_id_order(vault: Vault) -> None:
    store = HistoryStore(vault)
    # Two processes finishing asks in the other order write ids out of order.
    numbers = list(range(300))
    numbers[10], numbers[11] = numbers[11], numbers[10]
    numbers[150:160] = reversed(numbers[150:160])
    with open(vault.layout.history, "ab") as handle:
        for number in numbers:
            handle.write(encode_record(make_turn(number).to_record()))
    assert store.count() == 300
    assert (vault.layout.state / "history.idx").exists()
    for number in (0, 10, 11, 150, 155, 159, 299):
        assert store.get(make_turn(number).id).question == f"question {number}"


def test_two_processes_appending_keep_one_consistent_index(vault: Vault) -> None:
    first = HistoryStore(vault)
    fill(first, 300)
    assert first.count() == 300  # the index is saved
    second = HistoryStore(Vault.open(vault.root))
    assert second.count() == 300
    for number in range(300, 340):
        (first if number % 3 else second).append(make_turn(number))
    index_file = vault.layout.state / "history.idx"
    assert index_file.stat().st_size == 340 * 24
    fresh = HistoryStore(Vault.open(vault.root))
    assert fresh.count() == 340
    assert [t.question for t in fresh.read_range(295, 340)] == [
        f"question {n}" for n in range(295, 340)
    ]


def test_a_cancelled_search_stops_reading(vault: Vault) -> None:
    store = HistoryStore(vault)
    filler = "word " * 100
    bulk_append(vault, [make_turn(n, f"question {n} about moons", filler) for n in range(3000)])
    asked = 0

    def cancelled() -> bool:
        nonlocal asked
        asked += 1
        return asked > 2

    found = list(store.iter_search("moons", cancelled=cancelled))
    everything = list(store.iter_search("moons"))
    assert 0 < len(found) < len(everything) == 3000
