"""Several writers at once: every note lands, every record stays whole, readers see whole files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lore.core.storage import iter_records
from lore.core.vault import Vault, init_vault

WAIT_THEN_RUN = """
import os, sys, time
from lore.cli import main
go = sys.argv[1]
deadline = time.monotonic() + 60
while not os.path.exists(go):
    if time.monotonic() > deadline:
        sys.exit(99)
    time.sleep(0.001)
sys.exit(main(sys.argv[2:]))
"""

APPEND_RECORDS = """
import os, sys, time
from pathlib import Path
from lore.core.storage import append_record
path, go, writer, count = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
while not os.path.exists(go):
    time.sleep(0.001)
for number in range(count):
    append_record(path, {"writer": writer, "n": number, "pad": writer * (5000 + number * 37)})
"""


def _start_together(commands: list[list[str]], go: Path) -> list[subprocess.CompletedProcess[str]]:
    processes = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for command in commands
    ]
    time.sleep(0.5)  # let every interpreter start and import Lore before the starting gun
    go.write_text("go")
    results = []
    for process, command in zip(processes, commands, strict=True):
        out, err = process.communicate(timeout=120)
        results.append(subprocess.CompletedProcess(command, process.returncode, out, err))
    return results


def test_two_notes_new_at_the_same_moment_both_land(tmp_path: Path) -> None:
    root = init_vault(tmp_path / "vault")
    Vault.open(root).index.close()  # the index exists; both processes then race to write it
    go = tmp_path / "go"
    commands = [
        [sys.executable, "-c", WAIT_THEN_RUN, str(go), "--vault", str(root), "notes", "new",
         title, "--body", f"{word} shared-word", "--json"]
        for title, word in (("Alpha Centauri", "proxima"), ("Barnard's Star", "flare"))
    ]  # fmt: skip
    results = _start_together(commands, go)
    for result in results:
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["title"]
    vault = Vault.open(root)
    try:
        titles = sorted(hit.title for hit in vault.index.search("shared", limit=10))
        assert titles == ["Alpha Centauri", "Barnard's Star"]
        assert [hit.title for hit in vault.index.search("proxima")] == ["Alpha Centauri"]
        assert vault.reconcile().touched == 0
    finally:
        vault.close()


def test_notes_new_into_a_vault_with_no_index_yet(tmp_path: Path) -> None:
    root = init_vault(tmp_path / "vault")
    go = tmp_path / "go"
    commands = [
        [sys.executable, "-c", WAIT_THEN_RUN, str(go), "--vault", str(root), "notes", "new",
         f"Star {number}", "--body", "twinkle"]
        for number in range(4)
    ]  # fmt: skip
    for result in _start_together(commands, go):
        assert result.returncode == 0, result.stderr
    vault = Vault.open(root)
    try:
        assert len(vault.index.search("twinkle", limit=10)) == 4
    finally:
        vault.close()


def test_appending_processes_never_interleave_lines(tmp_path: Path) -> None:
    log = tmp_path / "history.jsonl"
    go = tmp_path / "go"
    writers, count = "abcd", 60
    commands = [
        [sys.executable, "-c", APPEND_RECORDS, str(log), str(go), writer, str(count)]
        for writer in writers
    ]
    for result in _start_together(commands, go):
        assert result.returncode == 0, result.stderr
    lines = log.read_bytes().split(b"\n")
    assert lines[-1] == b""
    # A writer that glimpses another's record half-way (the file grows page by page) starts
    # its own on a fresh line; the blank line this can leave is skipped by every reader.
    records = [json.loads(line) for line in lines[:-1] if line]
    assert len(records) == len(writers) * count
    for writer in writers:
        mine = [record["n"] for record in records if record["writer"] == writer]
        assert mine == list(range(count))
        assert all(set(r["pad"]) == {writer} for r in records if r["writer"] == writer)


def test_threads_sharing_a_vault_all_land(vault: Vault) -> None:
    errors: list[BaseException] = []

    def create(start: int) -> None:
        try:
            for number in range(start, start + 4):
                vault.create_note(f"Thread note {number}", "concurrent body")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=create, args=(n * 10,)) for n in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(vault.index.search("concurrent", limit=100)) == 20
    assert len(list(vault.layout.notes.glob("*.md"))) == 20


def test_separate_vault_objects_in_threads_take_turns(vault: Vault) -> None:
    errors: list[BaseException] = []

    def create(number: int) -> None:
        other = Vault.open(vault.root)
        try:
            for index in range(3):
                other.create_note(f"Worker {number} note {index}", "parallel body")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            other.close()

    threads = [threading.Thread(target=create, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(vault.index.search("parallel", limit=100)) == 12


def test_readers_never_see_half_a_note(vault: Vault) -> None:
    note = vault.create_note("Flicker", "start\n")
    path = vault.root / note.path
    stop = threading.Event()
    torn: list[str] = []

    def read_loop() -> None:
        while not stop.is_set():
            text = path.read_text(encoding="utf-8")
            if not text.rstrip().endswith("END") and "start" not in text:
                torn.append(text[-40:])

    reader = threading.Thread(target=read_loop)
    reader.start()
    try:
        for round_number in range(40):
            note.body = f"round {round_number}\n" + "filler line\n" * (round_number * 200) + "END\n"
            vault.save(note)
    finally:
        stop.set()
        reader.join()
    assert torn == []


def test_history_written_while_read(tmp_path: Path) -> None:
    log = tmp_path / "history.jsonl"
    from lore.core.storage import append_record

    stop = threading.Event()
    seen_bad: list[int] = []

    def reader() -> None:
        while not stop.is_set():
            for record in iter_records(log):
                if "n" not in record:
                    seen_bad.append(1)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for number in range(300):
            append_record(log, {"n": number, "text": "x" * 3000})
    finally:
        stop.set()
        thread.join()
    assert seen_bad == []
    assert len(list(iter_records(log))) == 300
    assert os.path.getsize(log) > 300 * 3000


def test_a_writer_waits_for_the_vault_lock(vault: Vault) -> None:
    vault.create_note("Existing", "x")
    with vault.lock():
        process = subprocess.Popen(
            [sys.executable, "-m", "lore", "--vault", str(vault.root), "notes", "new", "Waiter"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(2.0)
        assert process.poll() is None  # blocked on the lock, not failed
        assert not (vault.layout.notes / "waiter.md").exists()
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert (vault.layout.notes / "waiter.md").exists()


def test_a_lock_held_too_long_is_one_clear_error(tmp_path: Path) -> None:
    from lore.core.lock import VaultLock
    from lore.errors import VaultLocked

    path = tmp_path / "lock"
    holder = VaultLock(path)
    waiter = VaultLock(path, timeout_s=0.2)
    with holder.hold():
        started = time.monotonic()
        try:
            with waiter.hold():
                raise AssertionError("the lock was taken twice")
        except VaultLocked as exc:
            assert "busy" in str(exc) and "\n" not in str(exc)
        assert time.monotonic() - started < 2
    with waiter.hold():
        pass  # free again once the holder lets go


def test_a_note_written_while_the_index_opens_stays_in_it(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening lists the notes before it takes the lock; one written by another process in
    that moment must not be taken for a note removed."""
    vault.create_note("Comet Halley", "A periodic comet.")
    other = Vault.open(vault.root)
    real_scan = other.scan_note_files
    before_the_write = real_scan()
    vault.create_note("Comet Encke", "The shortest period of any known comet.")
    scans = iter([before_the_write])
    monkeypatch.setattr(other, "scan_note_files", lambda: next(scans, None) or real_scan())
    try:
        assert [hit.title for hit in other.index.search("Encke", limit=5)] == ["Comet Encke"]
    finally:
        other.close()
