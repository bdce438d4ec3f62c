"""Asking a model for structured data without trusting it: fenced input, strict replies.

Untrusted text goes to the model between markers that carry a fresh random nonce, so the text
cannot close the fence it sits in. The reply must parse into a pydantic model; a reply that
does not, after a bounded number of tries, is a failure the caller must treat as "no".
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from lore.core.providers.base import ChatMessage, GenerationOptions, Provider, collect
from lore.errors import LoreError

Model = TypeVar("Model", bound=BaseModel)
T = TypeVar("T")
_FENCED_JSON = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class ReplyRejected(Exception):
    """The model's reply could not be used; `reason` says why in one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def fence(text: str, label: str) -> tuple[str, str]:
    """(fenced text, nonce). The nonce is new for every call."""
    nonce = secrets.token_hex(8)
    return f"<<<{label} {nonce}>>>\n{text}\n<<<END {label} {nonce}>>>", nonce


def parse_reply(reply: str, model: type[Model], nonce: str) -> Model:
    if nonce in reply:
        raise ReplyRejected("the reply repeats the fence marker")
    text = reply.strip()
    fenced = _FENCED_JSON.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReplyRejected(f"the reply is not JSON ({exc.msg})") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "reply"
        raise ReplyRejected(f"the reply does not fit: {where}: {first['msg']}") from None


async def ask_structured(
    provider: Provider,
    messages: list[ChatMessage],
    model: type[Model],
    nonce: str,
    retries: int,
) -> Model:
    """The parsed reply, or ReplyRejected once 1 + `retries` attempts have all failed."""
    last = "no reply"
    options = GenerationOptions(temperature=0.0)
    for _ in range(retries + 1):
        try:
            reply = await collect(provider, messages, options)
        except LoreError as exc:
            last = f"the provider failed: {exc.message}"
            continue
        try:
            return parse_reply(reply.text, model, nonce)
        except ReplyRejected as exc:
            last = exc.reason
    raise ReplyRejected(f"{last} (after {retries + 1} attempts)")


class AsyncRunner:
    """One event loop on a private thread, so synchronous code can await a provider.

    A provider's HTTP client belongs to the loop it was first used on; keeping one loop for
    a whole ingest lets every call reuse it.
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="lore-provider", daemon=True)
            thread.start()
            self._loop, self._thread = loop, thread
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def close(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._loop.close()
            self._loop = None
            self._thread = None
