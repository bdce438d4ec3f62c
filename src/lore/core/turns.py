"""The record of one ask: what was asked, what came back, what it cost. One JSONL line each.

Turns are plain dataclasses. Every ask and every `lore history` reads turns back, and as
pydantic models they cost those commands more than their own work: importing pydantic and
building the three models was about 100 ms of the 220 `lore history` took. A turn made in
code is as its annotations say (mypy checks the callers). A turn read from a record is
checked field by field and converted as pydantic's lax mode did (lore.core.record_fields;
tests/test_turns.py holds the two side by side); a record that is not a turn reads as None,
or raises `RecordError` from `model_validate`, which keeps pydantic's name, as `model_copy`
does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

from lore.core import record_fields as read
from lore.core.record_fields import ABSENT, RecordError
from lore.core.tokens import reported_or_estimated

TURN_RECORD_VERSION = 1
TurnStatus = Literal["ok", "cancelled", "error"]
_STATUSES = ("ok", "cancelled", "error")


def new_turn_id() -> str:
    """Time-ordered, so ids sort in the order turns were asked."""
    # Here, not at the top: secrets and hashlib load OpenSSL, which reading turns never needs.
    import secrets

    return f"t{int(time.time() * 1000):011x}{secrets.token_hex(3)}"


def new_conversation_id() -> str:
    """Time-ordered and random, like turn ids: a conversation is named once, when it starts."""
    import secrets

    return f"c{int(time.time() * 1000):011x}{secrets.token_hex(3)}"


# -- the records ---------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class TurnUsage:
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
    def model_validate(cls, value: Any) -> TurnUsage:
        if isinstance(value, TurnUsage):
            return value
        get = read.fields_of(value, "usage").get
        prompt = get("estimated_prompt_tokens", 0)
        completion = get("estimated_completion_tokens", 0)
        reported_prompt = get("prompt_tokens")
        reported_completion = get("completion_tokens")
        return cls(
            estimated_prompt_tokens=prompt
            if type(prompt) is int
            else read.whole_number(prompt, "usage.estimated_prompt_tokens"),
            estimated_completion_tokens=completion
            if type(completion) is int
            else read.whole_number(completion, "usage.estimated_completion_tokens"),
            prompt_tokens=reported_prompt
            if type(reported_prompt) is int
            else read.optional_whole_number(reported_prompt, "usage.prompt_tokens"),
            completion_tokens=reported_completion
            if type(reported_completion) is int
            else read.optional_whole_number(reported_completion, "usage.completion_tokens"),
        )


@dataclass(slots=True, kw_only=True)
class TurnTimings:
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
    def model_validate(cls, value: Any) -> TurnTimings:
        if isinstance(value, TurnTimings):
            return value
        get = read.fields_of(value, "timings").get
        retrieval = get("retrieval_ms", 0.0)
        first_token = get("first_token_ms")
        total = get("total_ms", 0.0)
        return cls(
            retrieval_ms=retrieval
            if type(retrieval) is float
            else read.number(retrieval, "timings.retrieval_ms"),
            first_token_ms=first_token
            if type(first_token) is float
            else read.optional_number(first_token, "timings.first_token_ms"),
            total_ms=total if type(total) is float else read.number(total, "timings.total_ms"),
        )


@dataclass(slots=True, kw_only=True)
class Turn:
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
        get = read.fields_of(record, "turn").get
        version = get("v", TURN_RECORD_VERSION)
        turn_id = get("id", ABSENT)
        asked_at = get("time", ABSENT)
        question = get("question", ABSENT)
        resolved = get("resolved_question", "")
        answer = get("answer", "")
        cited = get("cited", ABSENT)
        provider = get("provider", "offline")
        model = get("model", "")
        usage = get("usage", ABSENT)
        timings = get("timings", ABSENT)
        status = get("status", "ok")
        error = get("error")
        conversation = get("conversation", "")
        return cls(
            v=version if type(version) is int else read.whole_number(version, "v"),
            id=turn_id
            if type(turn_id) is str
            else new_turn_id()
            if turn_id is ABSENT
            else read.text(turn_id, "id"),
            time=asked_at if type(asked_at) is str else read.text(asked_at, "time"),
            question=question if type(question) is str else read.text(question, "question"),
            resolved_question=resolved
            if type(resolved) is str
            else read.text(resolved, "resolved_question"),
            answer=answer if type(answer) is str else read.text(answer, "answer"),
            cited=[] if cited is ABSENT else read.texts(cited, "cited"),
            provider=provider if type(provider) is str else read.text(provider, "provider"),
            model=model if type(model) is str else read.text(model, "model"),
            usage=TurnUsage() if usage is ABSENT else TurnUsage.model_validate(usage),
            timings=TurnTimings() if timings is ABSENT else TurnTimings.model_validate(timings),
            status=cast(
                TurnStatus, status if status == "ok" else read.choice(status, _STATUSES, "status")
            ),
            error=error if type(error) is str else read.optional_text(error, "error"),
            conversation=conversation
            if type(conversation) is str
            else read.text(conversation, "conversation"),
        )

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Turn:
        """A shallow copy with the fields `update` names replaced (pydantic's name for it)."""
        return replace(self, **(update or {}))
