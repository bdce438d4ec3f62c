"""Metrics record what each ask cost and sum it up the way a user reads it."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lore.core.metrics import MetricRecord, MetricsStore, percentile, summarise
from lore.core.turns import Turn, TurnTimings, TurnUsage
from lore.core.vault import Vault


def finished_turn(
    number: int,
    *,
    total_ms: float = 1000.0,
    first_token_ms: float | None = 200.0,
    completion: int | None = 80,
    model: str = "llama3",
    provider: str = "ollama",
    status: str = "ok",
) -> Turn:
    return Turn(
        id=f"t{number:05d}",
        time="2026-01-01T00:00:00Z",
        question="q",
        answer="a",
        provider=provider,
        model=model,
        status=status,  # type: ignore[arg-type]
        usage=TurnUsage(
            estimated_prompt_tokens=500,
            estimated_completion_tokens=90,
            prompt_tokens=450 if completion is not None else None,
            completion_tokens=completion,
        ),
        timings=TurnTimings(retrieval_ms=5.0, first_token_ms=first_token_ms, total_ms=total_ms),
    )


def record(store: MetricsStore, turn: Turn, **overrides) -> MetricRecord:
    values = {
        "evidence_count": 4,
        "dropped": [],
        "citations_kept": 2,
        "citations_removed": 0,
        "estimated_prompt_tokens": 500,
    }
    values.update(overrides)
    return store.record(turn, **values)


def test_a_record_keeps_the_estimate_beside_the_reported_count(vault: Vault) -> None:
    store = MetricsStore(vault)
    record(store, finished_turn(1), dropped=["note:Pluto"], citations_removed=1)
    [saved] = store.tail(5)
    assert saved.turn_id == "t00001"
    assert saved.estimated_prompt_tokens == 500 and saved.prompt_tokens == 450
    assert saved.estimated_completion_tokens == 90 and saved.completion_tokens == 80
    assert saved.dropped == ["note:Pluto"] and saved.citations_removed == 1
    assert saved.first_token_ms == 200.0 and saved.total_ms == 1000.0


def test_summary_gives_percentiles_and_tokens_per_second(vault: Vault) -> None:
    store = MetricsStore(vault)
    for number, total in enumerate([100, 200, 300, 400, 1000]):
        record(store, finished_turn(number, total_ms=total, first_token_ms=50.0, completion=100))
    summary = store.summary()
    assert summary.asks == 5 and summary.ok == 5
    assert summary.latency_p50_ms == 300
    assert summary.latency_p95_ms == 1000
    assert summary.first_token_p50_ms == 50
    generation_seconds = (50 + 150 + 250 + 350 + 950) / 1000
    assert summary.tokens_per_second == pytest.approx(500 / generation_seconds)
    assert summary.prompt_tokens == 5 * 450
    assert summary.estimated_prompt_tokens == 5 * 500


def test_summary_by_model_and_over_the_last_asks(vault: Vault) -> None:
    store = MetricsStore(vault)
    record(store, finished_turn(1, model="llama3", total_ms=500))
    record(store, finished_turn(2, model="qwen", total_ms=900))
    record(store, finished_turn(3, model="qwen", total_ms=700))
    summary = store.summary()
    assert set(summary.by_model) == {"ollama:llama3", "ollama:qwen"}
    assert summary.by_model["ollama:qwen"].asks == 2
    last = store.summary(last=1)
    assert last.asks == 1 and last.latency_p50_ms == 700


def test_failed_and_cancelled_asks_count_but_do_not_skew_latency(vault: Vault) -> None:
    store = MetricsStore(vault)
    record(store, finished_turn(1, total_ms=400))
    record(store, finished_turn(2, total_ms=30_000, status="error", completion=None))
    record(store, finished_turn(3, total_ms=50, status="cancelled", completion=None))
    summary = store.summary()
    assert (summary.asks, summary.ok, summary.errors, summary.cancelled) == (3, 1, 1, 1)
    assert summary.latency_p95_ms == 400


def test_without_reported_usage_the_estimate_is_used(vault: Vault) -> None:
    store = MetricsStore(vault)
    record(store, finished_turn(1, provider="offline", model="", completion=None))
    summary = store.summary()
    assert summary.completion_tokens == 90
    assert summary.reported_completion_tokens == 0
    assert "offline" in summary.by_model


def test_garbage_lines_and_an_empty_file_are_fine(vault: Vault) -> None:
    store = MetricsStore(vault)
    assert store.summary().asks == 0
    assert store.summary().latency_p50_ms is None
    record(store, finished_turn(1))
    with open(vault.layout.metrics, "ab") as handle:
        handle.write(b'garbage\n{"turn_id": 5}\n{"torn": ')
    record(store, finished_turn(2))
    assert [r.turn_id for r in store.tail(10)] == ["t00001", "t00002"]
    assert store.summary().asks == 2


def test_percentile_is_nearest_rank() -> None:
    assert percentile([], 0.5) is None
    assert percentile([7.0], 0.95) == 7.0
    assert percentile([float(n) for n in range(1, 101)], 0.95) == 95.0
    assert summarise([]).to_dict()["asks"] == 0


def test_a_record_with_figures_that_are_not_numbers_is_skipped(vault: Vault) -> None:
    store = MetricsStore(vault)
    record(store, finished_turn(1, total_ms=300))
    with open(vault.layout.metrics, "ab") as handle:
        handle.write(
            b'{"turn_id": "tbad", "time": "x", "total_ms": "slow", "prompt_tokens": [1]}\n'
        )
    summary = store.summary()
    assert summary.asks == 1 and summary.latency_p50_ms == 300
    assert store.summary(last=5).asks == 1


class ReferenceMetricRecord(BaseModel):
    """The pydantic model a metrics line was read with before."""

    model_config = ConfigDict(extra="ignore")
    v: int = 1
    turn_id: str
    time: str
    provider: str = ""
    model: str = ""
    status: Literal["ok", "cancelled", "error"] = "ok"
    estimated_prompt_tokens: int = 0
    estimated_completion_tokens: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    retrieval_ms: float = 0.0
    first_token_ms: float | None = None
    total_ms: float = 0.0
    evidence_count: int = 0
    dropped: list[str] = Field(default_factory=list)
    citations_kept: int = 0
    citations_removed: int = 0


WRITTEN_METRICS: dict[str, Any] = {
    "v": 1,
    "turn_id": "t00001",
    "time": "2026-01-01T00:00:00Z",
    "provider": "ollama",
    "model": "llama3",
    "status": "ok",
    "estimated_prompt_tokens": 500,
    "estimated_completion_tokens": 90,
    "prompt_tokens": 450,
    "completion_tokens": 80,
    "retrieval_ms": 5.0,
    "first_token_ms": 200.0,
    "total_ms": 1000.0,
    "evidence_count": 4,
    "dropped": ["note:Pluto"],
    "citations_kept": 2,
    "citations_removed": 1,
}
ODD_FIGURES: list[Any] = [None, True, 3, 2.0, 2.5, "7", "7.0", "x", "", [], ["a", 1], {}]
METRIC_RECORDS = [
    WRITTEN_METRICS,
    {"turn_id": "t1", "time": "x"},
    {"time": "x"},
    {**WRITTEN_METRICS, "status": "cancelled", "extra": 1},
    *[
        {**WRITTEN_METRICS, name: value}
        for name in WRITTEN_METRICS
        for value in ODD_FIGURES
        if name != "v"
    ],
]


@pytest.mark.parametrize("raw", METRIC_RECORDS, ids=lambda raw: json.dumps(raw))
def test_a_metrics_line_reads_as_the_pydantic_model_read_it(raw: dict[str, Any]) -> None:
    try:
        expected: dict[str, Any] | None = ReferenceMetricRecord.model_validate(raw).model_dump(
            mode="json"
        )
    except ValidationError:
        expected = None
    read = MetricRecord.from_record(raw)
    assert (None if read is None else read.to_record()) == expected


def test_a_record_is_written_as_the_pydantic_model_wrote_it(vault: Vault) -> None:
    store = MetricsStore(vault)
    written = record(store, finished_turn(1, total_ms=1000), dropped=["note:Pluto"])
    line = vault.layout.metrics.read_text(encoding="utf-8").strip()
    assert json.loads(line) == ReferenceMetricRecord.model_validate(json.loads(line)).model_dump(
        mode="json"
    )
    assert '"total_ms":1000.0' in line
    assert written == MetricRecord.from_record(json.loads(line))
