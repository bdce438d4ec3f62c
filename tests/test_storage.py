"""Atomic replaces, whole-line JSONL appends, and reads that survive a torn tail."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lore.core import storage
from lore.core.storage import (
    JsonlReport,
    append_record,
    atomic_write_json,
    atomic_write_text,
    iter_records,
    read_tail_records,
)
from lore.errors import VaultError


def test_atomic_write_creates_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "note.md"
    atomic_write_text(target, "first\n")
    atomic_write_text(target, "second\n")
    assert target.read_text() == "second\n"
    assert [p.name for p in target.parent.iterdir()] == ["note.md"]


def test_crash_before_replace_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "note.md"
    atomic_write_text(target, "old and whole\n")

    def crash(src: str, dst: str) -> None:
        raise OSError(5, "simulated crash")

    monkeypatch.setattr(storage.os, "replace", crash)
    with pytest.raises(VaultError, match="simulated crash"):
        atomic_write_text(target, "new\n" * 1000)
    assert target.read_text() == "old and whole\n"
    # The temporary file is cleaned up, not left beside the note.
    assert [p.name for p in tmp_path.iterdir()] == ["note.md"]


def test_interrupt_during_write_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "data.json"
    atomic_write_json(target, {"version": 1})

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(storage.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_json(target, {"version": 2})
    assert json.loads(target.read_text()) == {"version": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["data.json"]


def test_write_into_a_missing_or_forbidden_place_is_one_vault_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(VaultError, match="cannot write"):
        atomic_write_text(blocker / "child.md", "x")
    with pytest.raises(VaultError, match="cannot append"):
        append_record(blocker / "child.jsonl", {"n": 1})


def test_append_and_read_back(tmp_path: Path) -> None:
    log = tmp_path / "history.jsonl"
    for number in range(5):
        append_record(log, {"n": number, "text": "é\nline"})
    assert [record["n"] for record in iter_records(log)] == list(range(5))
    assert log.read_bytes().count(b"\n") == 5


def test_torn_last_line_is_skipped_and_reported(tmp_path: Path) -> None:
    log = tmp_path / "history.jsonl"
    append_record(log, {"n": 1})
    append_record(log, {"n": 2})
    with open(log, "ab") as handle:
        handle.write(b'{"n": 3, "text": "cut of')
    report = JsonlReport()
    assert [record["n"] for record in iter_records(log, report)] == [1, 2]
    assert report.records == 2
    assert report.bad_lines == [3]
    assert report.torn_tail


def test_append_after_a_torn_line_starts_a_new_line(tmp_path: Path) -> None:
    log = tmp_path / "history.jsonl"
    append_record(log, {"n": 1})
    with open(log, "ab") as handle:
        handle.write(b'{"n": 2, "tor')
    append_record(log, {"n": 3})
    assert [record["n"] for record in iter_records(log)] == [1, 3]


def test_garbage_lines_in_the_middle_are_skipped(tmp_path: Path) -> None:
    log = tmp_path / "history.jsonl"
    log.write_bytes(b'{"n": 1}\nnot json\n[1, 2]\n\xff\xfe\n\n{"n": 2}\n')
    report = JsonlReport()
    assert [record["n"] for record in iter_records(log, report)] == [1, 2]
    assert report.bad_lines == [2, 3, 4]
    assert not report.torn_tail


def test_missing_file_reads_as_empty(tmp_path: Path) -> None:
    assert list(iter_records(tmp_path / "none.jsonl")) == []
    assert read_tail_records(tmp_path / "none.jsonl", 3) == []


def test_tail_reads_the_last_records(tmp_path: Path) -> None:
    log = tmp_path / "history.jsonl"
    for number in range(100):
        append_record(log, {"n": number, "pad": "x" * (number % 7) * 50})
    with open(log, "ab") as handle:
        handle.write(b'{"n": "torn')
    tail = read_tail_records(log, 5, chunk_size=64)
    assert [record["n"] for record in tail] == [95, 96, 97, 98, 99]
    assert [r["n"] for r in read_tail_records(log, 1000, chunk_size=100)] == list(range(100))
    assert read_tail_records(log, 0) == []


def test_tail_does_not_read_the_whole_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "history.jsonl"
    line = json.dumps({"pad": "y" * 1000}).encode() + b"\n"
    with open(log, "wb") as handle:
        handle.write(line * 20_000)  # about 20 MB
        handle.write(json.dumps({"last": True}).encode() + b"\n")
    read_sizes: list[int] = []
    real_open = open

    class CountingReader:
        def __init__(self, handle: object) -> None:
            self._handle = handle

        def __enter__(self) -> CountingReader:
            return self

        def __exit__(self, *exc: object) -> None:
            self._handle.close()  # type: ignore[attr-defined]

        def seek(self, *args: int) -> int:
            return self._handle.seek(*args)  # type: ignore[attr-defined,no-any-return]

        def read(self, size: int = -1) -> bytes:
            data: bytes = self._handle.read(size)  # type: ignore[attr-defined]
            read_sizes.append(len(data))
            return data

    def counting_open(path: object, mode: str = "r", *args: object, **kwargs: object) -> object:
        return CountingReader(real_open(path, mode, *args, **kwargs))  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.open", counting_open)
    tail = read_tail_records(log, 2)
    assert tail[-1] == {"last": True}
    assert sum(read_sizes) < 200_000


def test_concurrent_style_appends_stay_whole_lines(tmp_path: Path) -> None:
    log = tmp_path / "metrics.jsonl"
    big = "z" * 100_000
    append_record(log, {"big": big})
    append_record(log, {"small": 1})
    lines = log.read_bytes().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["big"] == big


def test_atomic_write_json_is_stable_and_unicode(tmp_path: Path) -> None:
    target = tmp_path / "m.json"
    atomic_write_json(target, {"b": 1, "a": "Ærø"})
    text = target.read_text(encoding="utf-8")
    assert text.index('"a"') < text.index('"b"') and "Ærø" in text
    assert os.stat(target).st_size == len(text.encode())


@pytest.mark.parametrize("sync_each", [False, True])
def test_a_batch_is_synced_once_for_the_disk_or_file_by_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sync_each: bool
) -> None:
    whole_disk: list[None] = []
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "sync", lambda: whole_disk.append(None))

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    files = [(tmp_path / f"part-{number}", f"part {number}\n".encode()) for number in range(6)]
    storage.atomic_write_many(files, sync_each=sync_each)
    assert [path.read_bytes() for path, _ in files] == [data for _, data in files]
    if sync_each:
        # Never the whole disk: another program's unwritten data is not waited for.
        assert not whole_disk
        assert len(synced) >= len(files)
    else:
        assert len(whole_disk) == 1
