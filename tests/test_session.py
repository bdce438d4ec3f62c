"""`LoreSession`: the one way the faces reach the core, and what it owns."""

from __future__ import annotations

import ast
import asyncio
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import lore
import lore.core.public as public
from lore.core.ask import AnswerDelta, AskFinished, MemoryCompacted
from lore.core.ask_notices import AskListener, AskNotice, relay_ask
from lore.core.compaction import CompactionReport
from lore.core.providers.base import ChatMessage, Chunk, GenerationOptions
from lore.core.session import LoreSession
from lore.core.vault import Vault

PACKAGE = Path(lore.__file__).parent
FACES = [PACKAGE / "tui", PACKAGE / "cli", PACKAGE / "repl.py", PACKAGE / "rich_display.py"]
FACE_MAY_IMPORT = {"lore.core.session", "lore.core.public"}


def _face_files() -> list[Path]:
    files: list[Path] = []
    for face in [*FACES, PACKAGE / "mcp_server"]:
        if face.is_dir():
            files.extend(sorted(face.rglob("*.py")))
        elif face.exists():
            files.append(face)
    return files


def _core_imports(path: Path) -> list[str]:
    """Every core module `path` imports, at the top, in a function or for type checking."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "lore.core":
                found.extend(f"lore.core.{alias.name}" for alias in node.names)
            elif node.module.startswith("lore.core."):
                found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names if alias.name.startswith("lore.core"))
    return found


def test_faces_reach_the_core_only_through_the_session_and_its_public_types() -> None:
    files = _face_files()
    assert len(files) > 20, "the faces were not found"
    reaching_in = {
        f"{path.relative_to(PACKAGE)}: {module}"
        for path in files
        for module in _core_imports(path)
        if module not in FACE_MAY_IMPORT
    }
    assert not reaching_in, sorted(reaching_in)


def test_the_public_types_are_listed_once_and_each_resolves() -> None:
    assert set(public.__all__) == set(public._HOME_OF)
    for name in public.__all__:
        assert getattr(public, name) is not None, name
    with pytest.raises(AttributeError):
        _ = public.NoSuchType  # type: ignore[attr-defined]


def test_opening_a_session_reads_nothing_it_does_not_need(sample_vault: Vault) -> None:
    session = LoreSession(sample_vault)
    assert session.name == sample_vault.name
    # No engine, provider, stores or watcher until an operation asks for one.
    assert session._made == {}


def test_one_provider_answers_and_model_switch_reaches_background_work(
    sample_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lore.core.compaction as compaction
    import lore.core.ingest as ingest_package

    session = LoreSession(sample_vault)
    assert session.provider is session.engine.provider
    session.use_model("ollama", "llama3")
    answering = session.provider
    assert (answering.name, answering.model) == ("ollama", "llama3")

    used: list[object] = []

    def fake_compact(vault: Vault, **options: object) -> CompactionReport:
        used.append(options.get("provider"))
        return CompactionReport(dry_run=False, compacted=False, reason="test", threshold_tokens=1)

    def fake_ingest(vault: Vault, targets: list[str], **options: object) -> object:
        used.append(options.get("provider"))
        return ingest_package.IngestReport()

    monkeypatch.setattr(compaction, "compact", fake_compact)
    monkeypatch.setattr(ingest_package, "ingest", fake_ingest)
    session.compact()
    session.ingest(["nothing.md"])
    assert len(used) == 2
    for provider in used:
        # The configured model, on a client of its own: that work runs on its own loop.
        assert provider is not answering
        assert getattr(provider, "model", "") == "llama3"


def test_writes_are_told_to_listeners_and_not_reported_back_by_the_watcher(
    sample_vault: Vault,
) -> None:
    session = LoreSession(sample_vault)
    heard: list[frozenset[str]] = []
    session.on_change(heard.append)
    session.poll_changes()
    session.create_note("Comet Encke", body="A short-period comet.")
    assert heard == [frozenset({"notes"})]
    assert "notes" not in session.poll_changes()
    # A write from outside the session still reaches it.
    other = Vault.open(sample_vault.root)
    try:
        other.create_note("Comet Tempel", "Another comet.")
    finally:
        other.close()
    assert "notes" in session.poll_changes()


class _Recorder(AskListener):
    def __init__(self) -> None:
        self.seen: list[str] = []
        self.notices: list[AskNotice] = []

    async def delta(self, text: str) -> None:
        self.seen.append(f"delta:{text}")

    async def finished(self, event: AskFinished) -> None:
        self.seen.append("finished")

    async def notice(self, notice: AskNotice, event: object) -> None:
        self.notices.append(notice)


def test_relay_hands_every_event_and_the_notice_each_calls_for() -> None:
    report = CompactionReport(
        dry_run=False, compacted=True, reason="over", threshold_tokens=1, turns_covered=12
    )

    async def events() -> AsyncIterator[object]:
        yield AnswerDelta("Hel")
        yield AnswerDelta("lo")
        yield MemoryCompacted(report)

    recorder = _Recorder()
    asyncio.run(relay_ask(events(), recorder))  # type: ignore[arg-type]
    assert recorder.seen == ["delta:Hel", "delta:lo"]
    assert [notice.level for notice in recorder.notices] == ["info"]
    assert "compacted 12 older turns" in recorder.notices[0].text


class _SlowToStart:
    """A provider that sends one word, then waits to be cancelled."""

    name = "slow"
    model = "slow-1"

    def __init__(self) -> None:
        self.first_word = asyncio.Event()

    async def stream(
        self, messages: list[ChatMessage], options: GenerationOptions
    ) -> AsyncIterator[Chunk]:
        yield Chunk(text="Partly")
        self.first_word.set()
        await asyncio.sleep(30)

    async def aclose(self) -> None:
        return None


def test_cancelling_an_ask_records_the_turn_off_the_event_loop(sample_vault: Vault) -> None:
    """While another process holds the vault lock, a cancelled ask waits for it to record
    the turn; the event loop it was asked on must go on running meanwhile."""
    provider = _SlowToStart()
    session = LoreSession(sample_vault, provider)  # type: ignore[arg-type]
    holder_ready, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:
        other = Vault.open(sample_vault.root)
        try:
            with other.lock():
                holder_ready.set()
                release.wait(10)
        finally:
            other.close()

    async def scenario() -> int:
        async def consume() -> None:
            async for _ in session.ask("What are Jupiter's storms?"):
                pass

        task = asyncio.create_task(consume())
        await provider.first_word.wait()
        holder = threading.Thread(target=hold_the_lock)
        holder.start()
        await asyncio.to_thread(holder_ready.wait, 10)
        task.cancel()
        ticks = 0
        started = time.monotonic()
        while time.monotonic() - started < 0.5:
            await asyncio.sleep(0.01)
            ticks += 1
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.to_thread(holder.join, 10)
        return ticks

    ticks = asyncio.run(scenario())
    # Recording blocked on the lock for half a second; the loop ticked throughout.
    assert ticks > 10
    last = session.history.tail(1)[0]
    assert last.status == "cancelled" and last.answer == "Partly"
