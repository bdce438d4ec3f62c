"""What only Ollama does: the context window on every request, its own host variable, tags."""

from __future__ import annotations

import pytest

from lore.config import ProviderSettings, settings_from
from lore.core.providers.base import ChatMessage, GenerationOptions, collect
from lore.core.providers.ollama import DEFAULT_OLLAMA_URL, OllamaProvider
from lore.errors import ModelNotFound
from servers import FakeModelServer, fake_server

__all__ = ["fake_server"]

QUESTION = [ChatMessage("user", "hello")]


def ollama(server: FakeModelServer, **overrides: object) -> OllamaProvider:
    values: dict[str, object] = {"name": "ollama", "model": "llama3", "base_url": server.url}
    values.update(overrides)
    return OllamaProvider(settings_from(ProviderSettings, values))


async def test_context_window_is_set_so_the_server_never_truncates(
    fake_server: FakeModelServer,
) -> None:
    provider = ollama(fake_server)
    await collect(provider, QUESTION, GenerationOptions(context_tokens=4896, max_tokens=800))
    options = fake_server.chat_requests[0].body["options"]
    assert options["num_ctx"] == 4896
    assert options["num_predict"] == 800


async def test_configured_temperature_is_used_when_no_options_are_given(
    fake_server: FakeModelServer,
) -> None:
    await collect(ollama(fake_server, temperature=1.3), QUESTION)
    assert fake_server.chat_requests[0].body["options"]["temperature"] == 1.3


async def test_reported_token_counts_come_from_eval_counts(fake_server: FakeModelServer) -> None:
    reply = await collect(ollama(fake_server), QUESTION)
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (42, 4)


async def test_missing_model_says_how_to_get_it(fake_server: FakeModelServer) -> None:
    with pytest.raises(ModelNotFound) as caught:
        await collect(ollama(fake_server, model="mistral"), QUESTION)
    assert "ollama pull mistral" in str(caught.value)
    assert "installed: gpt-test, llama3" in str(caught.value)


async def test_installed_models_are_listed(fake_server: FakeModelServer) -> None:
    assert await ollama(fake_server).installed_models() == ["gpt-test", "llama3"]


def test_ollama_host_variable_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = ProviderSettings(name="ollama", model="llama3")
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    assert OllamaProvider(settings).chat_url == f"{DEFAULT_OLLAMA_URL}/api/chat"
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0:11500")
    assert OllamaProvider(settings).chat_url == "http://127.0.0.1:11500/api/chat"
    explicit = ProviderSettings(name="ollama", model="llama3", base_url="http://gpu-box:11434/")
    assert OllamaProvider(explicit).chat_url == "http://gpu-box:11434/api/chat"
