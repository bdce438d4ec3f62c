"""Any OpenAI-compatible server: `/v1/chat/completions` with server-sent events.

Each event is a `data: {json}` line holding a delta; `data: [DONE]` ends the stream. Usage
comes in a last event with empty `choices` when `stream_options.include_usage` is asked for;
servers that do not know that option get the request once more without it. The API key is
read from the environment variable named by `provider.api_key_env`, never from lore.yaml.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import httpx

from lore.config import ProviderSettings
from lore.core.json_decode import decode_json
from lore.core.providers.base import ChatMessage, Chunk, GenerationOptions, Usage
from lore.core.providers.http_common import (
    LineReader,
    ProviderClient,
    StreamFailure,
    error_message_of,
    non_negative_int,
    open_stream,
    origin_of,
    parse_json_line,
    status_error,
)
from lore.errors import ConfigError, ProviderAuthError, ProviderError

DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
LABEL = "the OpenAI-compatible server"


def chat_completions_url(base_url: str) -> str:
    """`/chat/completions` under the API root; a bare host gets the conventional `/v1`."""
    base = base_url.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    if urlsplit(base).path in ("", "/"):
        base = f"{base}/v1"
    return f"{base}/chat/completions"


class _StreamOptionsRejected(ProviderError):
    """The server refused `stream_options`; the request is sent again without it."""


class OpenAICompatProvider:
    name = "openai"

    def __init__(
        self, settings: ProviderSettings, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.settings = settings
        self.model = settings.model
        self.base_url = (settings.base_url or DEFAULT_OPENAI_URL).rstrip("/")
        self.chat_url = chat_completions_url(self.base_url)
        self.api_key = os.environ.get(settings.api_key_env, "").strip()
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        self._client = ProviderClient(settings, headers=headers, transport=transport)
        self._failure = StreamFailure(LABEL, self.chat_url, settings)
        self._include_usage = True

    def request_body(
        self, messages: list[ChatMessage], options: GenerationOptions | None
    ) -> dict[str, Any]:
        options = options or GenerationOptions(temperature=self.settings.temperature)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [message.to_dict() for message in messages],
            "stream": True,
            "temperature": options.temperature,
        }
        if options.max_tokens:
            body["max_tokens"] = options.max_tokens
        if self._include_usage:
            body["stream_options"] = {"include_usage": True}
        return body

    async def stream(
        self, messages: list[ChatMessage], options: GenerationOptions | None = None
    ) -> AsyncIterator[Chunk]:
        if not self.model:
            raise ConfigError("provider.model is empty: set it in lore.yaml or pass --model")
        if not self.api_key and self.base_url == DEFAULT_OPENAI_URL:
            raise ProviderAuthError(
                f"the OpenAI API needs a key: set the environment variable "
                f"{self.settings.api_key_env} (provider.api_key_env in lore.yaml names it)"
            )
        try:
            async for chunk in self._stream_once(messages, options):
                yield chunk
        except _StreamOptionsRejected:
            self._include_usage = False
            async for chunk in self._stream_once(messages, options):
                yield chunk

    async def _stream_once(
        self, messages: list[ChatMessage], options: GenerationOptions | None
    ) -> AsyncIterator[Chunk]:
        finished = False
        usage = Usage()
        async with open_stream(
            self._client,
            self._failure,
            self.chat_url,
            self.request_body(messages, options),
            on_status=self._status_error,
        ) as response:
            if response.headers.get("content-type", "").startswith("application/json"):
                # A server that ignores `stream` answers with one whole completion.
                async for chunk in self._whole_reply(response):
                    yield chunk
                return
            reader = LineReader(response, self._failure)
            async for data in _events(reader):
                if data is None:
                    yield Chunk(usage=usage, done=True)
                    return
                if data.get("error"):
                    raise ProviderError(
                        f"{LABEL} stopped with an error: "
                        f"{error_message_of(json.dumps(data).encode())}"
                    )
                usage = _usage_of(data) or usage
                for choice in data.get("choices") or []:
                    if not isinstance(choice, dict):
                        continue
                    delta = choice.get("delta") or {}
                    text = delta.get("content") if isinstance(delta, dict) else None
                    if isinstance(text, str) and text:
                        reader.got_text(text)
                        yield Chunk(text=text)
                    if choice.get("finish_reason"):
                        finished = True
            # The connection closed without `[DONE]`: complete only if the model had finished.
            if not finished:
                raise self._failure.cut_off(reader.received_chars)
            yield Chunk(usage=usage, done=True)

    async def _whole_reply(self, response: httpx.Response) -> AsyncIterator[Chunk]:
        try:
            data = decode_json(await response.aread())
            text = data["choices"][0]["message"]["content"] or ""
        except httpx.HTTPError as exc:
            raise self._failure.during_stream(exc, 0) from None
        except (ValueError, KeyError, IndexError, TypeError):
            raise ProviderError(f"{LABEL} answered in a shape Lore does not understand") from None
        if text:
            yield Chunk(text=str(text))
        yield Chunk(usage=_usage_of(data) or Usage(), done=True)

    def _status_error(self, status: int, message: str) -> ProviderError:
        if status == 400 and self._include_usage and "stream_options" in message:
            return _StreamOptionsRejected(message)
        env = self.settings.api_key_env
        key_hint = (
            f"check the key in ${env}"
            if self.api_key
            else f"set the environment variable {env} to the server's API key"
        )
        return status_error(
            LABEL, origin_of(self.base_url), status, message, model=self.model, key_hint=key_hint
        )

    async def aclose(self) -> None:
        await self._client.aclose()


async def _events(reader: LineReader) -> AsyncIterator[dict[str, Any] | None]:
    """The JSON payload of each server-sent event; None for `[DONE]`."""
    data_lines: list[str] = []
    while True:
        line = await reader.next_line()
        if line is None or not line.strip():
            # A blank line ends an event, and the end of the body ends the last one.
            if data_lines:
                payload = "\n".join(data_lines)
                data_lines = []
                if payload.strip() == "[DONE]":
                    yield None
                    return
                yield parse_json_line(payload, LABEL)
            if line is None:
                return
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data_lines.append(value[1:] if value.startswith(" ") else value)


def _usage_of(data: dict[str, Any]) -> Usage | None:
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    return Usage(
        prompt_tokens=non_negative_int(usage.get("prompt_tokens")),
        completion_tokens=non_negative_int(usage.get("completion_tokens")),
    )
