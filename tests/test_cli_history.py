"""`lore history`, `lore compact`, `lore metrics` and `lore tokens` as a user runs them."""

from __future__ import annotations

import json
import random

import pytest

from history_helpers import bulk_append, configure, random_turn
from lore.cli import main
from lore.core.history import HistoryStore
from lore.core.memory import MemoryStore
from lore.core.metrics import MetricsStore
from lore.core.turns import Turn, TurnTimings, TurnUsage
from lore.core.vault import Vault
from servers import FakeModelServer, Script, fake_server

__all__ = ["fake_server"]


def run(vault: Vault, *args: str) -> int:
    return main(["--vault", str(vault.root), *args])


def add_turns(vault: Vault) -> list[Turn]:
    store = HistoryStore(vault)
    turns = [
        Turn(
            id="t0001aa",
            time="2026-03-01T10:00:00Z",
            question="How many moons has Mars?",
            answer="Two: **Phobos** and Deimos [1].",
            cited=["notes/mars.md"],
        ),
        Turn(
            id="t0002bb",
            time="2026-03-01T10:05:00Z",
            question="And Jupiter?",
            resolved_question="How many moons has Jupiter?",
            answer="Dozens, led by Ganymede.",
        ),
        Turn(
            id="t0003cc",
            time="2026-03-01T10:06:00Z",
            question="Why is Venus hot?",
            answer="",
            status="error",
            error="the model server is not running",
        ),
    ]
    for turn in turns:
        store.append(turn)
    return turns


def test_history_lists_the_latest_turns_newest_first(vault: Vault, capsys) -> None:
    add_turns(vault)
    assert run(vault, "history") == 0
    out = capsys.readouterr().out
    assert out.index("t0003cc") < out.index("t0002bb") < out.index("t0001aa")
    assert "[error]" in out and "How many moons has Mars?" in out


def test_history_json_and_last(vault: Vault, capsys) -> None:
    add_turns(vault)
    assert run(vault, "history", "--last", "2", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert [item["id"] for item in data] == ["t0003cc", "t0002bb"]


def test_history_search(vault: Vault, capsys) -> None:
    add_turns(vault)
    assert run(vault, "history", "--search", "moons", "--json") == 0
    assert [item["id"] for item in json.loads(capsys.readouterr().out)] == ["t0002bb", "t0001aa"]
    assert run(vault, "history", "--search", "pluto") == 1
    assert "No turns match" in capsys.readouterr().out


def test_history_show_one_turn(vault: Vault, capsys) -> None:
    add_turns(vault)
    assert run(vault, "history", "show", "t0002") == 0
    out = capsys.readouterr().out
    assert "And Jupiter?" in out and "Understood as: How many moons has Jupiter?" in out
    assert run(vault, "history", "show", "t0001aa", "--json") == 0
    assert json.loads(capsys.readouterr().out)["cited"] == ["notes/mars.md"]


def test_history_show_unknown_or_ambiguous_is_one_line(vault: Vault, capsys) -> None:
    add_turns(vault)
    assert run(vault, "history", "show", "tzzz") == 1  # a missing item is a failure
    err = capsys.readouterr().err
    assert "no turn with id 'tzzz'" in err and "Traceback" not in err
    assert run(vault, "history", "show", "t000") == 1
    assert "3 turns start with" in capsys.readouterr().err


def test_history_export_jsonl_and_markdown(vault: Vault, capsys, tmp_path) -> None:
    turns = add_turns(vault)
    assert run(vault, "history", "export", "--format", "jsonl") == 0
    lines = capsys.readouterr().out.splitlines()
    assert [Turn.model_validate(json.loads(line)) for line in lines] == turns
    target = tmp_path / "out" / "history.md"
    assert run(vault, "history", "export", "--format", "md", "--out", str(target)) == 0
    text = target.read_text()
    assert "How many moons has Mars?" in text and "**Phobos**" in text
    assert "Exported 3 turns" in capsys.readouterr().err
    assert run(vault, "history", "export") == 0
    assert "## Why is Venus hot?" in capsys.readouterr().out


def test_history_export_format_follows_the_file_name(vault: Vault, tmp_path) -> None:
    add_turns(vault)
    target = tmp_path / "history.jsonl"
    assert run(vault, "history", "export", "--out", str(target)) == 0
    assert len(target.read_text().splitlines()) == 3


def test_empty_history_says_how_to_start(vault: Vault, capsys) -> None:
    assert run(vault, "history") == 0
    assert "No turns yet" in capsys.readouterr().out


def test_bad_last_is_a_usage_error(vault: Vault, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run(vault, "history", "--last", "0")
    assert exit_info.value.code == 2
    assert "above 0" in capsys.readouterr().err


def test_compact_dry_run_then_for_real(vault: Vault, capsys) -> None:
    rng = random.Random(3)
    bulk_append(vault, [random_turn(rng, n) for n in range(200)])
    (vault.root / "lore.yaml").write_text(
        "history:\n  compact_threshold_tokens: 300\n  keep_recent_turns: 5\n  memory_budget_tokens: 400\n"
    )
    assert run(vault, "compact", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "Dry run: nothing was written" in out and "Would cover 195 turns" in out
    assert MemoryStore(vault).watermark is None
    assert run(vault, "compact", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["compacted"] and report["turns_covered"] == 195
    assert report["live_turns_after"] == 5
    assert MemoryStore(vault).watermark is not None
    assert HistoryStore(vault).count() == 200
    assert run(vault, "compact") == 0
    assert "Nothing to compact" in capsys.readouterr().out


def record_ask(vault: Vault, number: int, model: str, total_ms: float) -> None:
    turn = Turn(
        id=f"t{number:04d}",
        time="2026-03-01T10:00:00Z",
        question="q",
        answer="a",
        provider="ollama",
        model=model,
        usage=TurnUsage(
            estimated_prompt_tokens=300,
            estimated_completion_tokens=60,
            prompt_tokens=280,
            completion_tokens=50,
        ),
        timings=TurnTimings(retrieval_ms=4, first_token_ms=100, total_ms=total_ms),
    )
    MetricsStore(vault).record(
        turn,
        evidence_count=3,
        dropped=[],
        citations_kept=1,
        citations_removed=0,
        estimated_prompt_tokens=300,
    )


def test_metrics_table_and_json(vault: Vault, capsys) -> None:
    record_ask(vault, 1, "llama3", 600)
    record_ask(vault, 2, "qwen", 1100)
    assert run(vault, "metrics") == 0
    out = capsys.readouterr().out
    assert "ollama:llama3" in out and "ollama:qwen" in out and "all" in out
    assert run(vault, "metrics", "--last", "1", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["asks"] == 1 and data["latency_p50_ms"] == 1100
    assert data["tokens_per_second"] == pytest.approx(50 / 1.0)


def test_tokens_short_form(vault: Vault, capsys) -> None:
    configure(vault, threshold=6000, keep=6, budget=1500, fanout=8)
    add_turns(vault)
    record_ask(vault, 1, "llama3", 600)
    assert run(vault, "tokens") == 0
    out = capsys.readouterr().out
    assert "asks 1" in out and "last ask: 280 → 50 tokens" in out
    assert "3 live turns" in out
    assert run(vault, "tokens", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["live_turns"] == 3 and data["memory_entries"] == 0


def test_a_real_ask_shows_up_in_history_and_metrics(sample_vault: Vault, capsys) -> None:
    assert main(["--vault", str(sample_vault.root), "ask", "What are the moons of Mars?"]) == 0
    capsys.readouterr()
    assert main(["--vault", str(sample_vault.root), "history", "--json"]) == 0
    [turn] = json.loads(capsys.readouterr().out)
    assert turn["question"] == "What are the moons of Mars?" and turn["status"] == "ok"
    assert main(["--vault", str(sample_vault.root), "metrics", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["asks"] == 1


def point_at(vault: Vault, server: FakeModelServer, **history: int) -> None:
    lines = [
        "provider:",
        "  name: ollama",
        "  model: llama3",
        f"  base_url: {server.url}",
        "  retries: 0",
        "history:",
        *[f"  {key}: {value}" for key, value in history.items()],
    ]
    (vault.root / "lore.yaml").write_text("\n".join(lines) + "\n")


def test_compact_with_a_model_server_writes_its_summaries(
    vault: Vault, fake_server: FakeModelServer, capsys
) -> None:
    rng = random.Random(8)
    bulk_append(vault, [random_turn(rng, n) for n in range(10)])
    point_at(vault, fake_server, compact_threshold_tokens=50, keep_recent_turns=2, memory_fanout=4)
    fake_server.reply(*[Script(pieces=["Talk ", f"summary {n}."]) for n in range(2)])
    assert run(vault, "compact") == 0
    entries = MemoryStore(vault).levels()[1]
    assert [entry.text for entry in entries] == [f"Talk summary {n}." for n in range(2)]
    assert [len(entry.covers) for entry in entries] == [4, 4]
    request = fake_server.chat_requests[0].body
    assert request["options"]["num_ctx"] >= request["options"]["num_predict"]
    assert "Past turns" in request["messages"][1]["content"]


def test_compact_with_a_failing_server_is_one_line_and_changes_nothing(
    vault: Vault, fake_server: FakeModelServer, capsys
) -> None:
    rng = random.Random(9)
    bulk_append(vault, [random_turn(rng, n) for n in range(10)])
    point_at(vault, fake_server, compact_threshold_tokens=50, keep_recent_turns=2)
    fake_server.reply(Script(status=500, error="model crashed"))
    assert run(vault, "compact") == 1
    err = capsys.readouterr().err
    assert err.startswith("lore: ") and len(err.strip().splitlines()) == 1
    assert MemoryStore(vault).watermark is None
    assert not (vault.layout.memory / "memory.json").exists()
