"""`lore ask` and `lore context` from the command line."""

from __future__ import annotations

import json

import pytest

from lore.cli import main
from lore.core.history import HistoryStore
from lore.core.vault import Vault


def _run(capsys: pytest.CaptureFixture[str], vault: Vault, *args: str) -> tuple[int, str, str]:
    code = main(["--vault", str(vault.root), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_ask_streams_an_answer_and_lists_its_sources(
    capsys: pytest.CaptureFixture[str], sample_vault: Vault
) -> None:
    code, out, err = _run(capsys, sample_vault, "ask", "What is the Great Red Spot?")
    assert code == 0
    assert "Great Red Spot" in out
    assert "Jupiter" in out.split("\n", 1)[1]
    assert "offline/extractive" in err and "tokens" in err
    assert HistoryStore(sample_vault).tail(1)[0].question == "What is the Great Red Spot?"


def test_ask_json_prints_the_turn(capsys: pytest.CaptureFixture[str], sample_vault: Vault) -> None:
    code, out, _ = _run(capsys, sample_vault, "ask", "--json", "How many moons does Saturn have?")
    assert code == 0
    data = json.loads(out)
    assert data["turn"]["status"] == "ok"
    assert data["turn"]["cited"]
    assert data["citations_removed"] == 0
    assert any(source["cited"] for source in data["sources"])


def test_ask_save_files_the_answer_as_a_note(
    capsys: pytest.CaptureFixture[str], sample_vault: Vault
) -> None:
    code, out, _ = _run(capsys, sample_vault, "ask", "--save", "--json", "What is Enceladus?")
    assert code == 0
    saved = json.loads(out)["saved"]
    assert saved["claims"]["admitted"] + saved["claims"]["merged"] >= 1


def test_a_provider_that_is_not_running_is_one_line_and_a_kept_turn(
    capsys: pytest.CaptureFixture[str], sample_vault: Vault
) -> None:
    sample_vault.config.provider.base_url = "http://127.0.0.1:9"
    (sample_vault.root / "lore.yaml").write_text(
        "provider:\n  name: ollama\n  model: llama3.2\n  base_url: http://127.0.0.1:9\n"
        "  retries: 0\n  connect_timeout_s: 0.5\n",
        encoding="utf-8",
    )
    code, _, err = _run(capsys, sample_vault, "ask", "What is Io?")
    assert code == 1
    lines = [line for line in err.splitlines() if line.startswith("lore:")]
    assert len(lines) == 1
    assert "Traceback" not in err
    assert HistoryStore(sample_vault).tail(1)[0].status == "error"


def test_a_huge_question_is_refused(
    capsys: pytest.CaptureFixture[str], sample_vault: Vault
) -> None:
    code, _, err = _run(capsys, sample_vault, "ask", "x" * 20_000)
    assert code == 2
    assert "max_question_chars" in err
    assert HistoryStore(sample_vault).tail(1) == []


def test_context_shows_sections_against_caps(
    capsys: pytest.CaptureFixture[str], sample_vault: Vault
) -> None:
    code, out, _ = _run(capsys, sample_vault, "context", "What is the Great Red Spot?")
    assert code == 0
    for word in ("instructions", "memory", "recent turns", "evidence", "question", "Jupiter"):
        assert word in out
    assert "of 4096 tokens" in out


def test_context_json_and_raw_agree(
    capsys: pytest.CaptureFixture[str], sample_vault: Vault
) -> None:
    code, out, _ = _run(capsys, sample_vault, "context", "--json", "Saturn rings")
    assert code == 0
    data = json.loads(out)
    assert data["total_tokens"] <= data["budget"]
    assert data["messages"][-1]["content"].startswith("Question: Saturn rings")
    code, raw, _ = _run(capsys, sample_vault, "context", "--raw", "Saturn rings")
    assert code == 0
    assert "=== system (instructions) ===" in raw
    assert "<<<NOTE" in raw and "Question: Saturn rings" in raw


def test_context_without_a_question_shows_memory_and_turns(
    capsys: pytest.CaptureFixture[str], sample_vault: Vault
) -> None:
    _run(capsys, sample_vault, "ask", "What is Titan?")
    code, out, _ = _run(capsys, sample_vault, "context", "--json")
    assert code == 0
    data = json.loads(out)
    turns = next(s for s in data["sections"] if s["name"] == "recent_turns")
    assert turns["items"][0]["label"] == "What is Titan?"


def test_an_answer_citing_nothing_is_not_saved(
    capsys: pytest.CaptureFixture[str], sample_vault: Vault
) -> None:
    code, _, err = _run(capsys, sample_vault, "ask", "--save", "What is the capital of France?")
    assert code == 2
    assert "cites no note" in err
    assert HistoryStore(sample_vault).tail(1)[0].status == "ok"


def test_the_question_can_come_from_standard_input(
    capsys: pytest.CaptureFixture[str], sample_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("How many moons does Saturn have?\n"))
    code, out, _ = _run(capsys, sample_vault, "ask", "-")
    assert code == 0
    assert "moons" in out


def test_ctrl_c_during_a_streamed_answer_keeps_the_turn_as_cancelled(sample_vault: Vault) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from servers import FakeModelServer, Script

    with FakeModelServer() as server:
        server.reply(Script(pieces=[f"word{n} " for n in range(200)], piece_delay_s=0.05))
        (sample_vault.root / "lore.yaml").write_text(
            f"provider:\n  name: ollama\n  model: llama3\n  base_url: {server.url}\n",
            encoding="utf-8",
        )
        process = subprocess.Popen(
            [sys.executable, "-m", "lore", "--vault", str(sample_vault.root), "ask", "What is Io?"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert process.stdout is not None
        seen = b""
        deadline = time.monotonic() + 30
        while b"word3" not in seen and time.monotonic() < deadline:
            seen += process.stdout.read1(64)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert b"Traceback" not in err
    last = HistoryStore(sample_vault).tail(1)[0]
    assert last.status == "cancelled"
    assert last.answer.startswith("word0 word1 word2")


def test_a_budget_too_small_for_the_question_is_one_clear_line(
    capsys: pytest.CaptureFixture[str], sample_vault: Vault
) -> None:
    (sample_vault.root / "lore.yaml").write_text("ask:\n  budget_tokens: 120\n", encoding="utf-8")
    code, _, err = _run(capsys, sample_vault, "context", "What is Io?")
    assert code == 1
    assert "ask.budget_tokens is 120" in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1
    code, _, err = _run(capsys, sample_vault, "ask", "What is Io?")
    assert code == 1 and "budget_tokens" in err
    assert HistoryStore(sample_vault).tail(1) == []
