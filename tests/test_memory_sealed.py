"""A long archive's covered entries are sealed in parts that later compactions leave alone."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from history_helpers import assert_every_turn_accounted_for, bulk_append, configure, random_turn
from lore.cli import main
from lore.core import memory as memory_module
from lore.core import memory_sealed
from lore.core.compaction import compact
from lore.core.doctor import examine
from lore.core.history import HistoryStore
from lore.core.memory import MemoryState, MemoryStore, frontier_of, render_state
from lore.core.vault import Vault, init_vault
from lore.errors import VaultError
from test_compaction_crash import CHILD

SETTINGS = {"threshold": 150, "keep": 3, "budget": 200, "fanout": 3}
# Small enough that a few hundred turns fill several parts.
SEAL_BYTES = 2048


@pytest.fixture(autouse=True)
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_sealed, "SEAL_BYTES", SEAL_BYTES)


def add_turns(vault: Vault, count: int, seed: int, first: int = 0) -> None:
    configure(vault, **SETTINGS)
    rng = random.Random(seed)
    bulk_append(vault, [random_turn(rng, first + number) for number in range(count)])


def archive(vault: Vault) -> dict:
    return json.loads((vault.layout.memory / "memory.json").read_text(encoding="utf-8"))


def parts(vault: Vault) -> dict[str, bytes]:
    folder = vault.layout.memory / "sealed"
    return {path.name: path.read_bytes() for path in sorted(folder.glob("*"))}


def records(state: MemoryState) -> list[dict]:
    return [entry.to_record() for entry in state.entries]


def by_level(state: MemoryState, *, created: bool = True) -> dict[int, list[dict]]:
    """Each level's entries in order, as the archive's readers group them."""
    grouped: dict[int, list[dict]] = {}
    for record in records(state):
        grouped.setdefault(record["level"], []).append(
            record if created else {**record, "created": ""}
        )
    return grouped


def test_a_long_archive_seals_its_oldest_entries_and_reads_back_whole(vault: Vault) -> None:
    add_turns(vault, 300, seed=1)
    assert compact(vault).compacted
    head = archive(vault)
    assert head["v"] == 2
    sealed = head["sealed"]
    assert len(sealed) >= 3
    assert [part["file"] for part in sealed] == [
        f"sealed/{number:06d}.jsonl" for number in range(1, len(sealed) + 1)
    ]
    for part in sealed:
        data = (vault.layout.memory / part["file"]).read_bytes()
        assert len(data) == part["bytes"] >= SEAL_BYTES
        # JSON Lines, an entry a line: greppable like memory.json.
        assert len(data.splitlines()) == part["entries"]
    state = MemoryStore(vault).state()
    assert len(state.entries) == sum(part["entries"] for part in sealed) + len(head["entries"])
    assert render_state(state) == (vault.layout.memory / "memory.json").read_text()
    # Only covered entries are sealed: the frontier is all in memory.json, with fewer
    # covered entries than would fill one more part.
    covered = {child for entry in state.entries if entry.level > 1 for child in entry.covers}
    held = {entry["id"] for entry in head["entries"]}
    assert {entry.id for entry in frontier_of(state.entries)} <= held
    assert all(entry.id in covered for entry in state.entries if entry.id not in held)
    waiting = [entry for entry in head["entries"] if entry["id"] in covered]
    assert len("\n".join(json.dumps(entry) for entry in waiting)) < SEAL_BYTES
    for part in sealed:
        lines = (vault.layout.memory / part["file"]).read_text().splitlines()
        counted: dict[str, int] = {}
        for line in lines:
            level = str(json.loads(line)["level"])
            counted[level] = counted.get(level, 0) + 1
        assert part["levels"] == counted
    assert_every_turn_accounted_for(vault)


def test_sealing_changes_no_entry_and_no_turn_covered(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_turns(vault, 300, seed=2)
    compact(vault)
    add_turns(vault, 120, seed=3, first=1000)
    compact(vault)
    sealed = MemoryStore(vault).state()
    # The same history compacted the same way with nothing sealed.
    monkeypatch.setattr(memory_sealed, "SEAL_BYTES", 1 << 40)
    root = init_vault(tmp_path / "plain", "Plain")
    plain = Vault.open(root)
    add_turns(plain, 300, seed=2)
    compact(plain)
    add_turns(plain, 120, seed=3, first=1000)
    compact(plain)
    whole = MemoryStore(plain).state()
    assert "sealed" not in archive(plain)
    assert not (plain.layout.memory / "sealed").exists()
    assert by_level(sealed, created=False) == by_level(whole, created=False)
    assert (sealed.watermark, sealed.watermark_offset) == (whole.watermark, whole.watermark_offset)
    plain.close()


def test_a_later_compaction_leaves_the_sealed_parts_as_they_were(vault: Vault) -> None:
    add_turns(vault, 300, seed=4)
    compact(vault)
    before = parts(vault)
    folder = vault.layout.memory / "sealed"
    stats = {path.name: path.stat() for path in folder.glob("*")}
    old = by_level(MemoryStore(vault).state())
    add_turns(vault, 40, seed=5, first=1000)
    report = compact(vault)
    assert report.compacted
    after = parts(vault)
    # Every part there was is still there, the very same file; new ones may follow.
    for name, data in before.items():
        assert after[name] == data
        assert (folder / name).stat().st_ino == stats[name].st_ino
        assert (folder / name).stat().st_mtime_ns == stats[name].st_mtime_ns
    # Each level's entries as they were, then the new ones.
    state = MemoryStore(vault).state()
    new = {entry.id for entry in report.entries_written}
    for level, entries in by_level(state).items():
        kept = [entry for entry in entries if entry["id"] not in new]
        assert kept == old.get(level, [])
        assert entries[: len(kept)] == kept
    assert_every_turn_accounted_for(vault)


def test_an_archive_written_before_parts_existed_is_read_then_sealed(vault: Vault) -> None:
    add_turns(vault, 300, seed=6)
    compact(vault)
    state = MemoryStore(vault).state()
    # Version 1: every entry in memory.json itself.
    head = state.head_record()
    head["v"] = 1
    head["entries"] = records(state)
    (vault.layout.memory / "memory.json").write_text(json.dumps(head), encoding="utf-8")
    for path in (vault.layout.memory / "sealed").glob("*"):
        path.unlink()
    store = MemoryStore(vault)
    assert records(store.state()) == records(state)
    assert store.problem is None
    add_turns(vault, 40, seed=7, first=1000)
    assert compact(vault).compacted
    assert archive(vault)["v"] == 2
    assert archive(vault)["sealed"]
    after = by_level(MemoryStore(vault).state())
    for level, entries in by_level(state).items():
        assert after[level][: len(entries)] == entries
    assert_every_turn_accounted_for(vault)


@pytest.mark.parametrize(
    ("damage", "damaged_size"),
    [
        pytest.param(lambda path: path.unlink(), True, id="missing"),
        pytest.param(lambda path: path.write_bytes(path.read_bytes()[:-40]), True, id="cut short"),
        pytest.param(lambda path: path.write_bytes(path.read_bytes() + b"{}\n"), True, id="longer"),
        pytest.param(
            lambda path: path.write_bytes(path.read_bytes().replace(b"{", b"{ ", 1)[:-1]),
            False,
            id="same size, last line torn",
        ),
        pytest.param(
            lambda path: path.write_bytes(path.read_bytes().replace(b"}\n", b"}\n\n", 1)[:-1]),
            False,
            id="a line split in two",
        ),
    ],
)
def test_a_damaged_part_is_reported_and_compaction_refuses(
    vault: Vault, damage, damaged_size: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    add_turns(vault, 300, seed=8)
    compact(vault)
    before = parts(vault)
    damage(vault.layout.memory / "sealed" / "000002.jsonl")
    store = MemoryStore(vault)
    assert store.state().entries == []
    assert store.problem is not None and "000002.jsonl" in store.problem
    [finding] = [f for f in examine(vault).findings if f.kind == "memory"]
    assert "000002.jsonl" in finding.message
    add_turns(vault, 40, seed=9, first=1000)
    if damaged_size:
        with pytest.raises(VaultError, match="compaction refused"):
            compact(vault)
    else:
        # A compaction reads no part, only checks each is there at its size; it writes
        # none of them again, so the damage is left for a person to mend, and said.
        assert compact(vault).compacted
        after_compaction = MemoryStore(vault)
        assert after_compaction.state().entries == []
        assert after_compaction.problem is not None
        assert "000002.jsonl" in after_compaction.problem
    # Nothing else was touched, and an ask still works from the live history.
    after = parts(vault)
    assert {name: data for name, data in before.items() if name != "000002.jsonl"}.items() <= {
        name: data for name, data in after.items() if name != "000002.jsonl"
    }.items()
    root = str(vault.root)
    assert main(["--vault", root, "--provider", "offline", "ask", "--json", "mars rings?"]) == 0
    assert json.loads(capsys.readouterr().out)["turn"]["status"] == "ok"


@pytest.mark.parametrize(
    "named", ["../memory.json", "sealed/../../lore.yaml", "/etc/passwd", "sealed/000009.jsonl"]
)
def test_a_part_named_out_of_place_is_never_read(vault: Vault, named: str) -> None:
    add_turns(vault, 300, seed=10)
    compact(vault)
    path = vault.layout.memory / "memory.json"
    head = json.loads(path.read_text(encoding="utf-8"))
    head["sealed"][0]["file"] = named
    path.write_text(json.dumps(head), encoding="utf-8")
    store = MemoryStore(vault)
    assert store.state().entries == []
    assert store.problem is not None and "sealed part 1" in store.problem


# Crashes the compaction of test_compaction_crash's child just before memory.json is replaced.
CRASH_BEFORE_ARCHIVE = textwrap.dedent(
    f"""
    from lore.core import memory_sealed
    memory_sealed.SEAL_BYTES = {SEAL_BYTES}
    real_replace = os.replace
    def crashing_replace(source, target):
        if str(target).endswith("memory.json"):
            os._exit(9)
        real_replace(source, target)
    os.replace = crashing_replace
    """
)


def test_a_crash_after_new_parts_before_the_archive_keeps_the_old_one(vault: Vault) -> None:
    add_turns(vault, 300, seed=11)
    compact(vault)
    before_text = (vault.layout.memory / "memory.json").read_text()
    before_parts = parts(vault)
    add_turns(vault, 300, seed=12, first=1000)
    script = CHILD.format(**SETTINGS).replace("HOOK", CRASH_BEFORE_ARCHIVE)
    result = subprocess.run(
        [sys.executable, "-c", script, str(vault.root)], capture_output=True, text=True
    )
    assert result.returncode == 9, result.stderr
    # The crash came after new parts were written: the archive is the old one all the same.
    stray = set(parts(vault)) - set(before_parts)
    assert stray
    assert (vault.layout.memory / "memory.json").read_text() == before_text
    assert_every_turn_accounted_for(vault)
    # The next compaction writes its own parts where the stray ones were, and leaves none
    # that its archive does not name.
    assert compact(vault).compacted
    named = {Path(part["file"]).name for part in archive(vault)["sealed"]}
    assert set(parts(vault)) == named
    assert all(parts(vault)[name] == data for name, data in before_parts.items())
    assert_every_turn_accounted_for(vault)


def test_a_later_compaction_commits_no_sealed_part_again(vault: Vault) -> None:
    add_turns(vault, 300, seed=13)
    compact(vault)
    first_parts = parts(vault)
    assert first_parts
    add_turns(vault, 40, seed=14, first=1000)
    compact(vault)
    changed = subprocess.run(
        ["git", "-C", str(vault.root), "show", "--format=", "--name-only", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "memory/memory.json" in changed
    assert not set(changed) & {f"memory/sealed/{name}" for name in first_parts}


def test_a_part_listed_not_as_lore_writes_it_is_read_by_pydantic(vault: Vault) -> None:
    add_turns(vault, 300, seed=15)
    compact(vault)
    expected = records(MemoryStore(vault).state())
    path = vault.layout.memory / "memory.json"
    head = json.loads(path.read_text(encoding="utf-8"))
    # An older writer's counts as text, and a key this version does not know.
    head["sealed"][0]["bytes"] = str(head["sealed"][0]["bytes"])
    head["sealed"][1]["checksum"] = "abc"
    path.write_text(json.dumps(head), encoding="utf-8")
    store = MemoryStore(vault)
    assert records(store.state()) == expected
    assert store.problem is None
    head["sealed"][0]["entries"] = "many"
    path.write_text(json.dumps(head), encoding="utf-8")
    store = MemoryStore(vault)
    assert store.state().entries == []
    assert store.problem is not None and "memory.json is unreadable" in store.problem


def test_an_entry_with_a_huge_count_or_a_lone_surrogate_is_written_whole(vault: Vault) -> None:
    add_turns(vault, 300, seed=18)
    compact(vault)
    state = MemoryStore(vault).state()
    # A count past 64 bits, as an archive edited by hand may hold, and a lone surrogate, as a
    # turn may.
    state.entries[-1].tokens = 1 << 70
    state.entries[-2].text = "Mars \udcff moons"
    lines = render_state(state).encode("utf-8")
    written = json.loads(lines)["entries"]
    assert written[-1]["tokens"] == 1 << 70
    assert written[-2]["text"] == "Mars \udcff moons"
    assert written == [entry.to_record() for entry in state.unsealed()]


def compacted_twice(vault: Vault) -> MemoryState:
    add_turns(vault, 300, seed=16)
    compact(vault)
    add_turns(vault, 120, seed=17, first=1000)
    assert compact(vault).compacted
    return MemoryStore(vault).state()


def test_a_later_compaction_reads_memory_json_alone(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_turns(vault, 300, seed=16)
    compact(vault)
    assert archive(vault)["sealed"]

    def unread(*args: object) -> None:
        raise AssertionError("a sealed part was read")

    with monkeypatch.context() as patched:
        patched.setattr(memory_sealed, "_read_part", unread)
        add_turns(vault, 120, seed=17, first=1000)
        report = compact(vault)
    assert report.compacted
    state = MemoryStore(vault).state()
    # Its report counts the sealed entries too.
    assert report.levels == {level: len(entries) for level, entries in by_level(state).items()}
    # The very archive a compaction reading every entry makes.
    root = init_vault(tmp_path / "plain", "Plain")
    plain = Vault.open(root)
    monkeypatch.setattr(memory_sealed, "SEAL_BYTES", 1 << 40)
    whole = compacted_twice(plain)
    assert by_level(state, created=False) == by_level(whole, created=False)
    plain.close()
    assert_every_turn_accounted_for(vault)


def test_parts_without_their_levels_are_read_whole_by_a_compaction(vault: Vault) -> None:
    add_turns(vault, 300, seed=18)
    compact(vault)
    path = vault.layout.memory / "memory.json"
    head = json.loads(path.read_text(encoding="utf-8"))
    for part in head["sealed"]:
        del part["levels"]
    path.write_text(json.dumps(head), encoding="utf-8")
    assert MemoryStore(vault).head().complete
    add_turns(vault, 120, seed=19, first=1000)
    report = compact(vault)
    assert report.compacted
    ids = [entry.id for entry in MemoryStore(vault).state().entries]
    assert len(ids) == len(set(ids))
    assert_every_turn_accounted_for(vault)


def cut_out_watermark_turn(vault: Vault) -> None:
    watermark = MemoryStore(vault).state().watermark
    lines = vault.layout.history.read_bytes().splitlines(keepends=True)
    kept = [line for line in lines if json.loads(line)["id"] != watermark]
    assert len(kept) == len(lines) - 1
    vault.layout.history.write_bytes(b"".join(kept))


def test_with_the_watermark_turn_gone_every_covered_turn_is_still_known(vault: Vault) -> None:
    add_turns(vault, 300, seed=20)
    compact(vault)
    cut_out_watermark_turn(vault)
    add_turns(vault, 120, seed=21, first=1000)
    assert compact(vault).compacted
    # Each turn of the history is live or covered by one level-1 entry, never both: the
    # turns the sealed entries cover were not taken for live ones.
    store = MemoryStore(vault)
    covered = [
        turn_id for entry in store.state().entries if entry.level == 1 for turn_id in entry.covers
    ]
    assert len(covered) == len(set(covered))
    live = {turn.id for turn in store.live_turns()}
    assert not live & set(covered)
    assert {turn.id for turn in HistoryStore(vault).iter_turns()} <= live | set(covered)


def test_with_the_watermark_turn_gone_a_damaged_part_stops_compaction(vault: Vault) -> None:
    add_turns(vault, 300, seed=22)
    compact(vault)
    cut_out_watermark_turn(vault)
    part = vault.layout.memory / "sealed" / "000001.jsonl"
    part.write_bytes(part.read_bytes().replace(b"}\n", b"}\n\n", 1)[:-1])
    # Found damaged by a process that has not read the archive before: this one forgets
    # what it read of it (parts never change, so a process keeps what it read).
    memory_module._parsed.clear()
    memory_sealed._read_parts.clear()
    before = (vault.layout.memory / "memory.json").read_bytes()
    add_turns(vault, 120, seed=23, first=1000)
    with pytest.raises(VaultError, match=r"000001\.jsonl"):
        compact(vault)
    assert (vault.layout.memory / "memory.json").read_bytes() == before
