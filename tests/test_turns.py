"""A turn record reads back as the pydantic models it replaced read it, and writes the same line.

`ReferenceTurn` is the pydantic definition of a turn as it was: whatever it accepted, a turn
reads the same way, and whatever it refused reads as no turn.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from lore.core.history import decode_turn
from lore.core.record_fields import RecordError
from lore.core.turns import Turn, TurnTimings, TurnUsage


class ReferenceUsage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    estimated_prompt_tokens: int = 0
    estimated_completion_tokens: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class ReferenceTimings(BaseModel):
    model_config = ConfigDict(extra="ignore")
    retrieval_ms: float = 0.0
    first_token_ms: float | None = None
    total_ms: float = 0.0


class ReferenceTurn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    v: int = 1
    id: str = "generated"
    time: str
    question: str
    resolved_question: str = ""
    answer: str = ""
    cited: list[str] = Field(default_factory=list)
    provider: str = "offline"
    model: str = ""
    usage: ReferenceUsage = Field(default_factory=ReferenceUsage)
    timings: ReferenceTimings = Field(default_factory=ReferenceTimings)
    status: Literal["ok", "cancelled", "error"] = "ok"
    error: str | None = None
    conversation: str = ""


WRITTEN: dict[str, Any] = {
    "v": 1,
    "id": "t19a1b2c3d4e5f6",
    "time": "2026-12-01T10:00:00Z",
    "question": "how thick is the ice on Europa?",
    "resolved_question": "how thick is the ice on Europa?",
    "answer": "About 15 to 25 km [1].",
    "cited": ["europa"],
    "provider": "ollama",
    "model": "llama3",
    "usage": {
        "estimated_prompt_tokens": 900,
        "estimated_completion_tokens": 12,
        "prompt_tokens": 1012,
        "completion_tokens": 10,
    },
    "timings": {"retrieval_ms": 4.5, "first_token_ms": 350.0, "total_ms": 2100.0},
    "status": "ok",
    "error": None,
    "conversation": "c19a1b2c3d4e5f6",
}

MINIMAL: dict[str, Any] = {"time": "2026-12-01T10:00:00Z", "question": "why?"}


def changed(path: str, value: Any) -> dict[str, Any]:
    """WRITTEN with the field at `path` ("usage.prompt_tokens") set to `value`, or removed
    when `value` is REMOVED."""
    record = json.loads(json.dumps(WRITTEN))
    *outer, name = path.split(".")
    holder = record
    for key in outer:
        holder = holder[key]
    if value is REMOVED:
        del holder[name]
    else:
        holder[name] = value
    return record


REMOVED = object()
ODD_VALUES: list[Any] = [
    REMOVED,
    None,
    True,
    0,
    7,
    -3,
    2.0,
    2.5,
    float("inf"),
    "",
    "5",
    " 5 ",
    "5.0",
    "3.5",
    "1_000",
    "1e3",
    " 5.0 ",
    "5.",
    "-3.00",
    ".0",
    "nan",
    "-inf",
    "x",
    [],
    ["a"],
    ["a", 1],
    {},
    {"prompt_tokens": 1},
]
PATHS = [
    "v",
    "id",
    "time",
    "question",
    "resolved_question",
    "answer",
    "cited",
    "provider",
    "model",
    "usage",
    "usage.estimated_prompt_tokens",
    "usage.estimated_completion_tokens",
    "usage.prompt_tokens",
    "usage.completion_tokens",
    "timings",
    "timings.retrieval_ms",
    "timings.first_token_ms",
    "timings.total_ms",
    "status",
    "error",
    "conversation",
]
RECORDS = [
    WRITTEN,
    MINIMAL,
    {**WRITTEN, "unknown": 1, "usage": {**WRITTEN["usage"], "extra": "x"}},
    {**WRITTEN, "status": "cancelled", "error": "stopped"},
    {**WRITTEN, "status": "Ok"},
    *[changed(path, value) for path in PATHS for value in ODD_VALUES],
]


def reference(record: Any) -> dict[str, Any] | None:
    try:
        return ReferenceTurn.model_validate(record).model_dump(mode="json")
    except Exception:
        return None


def comparable(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """Without the id: a record without one is given a new one, by either."""
    return None if record is None else {**record, "id": None}


@pytest.mark.parametrize("record", RECORDS, ids=lambda record: json.dumps(record, default=str))
def test_a_record_reads_as_the_pydantic_model_read_it(record: dict[str, Any]) -> None:
    expected = reference(record)
    turn = Turn.from_record(record)
    read = comparable(None if turn is None else turn.to_record())
    # As JSON, so that NaN is NaN.
    assert json.dumps(read) == json.dumps(comparable(expected))
    if expected is not None and "id" in record:
        assert turn is not None and turn.id == expected["id"]


def test_a_written_turn_is_the_line_pydantic_wrote() -> None:
    turn = Turn.from_record(WRITTEN)
    assert turn is not None
    assert json.dumps(turn.to_record()) == json.dumps(
        ReferenceTurn.model_validate(WRITTEN).model_dump(mode="json")
    )


def test_numbers_given_in_code_are_written_as_their_fields_kinds() -> None:
    turn = Turn(
        time="2026-12-01T10:00:00Z",
        question="q",
        timings=TurnTimings(first_token_ms=350, total_ms=2100),
        usage=TurnUsage(estimated_prompt_tokens=5),
    )
    assert turn.to_record()["timings"] == {
        "retrieval_ms": 0.0,
        "first_token_ms": 350.0,
        "total_ms": 2100.0,
    }
    assert json.dumps(turn.to_record()["timings"]) == (
        '{"retrieval_ms": 0.0, "first_token_ms": 350.0, "total_ms": 2100.0}'
    )


def test_a_line_that_is_not_a_turn_is_skipped_and_model_validate_says_why() -> None:
    assert decode_turn(b'["not", "a", "turn"]') is None
    assert decode_turn(b'{"time": "x", "question": 5}') is None
    assert decode_turn(b"{torn") is None
    with pytest.raises(RecordError, match="question: input should be a valid string"):
        Turn.model_validate({"time": "x", "question": 5})
    with pytest.raises(RecordError, match=r"usage\.prompt_tokens: input should be a valid integer"):
        Turn.model_validate({**MINIMAL, "usage": {"prompt_tokens": 2.5}})
    with pytest.raises(RecordError, match="time: field required"):
        Turn.model_validate({"question": "why?"})


def test_nested_records_given_as_objects_are_taken_as_they_are() -> None:
    usage = TurnUsage(prompt_tokens=3)
    turn = Turn.model_validate({**MINIMAL, "usage": usage, "timings": TurnTimings(total_ms=1.0)})
    assert turn.usage is usage
    assert turn.timings.total_ms == 1.0
    assert turn.model_copy(update={"status": "error"}).status == "error"
    assert turn.status == "ok"


def test_pydantic_reads_only_the_records_lore_did_not_write_as_it_writes_them() -> None:
    import subprocess
    import sys

    script = f"""
import json, sys
from lore.core.turns import Turn
written = json.loads({json.dumps(json.dumps(WRITTEN))})
assert Turn.model_validate(written).question == written["question"]
assert "pydantic" not in sys.modules, "a line as written went to pydantic"
odd = dict(written, timings={{"retrieval_ms": 4, "first_token_ms": "350", "total_ms": 2100}})
turn = Turn.model_validate(odd)
assert "pydantic" in sys.modules
assert (turn.timings.retrieval_ms, turn.timings.first_token_ms) == (4.0, 350.0)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
