"""Ollama: `/api/chat` with NDJSON streaming, one JSON object per line.

The context window is set on every request (`options.num_ctx`) because Ollama otherwise
keeps its own default and silently drops the start of a longer prompt. The last line of a
stream has `done: true` and the server's token counts (`prompt_eval_count`, `eval_count`);
a stream that ends without it was cut off.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import httpx

from lore.config import ProviderSettings
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
from lore.errors import ConfigError, ModelNotFound, ProviderError

DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
LABEL = "ollama"


def default_base_url() -> str:
    """Ollama's own `OLLAMA_HOST` when set (as `ollama serve` reads it), else the default."""
    host = os.environ.get("OLLAMA_HOST", "").strip()
    if not host:
        return DEFAULT_OLLAMA_URL
    if "://" not in host:
        host = f"http://{host}"
    # The server listens on every interface; a client connects to this machine.
    return host.replace("://0.0.0.0", "://127.0.0.1")


class OllamaProvider:
    name = "ollama"

    def __init__(
        self, settings: ProviderSettings, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.settings = settings
        self.model = settings.model
        self.base_url = (settings.base_url or default_base_url()).rstrip("/")
        self.chat_url = f"{self.base_url}/api/chat"
        self._client = ProviderClient(settings, transport=transport)
        self._failure = StreamFailure(LABEL, self.base_url, settings)

    def request_body(
        self, messages: list[ChatMessage], options: GenerationOptions | None
    ) -> dict[str, Any]:
        options = options or GenerationOptions(temperature=self.settings.temperature)
        server_options: dict[str, Any] = {"temperature": options.temperature}
        if options.context_tokens:
            server_options["num_ctx"] = options.context_tokens
        if options.max_tokens:
            server_options["num_predict"] = options.max_tokens
        return {
            "model": self.model,
            "messages": [message.to_dict() for message in messages],
            "stream": True,
            "options": server_options,
        }

    async def stream(
        self, messages: list[ChatMessage], options: GenerationOptions | None = None
    ) -> AsyncIterator[Chunk]:
        if not self.model:
            raise ConfigError(
                "provider.model is empty: set it in lore.yaml or pass --model "
                "(`ollama list` shows the models you have)"
            )
        try:
            async for chunk in self._stream_reply(messages, options):
                yield chunk
        except ModelNotFound as exc:
            raise ModelNotFound(exc.message + await self._installed_hint()) from None

    async def _stream_reply(
        self, messages: list[ChatMessage], options: GenerationOptions | None
    ) -> AsyncIterator[Chunk]:
        async with open_stream(
            self._client,
            self._failure,
            self.chat_url,
            self.request_body(messages, options),
            on_status=self._status_error,
        ) as response:
            reader = LineReader(response, self._failure)
            while True:
                line = await reader.next_line()
                if line is None:
                    raise self._failure.cut_off(reader.received_chars)
                if not line.strip():
                    continue
                data = parse_json_line(line, LABEL)
                if data.get("error"):
                    raise self._in_stream_error(str(data["error"]))
                message = data.get("message")
                text = message.get("content") if isinstance(message, dict) else None
                if isinstance(text, str) and text:
                    reader.got_text(text)
                    yield Chunk(text=text)
                if data.get("done"):
                    yield Chunk(
                        usage=Usage(
                            prompt_tokens=non_negative_int(data.get("prompt_eval_count")),
                            completion_tokens=non_negative_int(data.get("eval_count")),
                        ),
                        done=True,
                    )
                    return

    def _status_error(self, status: int, message: str) -> ProviderError:
        error = status_error(
            LABEL,
            origin_of(self.base_url),
            status,
            message,
            model=self.model,
            key_hint="check the proxy or credentials in front of the server",
        )
        if isinstance(error, ModelNotFound):
            return ModelNotFound(
                f"ollama at {origin_of(self.base_url)} has no model {self.model!r}: "
                f"run `ollama pull {self.model}` or pick one from `ollama list`"
            )
        return error

    def _in_stream_error(self, message: str) -> ProviderError:
        return ProviderError(f"ollama stopped with an error: {error_message_of(message.encode())}")

    async def _installed_hint(self) -> str:
        try:
            models = await self.installed_models()
        except ProviderError:
            return ""
        if not models:
            return " (no models are installed yet)"
        return f" (installed: {', '.join(models)})"

    async def installed_models(self) -> list[str]:
        """The models the server has, from `/api/tags` (for `/model` and error hints)."""
        try:
            response = await self._client.get().get(f"{self.base_url}/api/tags")
        except httpx.HTTPError as exc:
            raise self._failure.unreachable(exc) from None
        if response.status_code >= 400:
            raise self._status_error(response.status_code, error_message_of(response.content))
        try:
            models = response.json().get("models", [])
        except (ValueError, AttributeError):
            return []
        return sorted(
            str(entry["name"]) for entry in models if isinstance(entry, dict) and "name" in entry
        )

    async def aclose(self) -> None:
        await self._client.aclose()
