"""The memory archive reads back what compaction wrote, and a damaged one is reported, not lost."""

from __future__ import annotations

import json
import random

from history_helpers import bulk_append, configure, random_turn
from lore.cli import main
from lore.core.compaction import compact
from lore.core.doctor import examine
from lore.core.memory import MemoryStore, render_state
from lore.core.vault import Vault


def compacted_vault(vault: Vault) -> MemoryStore:
    configure(vault, threshold=100, keep=3, budget=300, fanout=3)
    rng = random.Random(4)
    bulk_append(vault, [random_turn(rng, n) for n in range(120)])
    compact(vault)
    return MemoryStore(vault)


def test_the_archive_is_plain_json_a_person_can_read(vault: Vault) -> None:
    store = compacted_vault(vault)
    text = (vault.layout.memory / "memory.json").read_text()
    data = json.loads(text)
    assert data["watermark"] == store.watermark
    # One entry per line, so `grep` and a diff show entries, not one huge line.
    assert len(text.splitlines()) == len(data["entries"]) + 2
    assert render_state(store.state()) == text


def test_a_second_store_sees_a_new_archive_at_once(vault: Vault) -> None:
    first = MemoryStore(vault)
    assert first.watermark is None
    compacted_vault(vault)
    assert first.watermark is not None
    assert first.levels() == MemoryStore(vault).levels()


def test_levels_and_frontier_describe_the_same_past(vault: Vault) -> None:
    store = compacted_vault(vault)
    levels = store.levels()
    assert list(levels) == sorted(levels)
    covered = sum(entry.turn_count for entry in store.frontier())
    assert covered == sum(len(entry.covers) for entry in levels[1]) == 117
    described = store.describe()
    assert described["entries"] == len(store.entries())
    assert described["frontier_tokens"] == store.frontier_tokens()


def test_doctor_reports_a_damaged_archive(vault: Vault, capsys) -> None:
    compacted_vault(vault)
    assert examine(vault).ok
    (vault.layout.memory / "memory.json").write_text('{"entries": [{"id": ')
    report = examine(vault)
    assert not report.ok
    [finding] = [f for f in report.findings if f.kind == "memory"]
    assert "unreadable" in finding.message
    assert main(["--vault", str(vault.root), "doctor", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert not data["ok"]
    assert any(finding["kind"] == "memory" for finding in data["findings"])


def test_an_archive_not_as_lore_writes_it_is_read_by_pydantic(vault: Vault) -> None:
    store = compacted_vault(vault)
    path = vault.layout.memory / "memory.json"
    data = json.loads(path.read_text())
    # An older writer's counts as text, and a key this version does not know.
    data["watermark_offset"] = str(data["watermark_offset"])
    data["entries"][0]["tokens"] = str(data["entries"][0]["tokens"])
    data["entries"][0]["origin"] = "elsewhere"
    path.write_text(json.dumps(data))
    reread = MemoryStore(vault)
    assert reread.problem is None
    assert reread.state() == store.state()


def test_an_archive_pydantic_rejects_reads_as_empty_and_says_so(vault: Vault) -> None:
    compacted_vault(vault)
    path = vault.layout.memory / "memory.json"
    data = json.loads(path.read_text())
    del data["entries"][0]["covers"]
    path.write_text(json.dumps(data))
    store = MemoryStore(vault)
    assert store.entries() == []
    assert store.problem is not None
    assert "is unreadable (ValidationError)" in store.problem
