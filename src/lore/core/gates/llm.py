"""Asking a model for structured data without trusting it: fenced input, strict replies.

Untrusted text goes to the model between markers that carry a fresh random nonce, so the text
cannot close the fence it sits in. The reply must parse into a pydantic model; a reply that
does not, after a bounded number of tries, is a failure the caller must treat as "no".
"""

from __future__ import annotations

import json
import re
import secrets
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from lore.core.async_runner import AsyncRunner
from lore.core.json_decode import decode_json
from lore.core.providers.base import ChatMessage, GenerationOptions, Provider, collect
from lore.errors import LoreError

__all__ = ["AsyncRunner", "ReplyRejected", "ask_structured", "fence", "parse_reply"]

Model = TypeVar("Model", bound=BaseModel)
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
        data = decode_json(text)
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
