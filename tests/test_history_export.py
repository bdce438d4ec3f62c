"""Exporting past turns as Markdown or JSONL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lore.core.history_export import export_turns, format_for, turn_markdown
from lore.core.turns import Turn, TurnTimings, TurnUsage
from lore.errors import UsageError


def _turn(question: str, answer: str = "An answer [1].", **fields: object) -> Turn:
    return Turn(time="2026-11-30T10:00:00Z", question=question, answer=answer, **fields)


def test_format_follows_the_file_suffix() -> None:
    assert format_for(Path("out.jsonl")) == "jsonl"
    assert format_for(Path("OUT.NDJSON")) == "jsonl"
    assert format_for(Path("out.md")) == "markdown"
    assert format_for(Path("history")) == "markdown"


def test_markdown_shows_question_answer_citations_and_costs(tmp_path: Path) -> None:
    turn = _turn(
        "How hot is Venus?\nAnd why?",
        "About 465 °C, because of its thick CO2 atmosphere [1].",
        cited=["notes/venus.md"],
        model="llama3",
        provider="ollama",
        usage=TurnUsage(estimated_prompt_tokens=900, prompt_tokens=1012, completion_tokens=40),
        timings=TurnTimings(first_token_ms=350, total_ms=2100),
    )
    target = tmp_path / "history.md"
    assert export_turns([turn], target, title="Solar System history") == 1
    text = target.read_text()
    assert text.startswith("# Solar System history")
    assert "## How hot is Venus?" in text
    assert "> How hot is Venus?\n> And why?" in text
    assert "About 465 °C" in text
    assert "`notes/venus.md`" in text
    assert "ollama/llama3 · 1,012 → 40 tokens · first token 0.35 s · total 2.10 s" in text


def test_markdown_marks_estimates_and_failed_turns() -> None:
    shown = turn_markdown(
        _turn(
            "Q?",
            "",
            status="error",
            error="server down",
            usage=TurnUsage(estimated_prompt_tokens=5),
        )
    )
    assert "5 → 0 tokens (estimated)" in shown
    assert "error: server down" in shown
    assert "*(no answer)*" in shown


def test_jsonl_round_trips_every_turn(tmp_path: Path) -> None:
    turns = [_turn(f"question {n}") for n in range(250)]
    target = tmp_path / "deep" / "export.jsonl"
    assert export_turns(iter(turns), target) == 250
    lines = target.read_text().splitlines()
    assert [Turn.from_record(json.loads(line)) for line in lines] == turns


def test_an_interrupted_export_leaves_no_partial_file(tmp_path: Path) -> None:
    def exploding():
        yield _turn("first")
        raise RuntimeError("disk went away")

    target = tmp_path / "export.md"
    with pytest.raises(RuntimeError):
        export_turns(exploding(), target)
    assert list(tmp_path.iterdir()) == []


def test_exporting_onto_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a folder"):
        export_turns([], tmp_path)


def test_an_export_is_durable_once_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lore.core import storage

    synced: list[Path] = []
    monkeypatch.setattr(storage, "_fsync_dir", synced.append)
    target = tmp_path / "out" / "history.jsonl"
    assert export_turns([_turn("one"), _turn("two")], target) == 2
    assert synced == [target.parent]  # the rename itself is on disk, not only the data


def test_the_summary_of_a_turn_gives_its_reply_speed() -> None:
    from lore.core.history_export import turn_summary

    turn = _turn(
        "how fast?",
        usage=TurnUsage(prompt_tokens=100, completion_tokens=40),
        timings=TurnTimings(first_token_ms=500.0, total_ms=2500.0),
    )
    assert turn_summary(turn).endswith("total 2.50 s · 20 tok/s")
