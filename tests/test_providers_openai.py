"""What only OpenAI-compatible servers do: keys from the environment, usage events, URL roots."""

from __future__ import annotations

import httpx
import pytest

from lore.config import ProviderSettings, settings_from
from lore.core.providers.base import ChatMessage, collect
from lore.core.providers.openai_compat import OpenAICompatProvider, chat_completions_url
from lore.errors import ProviderAuthError, ProviderError, StreamInterrupted
from servers import FakeModelServer, Script, fake_server

__all__ = ["fake_server"]

QUESTION = [ChatMessage("user", "hello")]
SECRET = "sk-test-0123456789"


def openai(url: str, **overrides: object) -> OpenAICompatProvider:
    values: dict[str, object] = {"name": "openai", "model": "gpt-test", "base_url": url}
    values.update(overrides)
    return OpenAICompatProvider(settings_from(ProviderSettings, values))


async def test_key_is_read_from_the_variable_named_in_the_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOCAL_LLM_KEY", SECRET)
    with FakeModelServer(api_key=SECRET) as server:
        reply = await collect(openai(server.url, api_key_env="LOCAL_LLM_KEY"), QUESTION)
        assert reply.text == "Hello, world."
        assert server.chat_requests[0].headers["Authorization"] == f"Bearer {SECRET}"


async def test_refused_key_names_the_variable_and_never_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOCAL_LLM_KEY", "sk-wrong-key")
    with FakeModelServer(api_key=SECRET) as server, pytest.raises(ProviderAuthError) as caught:
        await collect(openai(server.url, api_key_env="LOCAL_LLM_KEY"), QUESTION)
    message = str(caught.value)
    assert "401" in message
    assert "LOCAL_LLM_KEY" in message
    assert "sk-wrong-key" not in message


async def test_missing_key_for_a_server_that_wants_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCAL_LLM_KEY", raising=False)
    with FakeModelServer(api_key=SECRET) as server:
        with pytest.raises(ProviderAuthError, match="set the environment variable LOCAL_LLM_KEY"):
            await collect(openai(server.url, api_key_env="LOCAL_LLM_KEY"), QUESTION)
        assert "Authorization" not in server.chat_requests[0].headers


async def test_hosted_api_without_a_key_fails_before_sending(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    provider = OpenAICompatProvider(ProviderSettings(name="openai", model="gpt-4o-mini"))
    with pytest.raises(ProviderAuthError, match="OPENAI_API_KEY"):
        await collect(provider, QUESTION)


async def test_usage_is_asked_for_and_reported(fake_server: FakeModelServer) -> None:
    reply = await collect(openai(fake_server.url), QUESTION)
    assert fake_server.chat_requests[0].body["stream_options"] == {"include_usage": True}
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (42, 4)


async def test_server_that_rejects_stream_options_is_asked_again_without() -> None:
    with FakeModelServer(reject_stream_options=True) as server:
        provider = openai(server.url)
        reply = await collect(provider, QUESTION)
        assert reply.text == "Hello, world."
        assert reply.usage.prompt_tokens is None
        assert [("stream_options" in r.body) for r in server.chat_requests] == [True, False]
        # It remembers, so later asks do not pay for the refusal again.
        await collect(provider, QUESTION)
        assert len(server.chat_requests) == 3


async def test_server_that_ignores_streaming_still_answers(fake_server: FakeModelServer) -> None:
    fake_server.reply(Script(pieces=["All ", "at once."], whole_json=True))
    reply = await collect(openai(fake_server.url), QUESTION)
    assert reply.text == "All at once."
    assert reply.usage.completion_tokens == 4


async def test_wrong_path_points_at_the_base_url(fake_server: FakeModelServer) -> None:
    with pytest.raises(ProviderError, match=r"provider\.base_url"):
        await collect(openai(f"{fake_server.url}/api/v2"), QUESTION)


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1/chat/completions"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/v1/chat/completions"),
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1/chat/completions"),
        ("https://openrouter.ai/api/v1/", "https://openrouter.ai/api/v1/chat/completions"),
        ("http://h/v1/chat/completions", "http://h/v1/chat/completions"),
    ],
)
def test_chat_url_from_base_url(base_url: str, expected: str) -> None:
    assert chat_completions_url(base_url) == expected


def sse_transport(body: bytes) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Type": "text/event-stream"}, content=body)

    return httpx.MockTransport(answer)


async def test_events_in_any_legal_shape_are_read() -> None:
    # CRLF line ends, an `event:` field, data without the space, one JSON split over two
    # data lines, a comment, and role-only and reasoning deltas that carry no answer text.
    body = (
        b": hello\r\n\r\n"
        b'data: {"choices":[{"delta":{"role":"assistant"}}]}\r\n\r\n'
        b'data: {"choices":[{"delta":{"reasoning_content":"hmm"}}]}\r\n\r\n'
        b"event: message\r\n"
        b'data:{"choices":[{"delta":{"content":"Fine"}}]}\r\n\r\n'
        b'data: {"choices":[{"delta":\n'
        b'data: {"content":", thanks."},"finish_reason":"stop"}]}\n\n'
        b'data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}\n\n'
        b"data: [DONE]\n\n"
    )
    settings = ProviderSettings(name="openai", model="m", base_url="http://127.0.0.1:9")
    provider = OpenAICompatProvider(settings, transport=sse_transport(body))
    reply = await collect(provider, QUESTION)
    assert reply.text == "Fine, thanks."
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (7, 3)


async def test_finished_reply_without_done_marker_is_complete() -> None:
    # Some servers close the stream after the finishing chunk without sending [DONE].
    body = b'data: {"choices":[{"delta":{"content":"Yes."},"finish_reason":"stop"}]}\n\n'
    settings = ProviderSettings(name="openai", model="m", base_url="http://127.0.0.1:9")
    provider = OpenAICompatProvider(settings, transport=sse_transport(body))
    assert (await collect(provider, QUESTION)).text == "Yes."


async def test_keep_alive_comments_alone_are_a_stall(fake_server: FakeModelServer) -> None:
    fake_server.reply(Script(ping_after=1))
    with pytest.raises(StreamInterrupted, match="stalled"):
        await collect(openai(fake_server.url, stall_timeout_s=0.4), QUESTION)
