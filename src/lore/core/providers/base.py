"""The contract every model provider meets: chat messages in, an async stream of chunks out.

The app, the line REPL, the command line and ingestion all consume the same iterator, so a
provider is written once. Offline, Ollama and OpenAI-compatible providers implement it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import field
from typing import Literal, Protocol, runtime_checkable

from lore.core.dataclass_lite import dataclass_lite, dataclass_own_init

Role = Literal["system", "user", "assistant"]


@dataclass_own_init(frozen=True)
class ChatMessage:
    """One message of a chat, and who it is from."""

    role: Role
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass_lite
class Usage:
    """Token counts as the server reported them (None where it did not say)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass_own_init
class Chunk:
    """A piece of a streamed reply. The last chunk of a stream carries `usage` and `done`."""

    text: str = ""
    usage: Usage | None = None
    done: bool = False


@dataclass_lite
class Reply:
    """A whole reply and its token counts, gathered from a stream."""

    text: str
    usage: Usage = field(default_factory=Usage)


@dataclass_lite
class GenerationOptions:
    """How a provider should answer: the temperature, the longest reply, and the context window
    to ask for."""

    temperature: float = 0.2
    max_tokens: int | None = None
    # The context window the server must allow, so it never truncates the prompt silently.
    context_tokens: int | None = None


@runtime_checkable
class Provider(Protocol):
    name: str
    model: str

    def stream(
        self, messages: list[ChatMessage], options: GenerationOptions | None = None
    ) -> AsyncIterator[Chunk]: ...

    async def aclose(self) -> None: ...


async def collect(
    provider: Provider, messages: list[ChatMessage], options: GenerationOptions | None = None
) -> Reply:
    """Run a stream to its end and return the whole reply."""
    parts: list[str] = []
    usage = Usage()
    async for chunk in provider.stream(messages, options):
        parts.append(chunk.text)
        if chunk.usage is not None:
            usage = chunk.usage
    return Reply(text="".join(parts), usage=usage)
