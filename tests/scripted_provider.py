"""A provider that answers each request with the next scripted reply, and keeps the requests."""

from __future__ import annotations

from collections.abc import AsyncIterator

from lore.core.providers.base import ChatMessage, Chunk, GenerationOptions, Usage


class ScriptedReplies:
    name = "fake"
    model = "fake-1"

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.requests: list[list[ChatMessage]] = []

    async def stream(
        self, messages: list[ChatMessage], options: GenerationOptions | None = None
    ) -> AsyncIterator[Chunk]:
        self.requests.append(messages)
        reply = self.replies.pop(0) if self.replies else "not json"
        yield Chunk(text=reply)
        yield Chunk(done=True, usage=Usage(1, 1))

    async def aclose(self) -> None:
        pass
