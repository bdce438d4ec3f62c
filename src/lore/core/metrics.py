"""What each ask cost: `metrics.jsonl`, one record per ask, and the figures drawn from it.

A record holds Lore's token estimate beside what the provider reported, the timings, the
evidence used, what the pack dropped, and how many citations were kept or removed. The
summary gives totals, p50/p95 latency and time to first token, and tokens per second, overall
and by model.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import field
from typing import Any

from lore.core import record_fields as read
from lore.core.dataclass_lite import dataclass_lite, dataclass_own_init
from lore.core.record_fields import RecordError
from lore.core.storage import append_record, iter_records, read_tail_records
from lore.core.tokens import reported_or_estimated
from lore.core.turns import Turn, TurnStatus
from lore.core.vault import Vault

METRICS_RECORD_VERSION = 1
_STATUSES = ("ok", "cancelled", "error")


# A plain dataclass, read back as turns are (lore.core.record_fields): a pydantic model cost
# every ask the import of pydantic to write one line; pydantic reads only unusual lines.
@dataclass_own_init(slots=True, kw_only=True)
class MetricRecord:
    """One line of `metrics.jsonl`: what one ask cost in tokens and time, the evidence it used,
    what the pack dropped, and the citations kept and removed."""

    v: int = METRICS_RECORD_VERSION
    turn_id: str
    time: str
    provider: str = ""
    model: str = ""
    status: TurnStatus = "ok"
    estimated_prompt_tokens: int = 0
    estimated_completion_tokens: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    retrieval_ms: float = 0.0
    first_token_ms: float | None = None
    total_ms: float = 0.0
    evidence_count: int = 0
    dropped: list[str] = field(default_factory=list)
    citations_kept: int = 0
    citations_removed: int = 0

    def to_record(self) -> dict[str, Any]:
        return {
            "v": self.v,
            "turn_id": self.turn_id,
            "time": self.time,
            "provider": self.provider,
            "model": self.model,
            "status": self.status,
            "estimated_prompt_tokens": self.estimated_prompt_tokens,
            "estimated_completion_tokens": self.estimated_completion_tokens,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "retrieval_ms": float(self.retrieval_ms),
            "first_token_ms": read.float_or_none(self.first_token_ms),
            "total_ms": float(self.total_ms),
            "evidence_count": self.evidence_count,
            "dropped": list(self.dropped),
            "citations_kept": self.citations_kept,
            "citations_removed": self.citations_removed,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> MetricRecord | None:
        """The record of one ask from a metrics line, or None for a line that is not one."""
        try:
            return cls.model_validate(record)
        except RecordError:
            return None

    @classmethod
    def model_validate(cls, record: Any) -> MetricRecord:
        """The figures `record` holds (keys it does not know are ignored), or `RecordError`."""
        return read.read_record(MetricRecord, record, cls._as_written)

    @classmethod
    def _as_written(cls, record: dict[str, Any]) -> MetricRecord:
        get = record.get

        def whole(name: str) -> int:
            return read.as_written(get(name, 0), int)  # type: ignore[no-any-return]

        def text(name: str, default: Any = "") -> str:
            return read.as_written(get(name, default), str)  # type: ignore[no-any-return]

        def number(name: str) -> float:
            return read.as_written(get(name, 0.0), float)  # type: ignore[no-any-return]

        return cls(
            v=whole("v") if "v" in record else METRICS_RECORD_VERSION,
            turn_id=text("turn_id", None),
            time=text("time", None),
            provider=text("provider"),
            model=text("model"),
            status=read.choice(get("status", "ok"), _STATUSES),
            estimated_prompt_tokens=whole("estimated_prompt_tokens"),
            estimated_completion_tokens=whole("estimated_completion_tokens"),
            prompt_tokens=read.optional(get("prompt_tokens"), int),
            completion_tokens=read.optional(get("completion_tokens"), int),
            retrieval_ms=number("retrieval_ms"),
            first_token_ms=read.optional(get("first_token_ms"), float),
            total_ms=number("total_ms"),
            evidence_count=whole("evidence_count"),
            dropped=read.texts(get("dropped", [])),
            citations_kept=whole("citations_kept"),
            citations_removed=whole("citations_removed"),
        )

    @property
    def model_label(self) -> str:
        return f"{self.provider}:{self.model}" if self.model else self.provider or "unknown"

    @property
    def prompt_tokens_best(self) -> int:
        return reported_or_estimated(self.prompt_tokens, self.estimated_prompt_tokens)

    @property
    def completion_tokens_best(self) -> int:
        return reported_or_estimated(self.completion_tokens, self.estimated_completion_tokens)

    @property
    def generation_ms(self) -> float:
        """Time spent producing the reply, after the first token arrived."""
        if self.first_token_ms is None:
            return self.total_ms
        return max(0.0, self.total_ms - self.first_token_ms)

    @property
    def tokens_per_second(self) -> float | None:
        seconds = self.generation_ms / 1000
        tokens = self.completion_tokens_best
        return tokens / seconds if seconds > 0 and tokens > 0 else None


class _Figures:
    """The fields of a record the summary reads, built from a raw line without validation.

    Summing a long metrics file through whole records costs seconds; this costs a dict lookup
    per field. Lines whose figures are not numbers are skipped, as garbage lines are.
    """

    __slots__ = (
        "citations_kept",
        "citations_removed",
        "completion_tokens",
        "dropped",
        "estimated_completion_tokens",
        "estimated_prompt_tokens",
        "evidence_count",
        "first_token_ms",
        "model",
        "prompt_tokens",
        "provider",
        "retrieval_ms",
        "status",
        "total_ms",
    )

    def __init__(self, raw: dict[str, Any]) -> None:
        self.provider = str(raw.get("provider") or "")
        self.model = str(raw.get("model") or "")
        self.status = raw.get("status", "ok")
        self.estimated_prompt_tokens = _number(raw.get("estimated_prompt_tokens", 0))
        self.estimated_completion_tokens = _number(raw.get("estimated_completion_tokens", 0))
        self.prompt_tokens = _optional(raw.get("prompt_tokens"))
        self.completion_tokens = _optional(raw.get("completion_tokens"))
        self.retrieval_ms = float(_number(raw.get("retrieval_ms", 0.0)))
        self.first_token_ms = _optional(raw.get("first_token_ms"))
        self.total_ms = float(_number(raw.get("total_ms", 0.0)))
        self.evidence_count = _number(raw.get("evidence_count", 0))
        self.dropped = raw.get("dropped") or []
        self.citations_kept = _number(raw.get("citations_kept", 0))
        self.citations_removed = _number(raw.get("citations_removed", 0))

    model_label = MetricRecord.model_label
    prompt_tokens_best = MetricRecord.prompt_tokens_best
    completion_tokens_best = MetricRecord.completion_tokens_best
    generation_ms = MetricRecord.generation_ms
    tokens_per_second = MetricRecord.tokens_per_second


_NUMBER_TYPES = (int, float)


def _number(value: Any) -> Any:
    if type(value) not in _NUMBER_TYPES:
        raise ValueError("not a number")
    return value


def _optional(value: Any) -> Any:
    return None if value is None else _number(value)


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile of `values` (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


@dataclass_lite
class MetricsSummary:
    """Totals and percentiles over a run of asks, overall and, in `by_model`, for each model."""

    asks: int = 0
    ok: int = 0
    cancelled: int = 0
    errors: int = 0
    estimated_prompt_tokens: int = 0
    estimated_completion_tokens: int = 0
    reported_prompt_tokens: int = 0
    reported_completion_tokens: int = 0
    prompt_tokens: int = 0  # best known: reported where available, else estimated
    completion_tokens: int = 0
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    first_token_p50_ms: float | None = None
    first_token_p95_ms: float | None = None
    retrieval_p50_ms: float | None = None
    tokens_per_second: float | None = None
    evidence_per_ask: float | None = None
    asks_with_drops: int = 0
    citations_kept: int = 0
    citations_removed: int = 0
    by_model: dict[str, MetricsSummary] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = {key: value for key, value in self.__dict__.items() if key != "by_model"}
        data["by_model"] = {name: summary.to_dict() for name, summary in self.by_model.items()}
        return data


def summarise(records: Iterable[MetricRecord], *, by_model: bool = True) -> MetricsSummary:
    """Totals and percentiles over `records` (MetricRecord, or the light form of one)."""
    items = list(records)
    summary = MetricsSummary(asks=len(items))
    latencies: list[float] = []
    first_tokens: list[float] = []
    retrievals: list[float] = []
    generated_tokens = 0
    generation_ms = 0.0
    evidence = 0
    for record in items:
        if record.status == "ok":
            summary.ok += 1
        elif record.status == "cancelled":
            summary.cancelled += 1
        else:
            summary.errors += 1
        summary.estimated_prompt_tokens += record.estimated_prompt_tokens
        summary.estimated_completion_tokens += record.estimated_completion_tokens
        summary.reported_prompt_tokens += record.prompt_tokens or 0
        summary.reported_completion_tokens += record.completion_tokens or 0
        summary.prompt_tokens += record.prompt_tokens_best
        summary.completion_tokens += record.completion_tokens_best
        summary.citations_kept += record.citations_kept
        summary.citations_removed += record.citations_removed
        summary.asks_with_drops += bool(record.dropped)
        evidence += record.evidence_count
        retrievals.append(record.retrieval_ms)
        if record.status != "ok":
            continue
        latencies.append(record.total_ms)
        if record.first_token_ms is not None:
            first_tokens.append(record.first_token_ms)
        if record.tokens_per_second is not None:
            generated_tokens += record.completion_tokens_best
            generation_ms += record.generation_ms
    summary.latency_p50_ms = percentile(latencies, 0.50)
    summary.latency_p95_ms = percentile(latencies, 0.95)
    summary.first_token_p50_ms = percentile(first_tokens, 0.50)
    summary.first_token_p95_ms = percentile(first_tokens, 0.95)
    summary.retrieval_p50_ms = percentile(retrievals, 0.50)
    if generation_ms > 0:
        summary.tokens_per_second = generated_tokens / (generation_ms / 1000)
    if items:
        summary.evidence_per_ask = evidence / len(items)
    if by_model:
        groups: dict[str, list[MetricRecord]] = {}
        for record in items:
            groups.setdefault(record.model_label, []).append(record)
        if len(groups) == 1:
            # One model: its figures are the totals; no second pass over a long file.
            [label] = groups
            alone = MetricsSummary(**{**summary.__dict__, "by_model": {}})
            summary.by_model = {label: alone}
        else:
            summary.by_model = {
                label: summarise(group, by_model=False) for label, group in sorted(groups.items())
            }
    return summary


class MetricsStore:
    """The metrics of one vault."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.path = vault.layout.metrics

    def record(
        self,
        turn: Turn,
        *,
        evidence_count: int,
        dropped: list[str],
        citations_kept: int,
        citations_removed: int,
        estimated_prompt_tokens: int,
    ) -> MetricRecord:
        """Append the figures of one ask: a single fsynced write under the vault lock."""
        record = MetricRecord(
            turn_id=turn.id,
            time=turn.time,
            provider=turn.provider,
            model=turn.model,
            status=turn.status,
            estimated_prompt_tokens=estimated_prompt_tokens,
            estimated_completion_tokens=turn.usage.estimated_completion_tokens,
            prompt_tokens=turn.usage.prompt_tokens,
            completion_tokens=turn.usage.completion_tokens,
            retrieval_ms=turn.timings.retrieval_ms,
            first_token_ms=turn.timings.first_token_ms,
            total_ms=turn.timings.total_ms,
            evidence_count=evidence_count,
            dropped=list(dropped),
            citations_kept=citations_kept,
            citations_removed=citations_removed,
        )
        self.vault.ensure_writable()
        with self.vault.lock():
            append_record(self.path, record.to_record())
        return record

    def tail(self, n: int) -> list[MetricRecord]:
        """The last `n` records, oldest first, read from the end of the file."""
        return _decode(read_tail_records(self.path, n))

    def iter_records(self) -> Iterable[MetricRecord]:
        for raw in iter_records(self.path):
            record = MetricRecord.from_record(raw)
            if record is not None:
                yield record

    def summary(self, last: int | None = None) -> MetricsSummary:
        """Figures over the last `last` asks, or over every ask recorded."""
        if last is not None:
            return summarise(self.tail(last))
        return summarise(self._iter_figures())  # type: ignore[arg-type]

    def _iter_figures(self) -> Iterable[_Figures]:
        for raw in iter_records(self.path):
            if not isinstance(raw.get("turn_id"), str):
                continue
            try:
                yield _Figures(raw)
            except (ValueError, TypeError):
                continue


def _decode(raws: list[dict[str, Any]]) -> list[MetricRecord]:
    return [record for raw in raws if (record := MetricRecord.from_record(raw)) is not None]
