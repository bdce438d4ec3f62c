"""The record of one ask: what was asked, what came back, what it cost. One JSONL line each."""

from __future__ import annotations

import secrets
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lore.core.tokens import reported_or_estimated

TURN_RECORD_VERSION = 1
TurnStatus = Literal["ok", "cancelled", "error"]


def new_turn_id() -> str:
    """Time-ordered, so ids sort in the order turns were asked."""
    return f"t{int(time.time() * 1000):011x}{secrets.token_hex(3)}"


def new_conversation_id() -> str:
    """Time-ordered and random, like turn ids: a conversation is named once, when it starts."""
    return f"c{int(time.time() * 1000):011x}{secrets.token_hex(3)}"


class TurnUsage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    # Lore's own estimate (lore.core.tokens), always present.
    estimated_prompt_tokens: int = 0
    estimated_completion_tokens: int = 0
    # What the provider reported, where it did.
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @property
    def prompt_in(self) -> int:
        return reported_or_estimated(self.prompt_tokens, self.estimated_prompt_tokens)

    @property
    def reply_out(self) -> int:
        return reported_or_estimated(self.completion_tokens, self.estimated_completion_tokens)


class TurnTimings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    retrieval_ms: float = 0.0
    first_token_ms: float | None = None
    total_ms: float = 0.0


class Turn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    v: int = TURN_RECORD_VERSION
    id: str = Field(default_factory=new_turn_id)
    time: str
    question: str
    resolved_question: str = ""
    answer: str = ""
    cited: list[str] = Field(default_factory=list)
    provider: str = "offline"
    model: str = ""
    usage: TurnUsage = Field(default_factory=TurnUsage)
    timings: TurnTimings = Field(default_factory=TurnTimings)
    status: TurnStatus = "ok"
    error: str | None = None
    # The conversation the turn belongs to: follow-ups are read only within one. Empty for
    # turns recorded before conversations had ids.
    conversation: str = ""

    def to_record(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Turn | None:
        """A turn from a history line, or None for a line that is not one."""
        try:
            return cls.model_validate(record)
        except Exception:
            return None
