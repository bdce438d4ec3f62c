"""The record of one ask: what was asked, what came back, what it cost. One JSONL line each.

Turns are plain dataclasses. Every ask and every `lore history` reads turns back, and as
pydantic models they cost those commands more than their own work: importing pydantic and
building the three models was about 100 ms of the 220 `lore history` took. A turn made in
code is as its annotations say (mypy checks the callers). A turn read from a record is
checked field by field and converted as pydantic's lax mode did (tests/test_turns.py holds
the two side by side); a record that is not a turn reads as None, or raises `NotATurn` from
`model_validate`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

from lore.core.tokens import reported_or_estimated

TURN_RECORD_VERSION = 1
TurnStatus = Literal["ok", "cancelled", "error"]
_STATUSES = ("ok", "cancelled", "error")
# A key the record does not have, told apart from one that holds null.
_ABSENT: Any = object()


def new_turn_id() -> str:
    """Time-ordered, so ids sort in the order turns were asked."""
    # Here, not at the top: secrets and hashlib load OpenSSL, which reading turns never needs.
    import secrets

    return f"t{int(time.time() * 1000):011x}{secrets.token_hex(3)}"


def new_conversation_id() -> str:
    """Time-ordered and random, like turn ids: a conversation is named once, when it starts."""
    import secrets

    return f"c{int(time.time() * 1000):011x}{secrets.token_hex(3)}"


class NotATurn(ValueError):
    """A record that does not hold a turn: a field missing, or holding the wrong kind."""


# -- reading a record's fields -------------------------------------------------------------
# Called for a value that is not already of its field's type (or is absent: _ABSENT), so a
# record as Lore writes it is read with a type check per field and no call.


def _text(value: Any, name: str) -> str:
    if type(value) is str:
        return cast(str, value)
    raise NotATurn(f"{name}: expected text, got {_kind(value)}")


def _optional_text(value: Any, name: str) -> str | None:
    return None if value is None else _text(value, name)


def _whole_number(value: Any, name: str) -> int:
    kind = type(value)
    if kind is int or kind is bool:
        return int(value)
    if kind is float and value.is_integer():
        return int(value)
    if kind is str:
        # "5", " 5 " and "5.00" as pydantic read them; not "1e3".
        whole, point, zeros = value.strip().partition(".")
        if not point or (zeros and not zeros.strip("0")):
            try:
                return int(whole)
            except ValueError:
                pass
    raise NotATurn(f"{name}: expected a whole number, got {_kind(value)}")


def _optional_whole_number(value: Any, name: str) -> int | None:
    return None if value is None else _whole_number(value, name)


def _number(value: Any, name: str) -> float:
    kind = type(value)
    if kind is float or kind is int or kind is bool:
        return float(value)
    if kind is str:
        try:
            return float(value)
        except ValueError:
            pass
    raise NotATurn(f"{name}: expected a number, got {_kind(value)}")


def _optional_number(value: Any, name: str) -> float | None:
    return None if value is None else _number(value, name)


def _texts(value: Any, name: str) -> list[str]:
    if type(value) in (list, tuple) and all(type(item) is str for item in value):
        return list(value)
    raise NotATurn(f"{name}: expected a list of text, got {_kind(value)}")


def _fields(value: Any, name: str) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    raise NotATurn(f"{name}: expected an object, got {_kind(value)}")


def _kind(value: Any) -> str:
    return "nothing" if value is _ABSENT else type(value).__name__


def _float_or_none(value: float | None) -> float | None:
    return None if value is None else float(value)


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
        get = _fields(value, "usage").get
        prompt = get("estimated_prompt_tokens", 0)
        completion = get("estimated_completion_tokens", 0)
        reported_prompt = get("prompt_tokens")
        reported_completion = get("completion_tokens")
        return cls(
            estimated_prompt_tokens=prompt
            if type(prompt) is int
            else _whole_number(prompt, "usage.estimated_prompt_tokens"),
            estimated_completion_tokens=completion
            if type(completion) is int
            else _whole_number(completion, "usage.estimated_completion_tokens"),
            prompt_tokens=reported_prompt
            if type(reported_prompt) is int
            else _optional_whole_number(reported_prompt, "usage.prompt_tokens"),
            completion_tokens=reported_completion
            if type(reported_completion) is int
            else _optional_whole_number(reported_completion, "usage.completion_tokens"),
        )


@dataclass(slots=True, kw_only=True)
class TurnTimings:
    retrieval_ms: float = 0.0
    first_token_ms: float | None = None
    total_ms: float = 0.0

    def to_record(self) -> dict[str, Any]:
        return {
            "retrieval_ms": float(self.retrieval_ms),
            "first_token_ms": _float_or_none(self.first_token_ms),
            "total_ms": float(self.total_ms),
        }

    @classmethod
    def model_validate(cls, value: Any) -> TurnTimings:
        if isinstance(value, TurnTimings):
            return value
        get = _fields(value, "timings").get
        retrieval = get("retrieval_ms", 0.0)
        first_token = get("first_token_ms")
        total = get("total_ms", 0.0)
        return cls(
            retrieval_ms=retrieval
            if type(retrieval) is float
            else _number(retrieval, "timings.retrieval_ms"),
            first_token_ms=first_token
            if type(first_token) is float
            else _optional_number(first_token, "timings.first_token_ms"),
            total_ms=total if type(total) is float else _number(total, "timings.total_ms"),
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
        except NotATurn:
            return None

    @classmethod
    def model_validate(cls, record: Any) -> Turn:
        """The turn `record` holds (keys it does not know are ignored), or `NotATurn`."""
        get = _fields(record, "turn").get
        version = get("v", TURN_RECORD_VERSION)
        turn_id = get("id", _ABSENT)
        asked_at = get("time", _ABSENT)
        question = get("question", _ABSENT)
        resolved = get("resolved_question", "")
        answer = get("answer", "")
        cited = get("cited", _ABSENT)
        provider = get("provider", "offline")
        model = get("model", "")
        usage = get("usage", _ABSENT)
        timings = get("timings", _ABSENT)
        status = get("status", "ok")
        error = get("error")
        conversation = get("conversation", "")
        if type(status) is not str or status not in _STATUSES:
            raise NotATurn(f"status: expected one of {', '.join(_STATUSES)}, got {status!r}")
        return cls(
            v=version if type(version) is int else _whole_number(version, "v"),
            id=turn_id
            if type(turn_id) is str
            else new_turn_id()
            if turn_id is _ABSENT
            else _text(turn_id, "id"),
            time=asked_at if type(asked_at) is str else _text(asked_at, "time"),
            question=question if type(question) is str else _text(question, "question"),
            resolved_question=resolved
            if type(resolved) is str
            else _text(resolved, "resolved_question"),
            answer=answer if type(answer) is str else _text(answer, "answer"),
            cited=[] if cited is _ABSENT else _texts(cited, "cited"),
            provider=provider if type(provider) is str else _text(provider, "provider"),
            model=model if type(model) is str else _text(model, "model"),
            usage=TurnUsage() if usage is _ABSENT else TurnUsage.model_validate(usage),
            timings=TurnTimings() if timings is _ABSENT else TurnTimings.model_validate(timings),
            status=cast(TurnStatus, status),
            error=error if type(error) is str else _optional_text(error, "error"),
            conversation=conversation
            if type(conversation) is str
            else _text(conversation, "conversation"),
        )

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Turn:
        """A shallow copy with the fields `update` names replaced (pydantic's name for it)."""
        return replace(self, **(update or {}))
