"""Follow-ups only within one conversation: the app and each REPL are one, a terminal's
`lore ask` continues its own while it is recent, and two terminals never follow up each other."""

from __future__ import annotations

import hashlib
import json

import pytest

from lore.cli import main
from lore.core import conversations
from lore.core.ask import AskEngine, AskFinished
from lore.core.history import HistoryStore
from lore.core.providers.offline import OfflineProvider
from lore.core.vault import Vault

SATURN = "Which moons of Saturn have thick atmospheres?"


async def _ask(engine: AskEngine, question: str) -> AskFinished:
    finished = None
    async for event in engine.ask(question):
        if isinstance(event, AskFinished):
            finished = event
    assert finished is not None
    return finished


async def test_each_engine_is_a_conversation_of_its_own(sample_vault: Vault) -> None:
    app = AskEngine(sample_vault, OfflineProvider())
    repl = AskEngine(sample_vault, OfflineProvider())
    first = await _ask(app, SATURN)
    # The other session asks right after: it does not lean on the first one's question.
    other = await _ask(repl, "how big is it?")
    assert not other.pack.followup
    assert not other.pack.section("recent_turns").items
    # The first session's own follow-up still does.
    again = await _ask(app, "how big is it?")
    assert again.pack.followup and "Saturn" in again.turn.resolved_question
    assert [item.ref for item in again.pack.section("recent_turns").items] == [first.turn.id]
    turns = HistoryStore(sample_vault).tail(3)
    assert turns[0].conversation == turns[2].conversation == app.conversation
    assert turns[1].conversation == repl.conversation != app.conversation


async def test_questions_that_stand_alone_are_not_read_as_follow_ups(sample_vault: Vault) -> None:
    engine = AskEngine(sample_vault, OfflineProvider())
    await _ask(engine, SATURN)
    for question in ("What is Titan?", "hi", "Describe Pluto"):
        finished = await _ask(engine, question)
        assert not finished.pack.followup, question
        assert finished.turn.resolved_question == question
    pluto = sample_vault.find("Pluto")
    assert finished.pack.notes()[0].ref == pluto.id
    # Every note it sends is one that speaks of Pluto, not the Saturn of the earlier question.
    for item in finished.pack.notes():
        assert "pluto" in item.why.lower() or "pluto" in item.label.lower(), item.label
    assert finished.turn.cited[0] == pluto.id


def _run(capsys: pytest.CaptureFixture[str], vault: Vault, *args: str) -> dict[str, object]:
    code = main(["--vault", str(vault.root), *args, "--json"])
    assert code == 0
    data: dict[str, object] = json.loads(capsys.readouterr().out)
    return data


def _followup(data: dict[str, object]) -> bool:
    turn = data["turn"]
    assert isinstance(turn, dict)
    return bool(turn["resolved_question"]) and "following up on" in str(turn["resolved_question"])


def test_a_terminal_continues_its_recent_conversation_and_only_its_own(
    capsys: pytest.CaptureFixture[str], sample_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = {"key": "first-terminal"}
    monkeypatch.setattr(conversations, "terminal_key", lambda: terminal["key"])
    _run(capsys, sample_vault, "ask", SATURN)
    assert _followup(_run(capsys, sample_vault, "ask", "how big is it?"))
    # Another terminal asking at the same time starts its own conversation.
    terminal["key"] = "second-terminal"
    assert not _followup(_run(capsys, sample_vault, "ask", "how big is it?"))
    # --new starts afresh even within the window; the preview agrees with the next ask.
    terminal["key"] = "first-terminal"
    assert not _followup(_run(capsys, sample_vault, "ask", "--new", "how big is it?"))
    context = _run(capsys, sample_vault, "context", "--new", "how big is it?")
    assert not context["followup"]


def test_after_the_window_only_continue_follows_up(
    capsys: pytest.CaptureFixture[str], sample_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conversations, "terminal_key", lambda: "a-terminal")
    _run(capsys, sample_vault, "ask", SATURN)
    real_time = conversations.time.time
    later = real_time() + conversations.CONTINUE_WINDOW_S + 60
    monkeypatch.setattr(conversations.time, "time", lambda: later)
    assert not _run(capsys, sample_vault, "context", "how big is it?")["followup"]
    assert _run(capsys, sample_vault, "context", "-c", "how big is it?")["followup"]
    assert _followup(_run(capsys, sample_vault, "ask", "--continue", "how big is it?"))


def test_continue_in_a_new_terminal_takes_the_latest_conversation(
    capsys: pytest.CaptureFixture[str], sample_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = {"key": "old"}
    monkeypatch.setattr(conversations, "terminal_key", lambda: terminal["key"])
    _run(capsys, sample_vault, "ask", SATURN)
    terminal["key"] = "new"
    assert _run(capsys, sample_vault, "context", "-c", "how big is it?")["followup"]
    assert not _run(capsys, sample_vault, "context", "how big is it?")["followup"]


def test_the_terminal_key_is_the_sha256_it_always_was() -> None:
    # Made without hashlib, it must still be hashlib's digest, or every terminal's
    # conversation would be forgotten once.
    for data in (b"", b"host\0session 42\0/dev/pts/3", "hôte".encode()):
        assert conversations._sha256_hex(data) == hashlib.sha256(data).hexdigest()
    key = conversations.terminal_key()
    assert len(key) == 16 and int(key, 16) >= 0
