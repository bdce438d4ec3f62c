"""Text holding lone surrogates, which no UTF-8 can hold, is written and read back whole.

Python keeps each byte of an argument that is not UTF-8 as a lone surrogate, and a model
server may escape half of an emoji in one piece of its stream and the other half in the
next. Encoded as they were, such a turn could not be written (the answer lost) and such an
archive not saved (the compaction refused, with an internal error).
"""

from __future__ import annotations

import json

import pytest

from history_helpers import assert_every_turn_accounted_for, configure
from lore.cli import main
from lore.config import ProviderSettings
from lore.core import memory_sealed
from lore.core.ask import AskEngine, AskFinished
from lore.core.compaction import compact
from lore.core.history import HistoryStore
from lore.core.memory import MemoryStore
from lore.core.providers.factory import make_provider
from lore.core.turns import Turn
from lore.core.utf8_safe import json_bytes, utf8_json
from lore.core.vault import Vault
from servers import FakeModelServer, Script, fake_server

__all__ = ["fake_server"]

ARGUMENT = "mars \udcff moons"  # `lore ask $'mars \xff moons'` in a UTF-8 locale


@pytest.mark.parametrize(
    "value",
    [
        {"question": ARGUMENT},
        {"key \ud800": ["\\\udfff", "\\\\\ud83d", "plain"]},
        "\udcff" * 3,
        {"ascii": "only", "arrow": "→"},
    ],
)
def test_json_bytes_are_utf8_and_read_back_as_the_value(value: object) -> None:
    data = json_bytes(value)
    assert json.loads(data.decode("utf-8")) == value


def test_the_halves_of_a_pair_read_back_joined() -> None:
    assert json.loads(utf8_json(json.dumps("\ud83d\ude00", ensure_ascii=False))) == "😀"


def test_an_ask_with_bytes_that_are_not_utf8_is_answered_and_kept(
    capsys: pytest.CaptureFixture[str], sample_vault: Vault
) -> None:
    code = main(["--vault", str(sample_vault.root), "ask", ARGUMENT])
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    assert HistoryStore(sample_vault).tail(1)[0].question == ARGUMENT
    assert main(["--vault", str(sample_vault.root), "history", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown[-1]["question"] == ARGUMENT
    # Shown, it is spelled out: no terminal's encoding can write it.
    assert main(["--vault", str(sample_vault.root), "history"]) == 0
    assert "mars ⟦U+DCFF⟧ moons" in capsys.readouterr().out


def test_such_a_turn_is_exported_as_jsonl_exactly_and_as_markdown_in_utf8(
    capsys: pytest.CaptureFixture[str], sample_vault: Vault
) -> None:
    HistoryStore(sample_vault).append(Turn(time="x", question=ARGUMENT, answer="Two."))
    root = sample_vault.root
    for name in ("turns.jsonl", "turns.md"):
        assert main(["--vault", str(root), "history", "export", "--out", str(root / name)]) == 0
    exported = (root / "turns.jsonl").read_text("utf-8").splitlines()
    assert json.loads(exported[-1])["question"] == ARGUMENT
    assert "mars \ufffd moons" in (root / "turns.md").read_text("utf-8")
    capsys.readouterr()
    assert main(["--vault", str(root), "history", "export", "--format", "md"]) == 0
    assert "mars \ufffd moons" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["ollama", "openai"])
async def test_a_pair_a_server_streams_in_halves_is_kept_and_read_back_whole(
    sample_vault: Vault, fake_server: FakeModelServer, kind: str
) -> None:
    fake_server.reply(Script(pieces=["Saturn ", "\ud83d", "\ude00", " [1]."]))
    settings = ProviderSettings(name=kind, model="llama3", base_url=fake_server.url, timeout_s=2.0)
    engine = AskEngine(sample_vault, provider=make_provider(settings))
    events = [event async for event in engine.ask("What is Saturn?")]
    assert isinstance(events[-1], AskFinished)
    assert HistoryStore(sample_vault).tail(1)[0].answer == "Saturn 😀 [1]."


def test_an_answer_to_such_a_question_is_saved_as_a_note_in_utf8(
    capsys: pytest.CaptureFixture[str], sample_vault: Vault
) -> None:
    question = "What \udcff is Enceladus?"
    code = main(["--vault", str(sample_vault.root), "ask", "--save", "--json", question])
    assert code == 0, capsys.readouterr().err
    saved = json.loads(capsys.readouterr().out)["saved"]
    assert saved["claims"]["admitted"] + saved["claims"]["merged"] >= 1
    written = list((sample_vault.root / "notes").glob("what-*.md"))
    assert written
    assert all("What \ufffd is Enceladus" in path.read_text("utf-8") for path in written)


def test_a_history_holding_lone_surrogates_is_compacted_and_sealed(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_sealed, "SEAL_BYTES", 512)
    configure(vault, threshold=50, keep=2, budget=100, fanout=2)
    history = HistoryStore(vault)
    for n in range(40):
        answer = f"Zeta {n} \ud800 Quasar 42 orbits here." if n % 3 == 0 else "Plain words here."
        history.append(Turn(id=f"t{n:03d}", time="x", question=f"Zeta \udcff {n}?", answer=answer))
    report = compact(vault)
    assert report.compacted
    store = MemoryStore(vault)
    assert store.problem is None
    assert (vault.layout.memory / "sealed").is_dir()
    texts = [entry.text for entry in store.entries()]
    assert any("\ud800" in text for text in texts)
    assert_every_turn_accounted_for(vault)
