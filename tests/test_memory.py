"""The memory archive reads back what compaction wrote, and a damaged one is reported, not lost."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from typing import Any

import pytest

from history_helpers import bulk_append, configure, random_turn
from lore.cli import main
from lore.core import memory as memory_module
from lore.core.compaction import compact
from lore.core.doctor import examine
from lore.core.memory import MemoryStore, PackView, render_state
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


# -- the view an ask reads instead of the whole archive ----------------------------------------


def _settled_archive(vault: Vault) -> MemoryStore:
    store = compacted_vault(vault)
    an_hour_ago = time.time() - 3600
    os.utime(vault.layout.memory / "memory.json", (an_hour_ago, an_hour_ago))
    return store


def _in_another_process() -> None:
    # What one process parsed, another has not.
    memory_module._parsed.clear()


def _archive_never_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: MemoryStore) -> None:
        raise AssertionError("the whole archive was read")

    monkeypatch.setattr(MemoryStore, "_load", refuse)


def test_an_ask_in_another_process_reads_the_view_not_the_archive(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _settled_archive(vault)
    ranked, start = store.ranked(), store.live_start()
    live = store.live_turns(5, only_ok=True)
    assert ranked and start[0] > 0
    assert (vault.layout.state / PackView.FILE_NAME).is_file()
    _in_another_process()
    _archive_never_read(monkeypatch)
    other = MemoryStore(vault)
    assert other.ranked() == ranked
    assert other.live_start() == start
    assert other.live_turns(5, only_ok=True) == live
    # Read once: a long-running process asks again without the file.
    (vault.layout.state / PackView.FILE_NAME).unlink()
    assert other.ranked() == ranked


def test_a_store_that_read_the_view_reads_a_new_archive_whole(vault: Vault) -> None:
    store = _settled_archive(vault)
    old = store.ranked()
    _in_another_process()
    other = MemoryStore(vault)
    assert other.ranked() == old
    rng = random.Random(9)
    bulk_append(vault, [random_turn(rng, n) for n in range(120, 200)])
    compact(vault)
    _in_another_process()
    assert other.ranked() == MemoryStore(vault).ranked() != old


def test_a_new_archive_is_read_whole_not_from_the_view_of_the_old(vault: Vault) -> None:
    store = _settled_archive(vault)
    old = store.ranked()
    rng = random.Random(9)
    bulk_append(vault, [random_turn(rng, n) for n in range(120, 200)])
    compact(vault)
    view = vault.layout.state / PackView.FILE_NAME
    assert view.is_file()
    _in_another_process()
    ranked = MemoryStore(vault).ranked()
    view.unlink()
    _in_another_process()
    assert ranked == MemoryStore(vault).ranked() != old


def test_an_archive_written_a_moment_ago_leaves_no_view(vault: Vault) -> None:
    store = compacted_vault(vault)
    assert store.ranked()
    assert not (vault.layout.state / PackView.FILE_NAME).exists()


@pytest.mark.parametrize(
    "damage",
    [
        lambda view: b"{not json",
        lambda view: b"",
        lambda view: json.dumps({**view, "limit": view["limit"] + 1}).encode(),
        lambda view: json.dumps({**view, "format": "lore-memory-view/0"}).encode(),
        lambda view: json.dumps({**view, "archive": [*view["archive"][:2], 1, 2, 3]}).encode(),
        lambda view: json.dumps({**view, "state": {"entries": "none"}}).encode(),
        lambda view: json.dumps({**view, "state": [1, 2]}).encode(),
    ],
)
def test_a_damaged_stale_or_foreign_view_is_a_miss(
    vault: Vault, damage: Callable[[dict[str, Any]], bytes]
) -> None:
    store = _settled_archive(vault)
    ranked, start = store.ranked(), store.live_start()
    path = vault.layout.state / PackView.FILE_NAME
    path.write_bytes(damage(json.loads(path.read_text(encoding="utf-8"))))
    _in_another_process()
    other = MemoryStore(vault)
    assert other.ranked() == ranked
    assert other.live_start() == start


def test_a_watermark_moved_by_an_edit_of_the_history_is_found_again(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _settled_archive(vault)
    offset, _ = store.live_start()
    store.ranked()
    history = vault.layout.history
    history.write_bytes(b"a line a person added\n" + history.read_bytes())
    _in_another_process()
    assert MemoryStore(vault).live_start() == (offset + len(b"a line a person added\n"), None)
