"""The record of one ask: what was asked, what came back, what it cost. One JSONL line each.

Turns are plain dataclasses. Every ask and every `lore history` reads turns back, and as
pydantic models they cost those commands more than their own work: importing pydantic and
building the three models was about 100 ms of the 220 `lore history` took. A turn made in
code is as its annotations say (mypy checks the callers). A turn read from a record as Lore
writes it is taken as it is; any other record is validated by pydantic, imported only then
(lore.core.record_fields). A record that is not a turn reads as None, or raises
`RecordError` from `model_validate`, which keeps pydantic's name, as `model_copy` does.
"""

from __future__ import annotations

import time
from dataclasses import field, replace
from typing import Any, Literal

from lore.core import record_fields as read
from lore.core.dataclass_lite import dataclass_own_init
from lore.core.random_ids import random_hex
from lore.core.record_fields import ABSENT, RecordError
from lore.core.tokens import reported_or_estimated

TURN_RECORD_VERSION = 1
TurnStatus = Literal["ok", "cancelled", "error"]
_STATUSES = ("ok", "cancelled", "error")


def new_turn_id() -> str:
    """Time-ordered, so ids sort in the order turns were asked."""
    return f"t{int(time.time() * 1000):011x}{random_hex(3)}"


def new_conversation_id() -> str:
    """Time-ordered and random, like turn ids: a conversation is named once, when it starts."""
    return f"c{int(time.time() * 1000):011x}{random_hex(3)}"


# -- the records ---------------------------------------------------------------------------


@dataclass_own_init(slots=True, kw_only=True)
class TurnUsage:
    """The tokens a turn's prompt and reply took: Lore's estimate, and the provider's count
    where it gave one."""

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

    def to_record(self) -> dict[str, Any]:
        return {
            "estimated_prompt_tokens": self.estimated_prompt_tokens,
            "estimated_completion_tokens": self.estimated_completion_tokens,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }

    @classmethod
    def as_written(cls, value: Any) -> TurnUsage:
        if isinstance(value, TurnUsage):
            return value
        if type(value) is not dict:
            raise read.NotAsWritten
        get = value.get
        return cls(
            estimated_prompt_tokens=read.as_written(get("estimated_prompt_tokens", 0), int),
            estimated_completion_tokens=read.as_written(get("estimated_completion_tokens", 0), int),
            prompt_tokens=read.optional(get("prompt_tokens"), int),
            completion_tokens=read.optional(get("completion_tokens"), int),
        )


@dataclass_own_init(slots=True, kw_only=True)
class TurnTimings:
    """How long a turn took in milliseconds: to retrieve, to the reply's first token, and in all."""

    retrieval_ms: float = 0.0
    first_token_ms: float | None = None
    total_ms: float = 0.0

    def to_record(self) -> dict[str, Any]:
        return {
            "retrieval_ms": float(self.retrieval_ms),
            "first_token_ms": read.float_or_none(self.first_token_ms),
            "total_ms": float(self.total_ms),
        }

    @classmethod
    def as_written(cls, value: Any) -> TurnTimings:
        if isinstance(value, TurnTimings):
            return value
        if type(value) is not dict:
            raise read.NotAsWritten
        get = value.get
        return cls(
            retrieval_ms=read.as_written(get("retrieval_ms", 0.0), float),
            first_token_ms=read.optional(get("first_token_ms"), float),
            total_ms=read.as_written(get("total_ms", 0.0), float),
        )


@dataclass_own_init(slots=True, kw_only=True)
class Turn:
    """One ask as the history records it: the question, the answer and the notes it cited, the
    provider and model, what it cost, and how it ended."""

    v: int = TURN_RECORD_VERSION
    id: str = field(default_factory=new_turn_id)
    time: str
    question: str
    resolved_question: str = ""
    answer: str = ""
    cited: list[str] = field(default_factory=list)
    provider: str = "offline"
    model: str = ""
    usage: TurnUsage = field(default_factory=TurnUsage)
    timings: TurnTimings = field(default_factory=TurnTimings)
    status: TurnStatus = "ok"
    error: str | None = None
    # The conversation the turn belongs to: follow-ups are read only within one. Empty for
    # turns recorded before conversations had ids.
    conversation: str = ""

    def to_record(self) -> dict[str, Any]:
        return {
            "v": self.v,
            "id": self.id,
            "time": self.time,
            "question": self.question,
            "resolved_question": self.resolved_question,
            "answer": self.answer,
            "cited": list(self.cited),
            "provider": self.provider,
            "model": self.model,
            "usage": self.usage.to_record(),
            "timings": self.timings.to_record(),
            "status": self.status,
            "error": self.error,
            "conversation": self.conversation,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Turn | None:
        """A turn from a history line, or None for a line that is not one."""
        try:
            return cls.model_validate(record)
        except RecordError:
            return None

    @classmethod
    def model_validate(cls, record: Any) -> Turn:
        """The turn `record` holds (keys it does not know are ignored), or `RecordError`."""
        return read.read_record(Turn, record, cls._as_written)

    @classmethod
    def _as_written(cls, record: dict[str, Any]) -> Turn:
        get = record.get
        turn_id = get("id", ABSENT)
        usage = get("usage", ABSENT)
        timings = get("timings", ABSENT)
        return cls(
            v=read.as_written(get("v", TURN_RECORD_VERSION), int),
            id=new_turn_id() if turn_id is ABSENT else read.as_written(turn_id, str),
            time=read.as_written(get("time"), str),
            question=read.as_written(get("question"), str),
            resolved_question=read.as_written(get("resolved_question", ""), str),
            answer=read.as_written(get("answer", ""), str),
            cited=read.texts(get("cited", [])),
            provider=read.as_written(get("provider", "offline"), str),
            model=read.as_written(get("model", ""), str),
            usage=TurnUsage() if usage is ABSENT else TurnUsage.as_written(usage),
            timings=TurnTimings() if timings is ABSENT else TurnTimings.as_written(timings),
            status=read.choice(get("status", "ok"), _STATUSES),
            error=read.optional(get("error"), str),
            conversation=read.as_written(get("conversation", ""), str),
        )

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Turn:
        """A shallow copy with the fields `update` names replaced (pydantic's name for it)."""
        return replace(self, **(update or {}))
