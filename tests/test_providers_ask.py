"""Asking through a real HTTP provider: what the server is sent, and what the turn records."""

from __future__ import annotations

import pytest

from lore.config import ProviderSettings
from lore.core.ask import AnswerDelta, AskEngine, AskFailed, AskFinished
from lore.core.history import HistoryStore
from lore.core.metrics import MetricsStore
from lore.core.providers.factory import make_provider
from lore.core.vault import Vault
from servers import FakeModelServer, Script, fake_server

__all__ = ["fake_server"]

QUESTION = "What is the Great Red Spot on Jupiter?"


def engine_for(vault: Vault, server: FakeModelServer, kind: str) -> AskEngine:
    model = "llama3" if kind == "ollama" else "gpt-test"
    settings = ProviderSettings(name=kind, model=model, base_url=server.url, timeout_s=2.0)
    return AskEngine(vault, provider=make_provider(settings))


@pytest.mark.parametrize("kind", ["ollama", "openai"])
async def test_reported_usage_is_recorded_beside_the_estimate(
    sample_vault: Vault, fake_server: FakeModelServer, kind: str
) -> None:
    fake_server.reply(Script(pieces=["The storm ", "is huge ", "[1]."], prompt_tokens=917))
    engine = engine_for(sample_vault, fake_server, kind)
    events = [event async for event in engine.ask(QUESTION)]
    finished = events[-1]
    assert isinstance(finished, AskFinished)
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == "The storm is huge [1]."
    turn = HistoryStore(sample_vault).tail(1)[0]
    assert turn.status == "ok"
    assert (turn.provider, turn.usage.prompt_tokens, turn.usage.completion_tokens) == (
        kind,
        917,
        4,
    )
    assert turn.usage.estimated_prompt_tokens == finished.pack.total_tokens > 0
    assert turn.timings.first_token_ms is not None
    metrics = MetricsStore(sample_vault).tail(1)[0]
    assert (metrics.prompt_tokens, metrics.estimated_prompt_tokens) == (
        917,
        finished.pack.total_tokens,
    )
    # The prompt the server saw is the pack, message for message.
    sent = fake_server.chat_requests[0].body["messages"]
    assert sent == [message.to_dict() for message in finished.pack.messages()]


async def test_ollama_context_window_covers_the_budget_and_the_reply(
    sample_vault: Vault, fake_server: FakeModelServer
) -> None:
    engine = engine_for(sample_vault, fake_server, "ollama")
    [event async for event in engine.ask(QUESTION)]
    ask = sample_vault.config.ask
    options = fake_server.chat_requests[0].body["options"]
    assert options["num_ctx"] == ask.budget_tokens + ask.reply_tokens
    assert options["temperature"] == sample_vault.config.provider.temperature


@pytest.mark.parametrize("kind", ["ollama", "openai"])
async def test_reply_cut_off_mid_stream_records_an_error_turn(
    sample_vault: Vault, fake_server: FakeModelServer, kind: str
) -> None:
    fake_server.reply(Script(drop_after=2))
    engine = engine_for(sample_vault, fake_server, kind)
    events = [event async for event in engine.ask(QUESTION)]
    failed = events[-1]
    assert isinstance(failed, AskFailed)
    assert "cut off" in failed.error_message
    turns = HistoryStore(sample_vault).tail(5)
    assert [turn.status for turn in turns] == ["error"]
    assert turns[0].error == failed.error_message


async def test_server_that_is_down_records_an_error_turn_and_history_stays_whole(
    sample_vault: Vault, fake_server: FakeModelServer
) -> None:
    engine = engine_for(sample_vault, fake_server, "ollama")
    [event async for event in engine.ask(QUESTION)]
    fake_server.stop()
    events = [event async for event in engine.ask("And its size?")]
    assert isinstance(events[-1], AskFailed)
    assert "is the server running" in events[-1].error_message
    assert [turn.status for turn in HistoryStore(sample_vault).tail(5)] == ["ok", "error"]
