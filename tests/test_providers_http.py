"""Both HTTP providers against a local server: streaming, usage, and every way a server fails."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest

from lore.config import ProviderSettings, settings_from
from lore.core.providers.base import ChatMessage, Chunk, GenerationOptions, Provider, collect
from lore.core.providers.factory import make_provider
from lore.errors import (
    ConfigError,
    ModelNotFound,
    ProviderError,
    ProviderReplyInvalid,
    ProviderUnavailable,
    StreamInterrupted,
)
from servers import FakeModelServer, Script, fake_server, refused_url

__all__ = ["fake_server"]

MESSAGES = [
    ChatMessage("system", "Answer from the evidence."),
    ChatMessage("user", "What is the largest planet?"),
]
MODELS = {"ollama": "llama3", "openai": "gpt-test"}

MakeProvider = Callable[..., Provider]


@pytest.fixture(params=["ollama", "openai"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make(kind: str, fake_server: FakeModelServer) -> MakeProvider:
    def build(**overrides: object) -> Provider:
        values: dict[str, object] = {
            "name": kind,
            "model": MODELS[kind],
            "base_url": fake_server.url,
            "timeout_s": 2.0,
            "connect_timeout_s": 1.0,
            "retries": 0,
        }
        values.update(overrides)
        return make_provider(settings_from(ProviderSettings, values))

    return build


async def gather(provider: Provider, options: GenerationOptions | None = None) -> list[Chunk]:
    chunks: list[Chunk] = []
    try:
        async for chunk in provider.stream(MESSAGES, options):
            chunks.append(chunk)
    finally:
        await provider.aclose()
    return chunks


async def test_streams_pieces_in_order_then_usage(make: MakeProvider) -> None:
    chunks = await gather(make())
    assert "".join(c.text for c in chunks) == "Hello, world."
    assert len([c for c in chunks if c.text]) == 4
    last = chunks[-1]
    assert last.done and last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (42, 4)
    assert not any(c.done for c in chunks[:-1])


async def test_sends_the_conversation_and_temperature(
    make: MakeProvider, fake_server: FakeModelServer, kind: str
) -> None:
    await gather(make(), GenerationOptions(temperature=0.7, context_tokens=5000))
    body = fake_server.chat_requests[0].body
    assert body["messages"] == [m.to_dict() for m in MESSAGES]
    assert body["stream"] is True
    assert body["model"] == MODELS[kind]
    temperature = body["options"]["temperature"] if kind == "ollama" else body["temperature"]
    assert temperature == 0.7


async def test_server_not_running_is_one_clear_line(make: MakeProvider) -> None:
    url = refused_url()
    with pytest.raises(ProviderUnavailable) as caught:
        await gather(make(base_url=url))
    message = str(caught.value)
    assert "is the server running" in message
    assert url in message
    assert "\n" not in message


async def test_connection_errors_are_retried_until_the_server_comes_up(
    make: MakeProvider,
) -> None:
    url = refused_url()
    port = int(url.rsplit(":", 1)[1])
    started: list[FakeModelServer] = []

    def start_late() -> None:
        time.sleep(0.15)
        started.append(FakeModelServer(port=port).start())

    starter = threading.Thread(target=start_late)
    starter.start()
    try:
        chunks = await gather(make(base_url=url, retries=4))
    finally:
        starter.join()
        for server in started:
            server.stop()
    assert "".join(c.text for c in chunks) == "Hello, world."


async def test_retries_are_bounded(make: MakeProvider) -> None:
    began = time.monotonic()
    with pytest.raises(ProviderUnavailable):
        await gather(make(base_url=refused_url(), retries=2))
    # Two backoffs (0.25 s + 0.5 s), then it gives up rather than waiting for ever.
    assert 0.7 <= time.monotonic() - began < 3


async def test_server_error_is_reported_once_and_not_retried(
    make: MakeProvider, fake_server: FakeModelServer
) -> None:
    fake_server.reply(Script(status=500, error="CUDA out of memory"))
    with pytest.raises(ProviderError) as caught:
        await gather(make(retries=3))
    assert "500" in str(caught.value)
    assert "CUDA out of memory" in str(caught.value)
    assert len(fake_server.chat_requests) == 1


async def test_unknown_model_names_the_model(make: MakeProvider) -> None:
    with pytest.raises(ModelNotFound) as caught:
        await gather(make(model="no-such-model"))
    assert "no-such-model" in str(caught.value)


async def test_empty_model_is_a_config_error_before_any_request(
    make: MakeProvider, fake_server: FakeModelServer
) -> None:
    with pytest.raises(ConfigError, match=r"provider\.model"):
        await gather(make(model=""))
    assert fake_server.requests == []


async def test_reply_dropped_mid_stream_keeps_what_arrived(
    make: MakeProvider, fake_server: FakeModelServer
) -> None:
    fake_server.reply(Script(drop_after=2))
    provider = make()
    received: list[str] = []
    with pytest.raises(StreamInterrupted) as caught:
        async for chunk in provider.stream(MESSAGES):
            received.append(chunk.text)
    await provider.aclose()
    assert "".join(received) == "Hello, "
    assert "cut off after 7 characters" in str(caught.value)


async def test_stream_that_ends_without_done_is_cut_off(
    make: MakeProvider, fake_server: FakeModelServer
) -> None:
    fake_server.reply(Script(omit_done=True))
    with pytest.raises(StreamInterrupted, match="cut off"):
        await gather(make())


async def test_stalled_stream_gives_up_after_the_timeout(
    make: MakeProvider, fake_server: FakeModelServer
) -> None:
    fake_server.reply(Script(stall_after=1))
    began = time.monotonic()
    with pytest.raises(StreamInterrupted, match="stalled"):
        await gather(make(stall_timeout_s=0.3))
    assert time.monotonic() - began < 2


async def test_silent_server_gives_up_before_the_first_token(
    make: MakeProvider, fake_server: FakeModelServer
) -> None:
    fake_server.reply(Script(first_byte_delay_s=5))
    with pytest.raises(ProviderError, match="sent nothing") as caught:
        await gather(make(timeout_s=0.3))
    assert "timeout_s" in str(caught.value)


async def test_slow_first_byte_within_the_timeout_is_fine(
    make: MakeProvider, fake_server: FakeModelServer
) -> None:
    fake_server.reply(Script(first_byte_delay_s=0.2, piece_delay_s=0.05))
    chunks = await gather(make(timeout_s=1.0))
    assert "".join(c.text for c in chunks) == "Hello, world."


async def test_garbage_mid_stream_is_reported(
    make: MakeProvider, fake_server: FakeModelServer
) -> None:
    fake_server.reply(Script(garbage_after=2))
    with pytest.raises(StreamInterrupted, match="not JSON"):
        await gather(make())


async def test_error_sent_inside_the_stream_is_reported(
    make: MakeProvider, fake_server: FakeModelServer
) -> None:
    fake_server.reply(Script(stream_error="model runner crashed"))
    with pytest.raises(ProviderError, match="model runner crashed"):
        await gather(make())


async def test_consumer_stopping_early_closes_the_stream(
    make: MakeProvider, fake_server: FakeModelServer
) -> None:
    fake_server.reply(Script(pieces=["a"] * 50, piece_delay_s=0.02), Script())
    provider = make()
    stream = provider.stream(MESSAGES)
    first = await anext(stream)  # type: ignore[call-overload]
    await stream.aclose()  # type: ignore[attr-defined]
    assert first.text == "a"
    # The same provider answers the next ask normally.
    reply = await collect(provider, MESSAGES)
    await provider.aclose()
    assert reply.text == "Hello, world."


async def test_cancelling_the_task_stops_the_stream_promptly(
    make: MakeProvider, fake_server: FakeModelServer
) -> None:
    fake_server.reply(Script(pieces=["a"] * 200, piece_delay_s=0.05))
    provider = make()
    seen: list[str] = []

    async def consume() -> None:
        async for chunk in provider.stream(MESSAGES):
            seen.append(chunk.text)

    task = asyncio.create_task(consume())
    while not seen:
        await asyncio.sleep(0.01)
    task.cancel()
    began = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await task
    await provider.aclose()
    assert time.monotonic() - began < 0.5
    assert len(seen) < 200


def test_one_provider_serves_several_event_loops(make: MakeProvider) -> None:
    # The line REPL and the command line may run each ask in a fresh event loop.
    provider = make()
    first = asyncio.run(collect(provider, MESSAGES))
    second = asyncio.run(collect(provider, MESSAGES))
    assert first.text == second.text == "Hello, world."


async def test_connection_closed_before_any_text_says_so(
    make: MakeProvider, fake_server: FakeModelServer
) -> None:
    fake_server.reply(Script(drop_after=0))
    with pytest.raises(StreamInterrupted, match="closed the connection without answering"):
        await gather(make())


async def test_a_web_page_instead_of_a_stream_points_at_the_base_url(
    make: MakeProvider, fake_server: FakeModelServer
) -> None:
    fake_server.reply(Script(html_page=True))
    with pytest.raises(ProviderReplyInvalid, match=r"web page.*provider\.base_url"):
        await gather(make())


async def test_a_model_may_think_longer_than_the_stall_limit_before_its_first_token(
    make: MakeProvider, fake_server: FakeModelServer
) -> None:
    fake_server.reply(Script(first_piece_delay_s=0.5))
    chunks = await gather(make(timeout_s=3.0, stall_timeout_s=0.2))
    assert "".join(c.text for c in chunks) == "Hello, world."


async def test_silence_after_the_headers_and_before_any_text_is_given_up(
    make: MakeProvider, fake_server: FakeModelServer
) -> None:
    fake_server.reply(Script(stall_after=0))
    began = time.monotonic()
    with pytest.raises(ProviderError, match=r"sent nothing for 0\.3 s"):
        await gather(make(timeout_s=0.3))
    assert time.monotonic() - began < 2
