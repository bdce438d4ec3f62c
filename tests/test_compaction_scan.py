"""A long backlog is read in two processes, and the turns and digests are the very ones one
process makes, whatever happens to the second process."""

from __future__ import annotations

import json
import os
import pickle
import random
import shutil
import threading
import time
from pathlib import Path

import pytest

from history_helpers import assert_every_turn_accounted_for, bulk_append, configure, random_turn
from lore.core import compaction_scan
from lore.core.compaction import _FactDigester, compact
from lore.core.compaction_scan import LiveTurn, read_live
from lore.core.history import HistoryStore
from lore.core.memory import MemoryStore
from lore.core.vault import Vault


def _write_history(vault: Vault, count: int, seed: int = 3, cite: list[str] | None = None) -> None:
    rng = random.Random(seed)
    turns = [random_turn(rng, number) for number in range(count)]
    for turn in turns:
        turn.cited = rng.sample(cite, min(len(cite), rng.randint(0, 3))) if cite else []
    half = count // 2
    bulk_append(vault, turns[:half])
    with open(vault.layout.history, "ab") as handle:
        handle.write(b"not json at all\n[1, 2]\n")
    bulk_append(vault, turns[half:])
    with open(vault.layout.history, "ab") as handle:
        handle.write(b'{"v": 1, "id": "torn')


def _read(vault: Vault, *, two: bool) -> list[LiveTurn]:
    """Every live turn with its digest, as one process or two read them."""
    digester = _FactDigester(vault, 23)
    return read_live(
        HistoryStore(vault), 0, None, digester, 0, digester.look_up_all if two else None
    )


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any history is read in two processes, whatever the machine and its threads."""
    monkeypatch.setattr(compaction_scan, "TWO_PROCESS_BYTES", 0)
    monkeypatch.setattr(compaction_scan, "_can_fork", lambda: True)


@pytest.mark.usefixtures("forking")
def test_two_processes_read_the_same_turns_and_digests_as_one(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_history(vault, 240)
    alone = _read(vault, two=False)
    assert len(alone) == 240 and any(digest for *_, digest in alone)
    sent: list[list[LiveTurn]] = []
    received = compaction_scan._received

    def spy(*args: object) -> list[bytes] | None:
        answer = received(*args)  # type: ignore[arg-type]
        if answer is not None:
            sent.append([turn for chunk in answer for turn in pickle.loads(chunk)[0]])
        return answer

    monkeypatch.setattr(compaction_scan, "_received", spy)
    assert _read(vault, two=True) == alone
    # The second half came from the other process.
    assert sent and sent[0] == alone[-len(sent[0]) :] and 100 < len(sent[0]) < 140


@pytest.mark.usefixtures("forking")
def test_histories_of_a_line_or_two_are_read_whole(vault: Vault) -> None:
    for count in (1, 2, 3):
        vault.layout.history.unlink(missing_ok=True)
        bulk_append(vault, [random_turn(random.Random(count), n) for n in range(count)])
        assert _read(vault, two=True) == _read(vault, two=False)
        assert len(_read(vault, two=True)) == count


@pytest.mark.usefixtures("forking")
def test_cited_notes_are_named_alike_in_both_processes(sample_vault: Vault) -> None:
    ids = [str(fields["id"]) for fields in sample_vault.index.all_documents()]
    assert ids
    _write_history(sample_vault, 120, cite=[*ids[:6], "no-such-note"])
    alone = _read(sample_vault, two=False)
    assert any("(notes: " in digest for *_, digest in alone)
    assert _read(sample_vault, two=True) == alone


def test_titles_for_the_other_process_come_from_the_index_manifest(
    sample_vault: Vault,
) -> None:
    # Once the index is current, its manifest holds every note's title: the process that
    # forks reads them there, without opening the index or loading whoosh's machinery.
    documents = sample_vault.index.all_documents()
    fresh = Vault.open(sample_vault.root)
    digester = _FactDigester(fresh, 23)
    digester.look_up_all()
    assert fresh._index is None
    assert digester.titles == {str(doc["id"]): str(doc["title"]) for doc in documents}
    assert digester.title_of("no-such-note") is None


def test_a_vault_without_notes_names_none_and_never_opens_the_index(vault: Vault) -> None:
    _write_history(vault, 40, cite=["a-note", "another"])
    digester = _FactDigester(vault, 23)
    digester.look_up_all()
    turns = read_live(HistoryStore(vault), 0, None, digester, 0)
    assert turns and not any("(notes: " in digest for *_, digest in turns)
    assert vault._index is None
    assert not vault.layout.index.exists()


def _exits(writer: int, chunks: list[bytes]) -> None:
    os._exit(3)


def _raises(writer: int, chunks: list[bytes]) -> None:
    raise MemoryError


def _stops_part_way(writer: int, chunks: list[bytes]) -> None:
    data = pickle.dumps(chunks)
    os.write(writer, len(data).to_bytes(8, "big") + data[: len(data) // 2])


def _answers_nonsense(writer: int, chunks: list[bytes]) -> None:
    data = pickle.dumps([pickle.dumps(([("only an id",)], None))])
    os.write(writer, len(data).to_bytes(8, "big") + data)


def _cannot_die_with_its_parent(parent: int) -> bool:
    return False


def _cannot_fork() -> int:
    raise OSError(11, "Resource temporarily unavailable")


@pytest.mark.usefixtures("forking")
@pytest.mark.parametrize(
    ("where", "name", "failure"),
    [
        # The second process cannot start: this one reads its half.
        (os, "fork", _cannot_fork),
        # It starts, then fails one way or another: no turn is lost.
        (compaction_scan, "_send", _exits),
        (compaction_scan, "_send", _raises),
        (compaction_scan, "_send", _stops_part_way),
        (compaction_scan, "_send", _answers_nonsense),
        # It could outlive this one (holding the vault lock): it reads nothing.
        (compaction_scan, "_dies_with", _cannot_die_with_its_parent),
    ],
    ids=["cannot-start", "exits", "raises", "stops-part-way", "nonsense", "could-outlive"],
)
def test_a_second_process_that_fails_loses_no_turn(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, where: object, name: str, failure: object
) -> None:
    _write_history(vault, 80)
    alone = _read(vault, two=False)
    monkeypatch.setattr(where, name, failure)
    assert _read(vault, two=True) == alone


def _hangs(writer: int, chunks: list[bytes]) -> None:
    time.sleep(60)


@pytest.mark.usefixtures("forking")
def test_a_second_process_that_never_answers_is_stopped(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_history(vault, 80)
    alone = _read(vault, two=False)
    monkeypatch.setattr(compaction_scan, "_send", _hangs)
    monkeypatch.setattr(compaction_scan, "_ANSWER_SECONDS", 0.3)
    monkeypatch.setattr(compaction_scan, "_ANSWER_FACTOR", 0.0)
    started = time.monotonic()
    assert _read(vault, two=True) == alone
    assert time.monotonic() - started < 20


def _archive(vault: Vault) -> dict[str, object]:
    data = json.loads((vault.layout.memory / "memory.json").read_text(encoding="utf-8"))
    data.pop("updated")
    for entry in data["entries"]:
        entry.pop("created")
    return data


def test_compaction_in_two_processes_writes_the_archive_one_would(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(vault, threshold=400, keep=5, budget=300, fanout=4)
    _write_history(vault, 300)
    copy = tmp_path / "copy"
    shutil.copytree(vault.root, copy)
    alone = compact(vault)
    monkeypatch.setattr(compaction_scan, "TWO_PROCESS_BYTES", 0)
    monkeypatch.setattr(compaction_scan, "_can_fork", lambda: True)
    other = Vault.open(copy)
    try:
        configure(other, threshold=400, keep=5, budget=300, fanout=4)
        both = compact(other)
        assert both.to_dict()["levels"] == alone.to_dict()["levels"]
        assert both.turns_covered == alone.turns_covered == 295
        assert _archive(other) == _archive(vault)
        assert_every_turn_accounted_for(other)
    finally:
        other.close()
    assert MemoryStore(vault).problem is None


def test_short_histories_and_threaded_processes_are_read_in_one(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_fork(*args: object, **kwargs: object) -> None:
        raise AssertionError("no second process was wanted")

    monkeypatch.setattr(compaction_scan, "_read_in_two", no_fork)
    _write_history(vault, 40)
    assert len(_read(vault, two=True)) == 40
    monkeypatch.setattr(compaction_scan, "TWO_PROCESS_BYTES", 0)
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait)
    helper.start()
    try:
        assert len(_read(vault, two=True)) == 40
    finally:
        stop.set()
        helper.join()


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="cores are counted on Linux")
@pytest.mark.parametrize(
    ("cores", "threads", "free", "forks"),
    [(2, 1, 2, True), (2, 1, 1, False), (1, 1, 1, False), (2, 2, 2, False), (8, 1, 3, True)],
)
def test_a_second_process_is_started_only_onto_a_free_core_from_one_thread(
    monkeypatch: pytest.MonkeyPatch, cores: int, threads: int, free: int, forks: bool
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    monkeypatch.setattr(threading, "active_count", lambda: threads)
    monkeypatch.setattr(compaction_scan, "_free_cores", lambda cores: free)
    # Idle time decides: a task always ready to run that takes no time does not count.
    monkeypatch.setattr(compaction_scan, "_runnable", lambda: cores)
    assert compaction_scan._can_fork() is forks


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="cores are counted on Linux")
@pytest.mark.parametrize(
    ("cores", "runnable", "forks"), [(2, 1, True), (2, 2, False), (8, 5, True)]
)
def test_without_idle_times_the_tasks_ready_to_run_decide(
    monkeypatch: pytest.MonkeyPatch, cores: int, runnable: int, forks: bool
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(compaction_scan, "_free_cores", lambda cores: None)
    monkeypatch.setattr(compaction_scan, "_runnable", lambda: runnable)
    assert compaction_scan._can_fork() is forks


def test_the_tasks_ready_to_run_include_this_one() -> None:
    assert compaction_scan._runnable(looks=2) >= 1


PROC_STAT = """cpu  {all}
cpu0 {zero} 0 0 0
cpu1 {one} 0 0 0
intr 1 2 3
"""


def stat_with(zero: tuple[int, int, int, int], one: tuple[int, int, int, int]) -> str:
    """/proc/stat with each core's user, nice, system and idle ticks (the rest zero)."""
    return PROC_STAT.format(
        all=" ".join(str(a + b) for a, b in zip(zero, one, strict=True)),
        zero=" ".join(map(str, zero)),
        one=" ".join(map(str, one)),
    )


def test_a_core_is_free_when_it_idled_at_least_half_the_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    readings = iter(
        [
            stat_with((100, 0, 10, 500), (100, 0, 10, 500)),
            # Core 0 busy the whole wait, core 1 idle for 2 of its 3 ticks.
            stat_with((103, 0, 10, 500), (101, 0, 10, 502)),
        ]
    )
    monkeypatch.setattr(compaction_scan, "_read_proc_stat", lambda: next(readings))
    assert compaction_scan._free_cores({0, 1}, window_s=0) == 1


def test_a_core_the_kernel_does_not_list_leaves_the_count_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        compaction_scan, "_read_proc_stat", lambda: PROC_STAT.format(all="1", zero="1", one="1")
    )
    assert compaction_scan._free_cores({0, 5}, window_s=0) is None
    monkeypatch.setattr(compaction_scan, "_read_proc_stat", lambda: "no cores here\n")
    assert compaction_scan._free_cores({0}, window_s=0) is None


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="idle times are read on Linux")
def test_the_free_cores_of_this_machine_are_counted() -> None:
    cores = os.sched_getaffinity(0)
    free = compaction_scan._free_cores(cores)
    assert free is not None and 0 <= free <= len(cores)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The other process's part is read in many small chunks, and is most of the history."""
    monkeypatch.setattr(compaction_scan, "_FIRST_SHARE", 0.1)
    monkeypatch.setattr(compaction_scan, "_CHUNK_BYTES", 2_000)
    monkeypatch.setattr(compaction_scan, "_MAX_CHUNKS", 1_000)


def _slow_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    dies_with = compaction_scan._dies_with

    def slowly(parent: int) -> bool:
        time.sleep(1.0)
        return dies_with(parent)

    monkeypatch.setattr(compaction_scan, "_dies_with", slowly)


def _chunks_sent(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many chunks the other process sends, each time it does."""
    sent: list[int] = []
    received = compaction_scan._received

    def spy(*args: object) -> list[bytes] | None:
        answer = received(*args)  # type: ignore[arg-type]
        sent.append(-1 if answer is None else len(answer))
        return answer

    monkeypatch.setattr(compaction_scan, "_received", spy)
    return sent


@pytest.mark.usefixtures("forking", "small_chunks")
def test_a_slow_second_process_leaves_its_last_chunks_to_the_first(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_history(vault, 240)
    alone = _read(vault, two=False)
    _slow_to_start(monkeypatch)
    sent = _chunks_sent(monkeypatch)
    history = HistoryStore(vault)
    chunks = len(compaction_scan._chunk_starts(history, 0, history.size()))
    assert _read(vault, two=True) == alone
    # It was told to stop short: it read only some of its chunks, this process the rest.
    assert len(sent) == 1 and 0 < sent[0] < chunks // 2 + 2


@pytest.mark.usefixtures("forking", "small_chunks")
def test_chunks_read_by_both_processes_are_kept_once(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The other process never learns it should stop short, so reads every chunk, as it
    # would when it began the ones this process took before it was told.
    _write_history(vault, 240)
    alone = _read(vault, two=False)
    _slow_to_start(monkeypatch)
    note = compaction_scan._note
    limits: list[int] = []

    def not_the_new_limit(shared: object, slot: int, count: int) -> None:
        if slot == compaction_scan._LIMIT:
            limits.append(count)
            if len(limits) > 1:
                return  # the first is every chunk, written before the other process starts
        note(shared, slot, count)  # type: ignore[arg-type]

    monkeypatch.setattr(compaction_scan, "_note", not_the_new_limit)
    sent = _chunks_sent(monkeypatch)
    assert _read(vault, two=True) == alone
    # This process took the chunks one at a time, from the last.
    assert len(limits) > 2 and limits == sorted(limits, reverse=True)
    assert len(sent) == 1 and sent[0] == limits[0] > limits[-1]


def test_the_lines_between_two_line_starts_are_counted_in_blocks(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_history(vault, 60)
    history = HistoryStore(vault)
    starts = [position for position, _ in history.iter_lines_from(0)]
    # Blocks smaller than a line, so that counts run across block ends.
    monkeypatch.setattr(compaction_scan, "_COUNT_BLOCK_BYTES", 7)
    for start, stop in ((0, starts[-1]), (starts[3], starts[40]), (starts[5], starts[5])):
        expected = sum(1 for position in starts if start <= position < stop)
        assert compaction_scan._lines_between(history, start, stop) == expected


@pytest.mark.usefixtures("forking")
def test_what_waits_for_the_other_process_is_done_once_this_one_has_read(
    vault: Vault,
) -> None:
    _write_history(vault, 240)
    digester = _FactDigester(vault, 23)
    read_here: list[int] = []

    def counted(record: dict[str, object]) -> str:
        read_here.append(1)
        return digester(record)

    waited: list[int] = []
    live = read_live(
        HistoryStore(vault),
        0,
        None,
        counted,
        0,
        digester.look_up_all,
        None,
        lambda: waited.append(len(read_here)),
    )
    # Called once, after this process read its part and no other turn is read here after.
    assert waited == [len(read_here)] and 0 < len(read_here) < len(live)


def _as_json_loads_reads(raw: bytes, covered: set[str] | None) -> dict[str, object] | None:
    """What `uncovered_record` returned when it decoded each line with `json.loads`."""
    try:
        record = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("id"), str):
        return None
    return None if covered is not None and record["id"] in covered else record


@pytest.mark.parametrize(
    "raw",
    [
        b'{"id": "t1", "question": "q", "answer": "a"}\n',
        b'{"id":"t1","answer":"caf\\u00e9 \\ud83d\\ude00 \xc3\xa9"}\r\n',
        b'{"id": "t1"}   \t\n',
        b'{"id": "t1"}',
        b'{"id": "t1"} {"id": "t2"}\n',
        b'{"id": "t1"}x\n',
        b'{"id": "t1", "n": NaN, "deep": [[[{"a": [1, 2.5e3, null, true]}]]]}\n',
        b'{"id": "t1", "id": "t2"}\n',
        b'  {"id": "t1"}\n',
        b'\xef\xbb\xbf{"id": "t1"}\n',
        b'{"id": 7}\n',
        b'{"id": "t1", "answer": "\xff"}\n',
        b'{"id": "t1", "answer": "torn\n',
        b"{\n",
        b"{",
        b'{"half": ',
        b'{"id": "t1", "answer": }\n',
        b'{"id": "t1", "cited": [}\n',
        b'{"id": "t1", "n": -}\n',
        b"[1, 2]\n",
        b'"t1"\n',
        b"\n",
        b"",
        b'{"id": "covered"}\n',
    ],
)
def test_a_line_is_read_as_json_loads_reads_it(raw: bytes) -> None:
    covered = {"covered"}
    assert compaction_scan.uncovered_record(raw, covered) == _as_json_loads_reads(raw, covered)
    assert compaction_scan.uncovered_record(raw, None) == _as_json_loads_reads(raw, None)


class _Text(str):
    pass


_TURN = ("t1", True, 12, 40, "a digest")


@pytest.mark.parametrize(
    ("turns", "taken"),
    [
        ([], True),
        ([_TURN], True),
        ([_TURN, ("t2", False, 0, 80, "")], True),
        ([_TURN, ["t2", False, 0, 80, ""]], False),
        ([_TURN, ("t2", False, 0, 80)], False),
        ([_TURN, ("t2", False, 0, 80, "", "")], False),
        ([_TURN, (2, False, 0, 80, "")], False),
        ([_TURN, ("t2", 1, 0, 80, "")], False),
        ([_TURN, ("t2", False, True, 80, "")], False),
        ([_TURN, ("t2", False, 0, 80.0, "")], False),
        ([_TURN, ("t2", False, 0, 80, None)], False),
        ([_TURN, ("t2", False, 0, 80, _Text("made elsewhere"))], False),
        ([_TURN, None], False),
    ],
)
def test_turns_sent_by_the_other_process_are_taken_only_as_live_turns(
    turns: list[object], taken: bool
) -> None:
    chunk = pickle.dumps((turns, None))
    assert (compaction_scan._unpacked(chunk) is not None) is taken


def test_a_long_backlogs_decoder_reads_each_line_as_the_standard_one() -> None:
    import orjson

    lines = [
        b'{"id": "t1", "question": "Mars moons?", "answer": "Two. [1]", "cited": ["n"]}\n',
        '{"id":"t2","answer":"café → 木星 🪐"}\n'.encode(),
        b'  {"id": "t3"}  \n',
        b'{"id": "t4", "id": "t5"}\n',
        # What orjson refuses and the standard decoder reads: decoded again, as before.
        b'{"id": "t6", "latency": NaN, "big": 123456789012345678901234567890}\n',
        b'{"id": "t7", "answer": "\\ud800 alone", "far": 1e999}\n',
        # What neither reads, or is no turn.
        b'{"id": "t8"} and more\n',
        b'{"id": "t9",}\n',
        b'\xff\xfe{"id": "t10"}\n',
        b"[1, 2]\n",
        b'{"id": 11}\n',
        b'{"id": "t12", "answer": }\n',
        b"\n",
    ]
    for raw in lines:
        for covered in (None, {"t1", "t5"}):
            standard = compaction_scan.uncovered_record(raw, covered)
            quick = compaction_scan.uncovered_record(raw, covered, orjson.loads)
            assert repr(quick) == repr(standard), raw
    kept = [compaction_scan.uncovered_record(raw, None, orjson.loads) for raw in lines]
    assert [record["id"] if record else None for record in kept] == [
        *("t1", "t2", "t3", "t5", "t6", "t7"),
        *([None] * 7),
    ]
