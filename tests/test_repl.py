"""`lore chat`: streamed answers, slash commands with completion, Ctrl-C, and failures that
never end the session. Driven through prompt-toolkit's pipe input, and as a subprocess."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from lore.config import ProviderSettings
from lore.core.commands import build_registry
from lore.core.history import HistoryStore
from lore.core.providers.base import ChatMessage, Chunk, GenerationOptions, Usage
from lore.core.providers.factory import make_provider
from lore.core.session import LoreSession
from lore.core.vault import Vault
from lore.repl import (
    ChatSession,
    SlashCompleter,
    input_history_path,
    open_input_history,
    run_interactive,
)
from servers import FakeModelServer, Script, fake_server

__all__ = ["fake_server"]

QUESTION = "What is the Great Red Spot on Jupiter?"


class SlowProvider:
    """Streams one word every 50 ms and says when the first one is out."""

    name = "slow"
    model = "tortoise"

    def __init__(self, words: int = 200) -> None:
        self.words = words
        self.first_word_sent = threading.Event()

    async def stream(
        self, messages: list[ChatMessage], options: GenerationOptions | None = None
    ) -> AsyncIterator[Chunk]:
        for index in range(self.words):
            yield Chunk(text=f"word{index} ")
            self.first_word_sent.set()
            await asyncio.sleep(0.05)
        yield Chunk(usage=Usage(), done=True)

    async def aclose(self) -> None:
        return None


def console_buffer() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=120, highlight=False, color_system=None), buffer


def run_lines(session: ChatSession, text: str) -> int:
    """Type `text` into the interactive loop; the input closes (Ctrl-D) after it."""
    with create_pipe_input() as pipe:
        pipe.send_text(text)
        pipe.close()
        return run_interactive(session, input=pipe, output=DummyOutput(), history=InMemoryHistory())


@pytest.fixture
def chat(sample_vault: Vault) -> Iterator[tuple[ChatSession, io.StringIO]]:
    console, buffer = console_buffer()
    yield ChatSession(LoreSession(sample_vault), console), buffer


def test_question_streams_an_answer_with_sources_and_is_recorded(
    chat: tuple[ChatSession, io.StringIO], sample_vault: Vault
) -> None:
    session, buffer = chat
    assert run_lines(session, QUESTION + "\n") == 0
    output = buffer.getvalue()
    turns = HistoryStore(sample_vault).tail(5)
    assert [turn.status for turn in turns] == ["ok"]
    assert turns[0].answer.split()[0] in output
    assert "sources: [" in output
    assert "tokens" in output


def test_follow_up_shows_how_it_was_read(
    chat: tuple[ChatSession, io.StringIO], sample_vault: Vault
) -> None:
    session, buffer = chat
    run_lines(session, f"{QUESTION}\nwhy?\n")
    assert "(read as: why? (following up on: What is the Great Red Spot" in buffer.getvalue()
    assert [turn.status for turn in HistoryStore(sample_vault).tail(5)] == ["ok", "ok"]


def test_unknown_command_is_one_line_and_the_session_goes_on(
    chat: tuple[ChatSession, io.StringIO], sample_vault: Vault
) -> None:
    session, buffer = chat
    assert run_lines(session, "/frobnicate now\n" + QUESTION + "\n") == 0
    output = buffer.getvalue()
    error_lines = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1
    assert "frobnicate" in error_lines[0]
    assert [turn.status for turn in HistoryStore(sample_vault).tail(5)] == ["ok"]


def test_quit_ends_the_session_before_later_lines(
    chat: tuple[ChatSession, io.StringIO], sample_vault: Vault
) -> None:
    session, _ = chat
    assert run_lines(session, "/quit\n" + QUESTION + "\n") == 0
    assert HistoryStore(sample_vault).tail(5) == []


def test_typing_exit_leaves_too(chat: tuple[ChatSession, io.StringIO], sample_vault: Vault) -> None:
    session, _ = chat
    assert run_lines(session, "exit\n" + QUESTION + "\n") == 0
    assert HistoryStore(sample_vault).tail(5) == []


def test_ctrl_c_at_the_prompt_clears_the_line_and_keeps_the_session(
    chat: tuple[ChatSession, io.StringIO], sample_vault: Vault
) -> None:
    session, buffer = chat
    assert run_lines(session, "half a question\x03" + QUESTION + "\n") == 0
    assert "Ctrl-D or /quit leaves" in buffer.getvalue()
    assert [turn.question for turn in HistoryStore(sample_vault).tail(5)] == [QUESTION]


def test_help_lists_the_registry(chat: tuple[ChatSession, io.StringIO]) -> None:
    session, buffer = chat
    run_lines(session, "/help\n")
    output = buffer.getvalue()
    for name in ("search", "history", "tokens", "context", "compact", "quit"):
        assert f"/{name}" in output


def test_oversized_paste_is_refused_and_nothing_is_sent(
    chat: tuple[ChatSession, io.StringIO], sample_vault: Vault
) -> None:
    session, buffer = chat
    session.handle("x" * 1_000_000)
    output = buffer.getvalue()
    assert "error:" in output and "nothing was sent" in output
    assert len(output) < 2000
    assert HistoryStore(sample_vault).tail(5) == []


def test_provider_failure_is_one_line_and_the_turn_is_kept(
    sample_vault: Vault, fake_server: FakeModelServer
) -> None:
    fake_server.reply(Script(status=500, error="out of memory"))
    settings = ProviderSettings(name="ollama", model="llama3", base_url=fake_server.url)
    console, buffer = console_buffer()
    session = ChatSession(LoreSession(sample_vault, make_provider(settings)), console)
    assert run_lines(session, QUESTION + "\n" + QUESTION + "\n") == 0
    errors = [line for line in buffer.getvalue().splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "out of memory" in errors[0]
    turns = HistoryStore(sample_vault).tail(5)
    assert [turn.status for turn in turns] == ["error", "ok"]


def test_a_slow_first_token_says_what_it_is_waiting_for(
    sample_vault: Vault, fake_server: FakeModelServer
) -> None:
    fake_server.reply(Script(first_piece_delay_s=1.3), Script())
    settings = ProviderSettings(name="ollama", model="llama3", base_url=fake_server.url)
    console, buffer = console_buffer()
    session = ChatSession(LoreSession(sample_vault, make_provider(settings)), console)
    session.handle(QUESTION)
    first = buffer.getvalue()
    assert "(waiting for ollama llama3… Ctrl-C cancels)\nHello, world." in first
    session.handle(QUESTION)
    assert "waiting for" not in buffer.getvalue()[len(first) :]


def test_ctrl_c_cancels_the_answer_keeps_the_turn_and_the_session(sample_vault: Vault) -> None:
    provider = SlowProvider()
    console, buffer = console_buffer()
    session = ChatSession(LoreSession(sample_vault, provider), console)

    def press_ctrl_c() -> None:
        if provider.first_word_sent.wait(10):
            os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    try:
        keep_going = session.handle(QUESTION)
    finally:
        presser.join()
    assert keep_going
    assert "cancelled" in buffer.getvalue()
    turns = HistoryStore(sample_vault).tail(5)
    assert [turn.status for turn in turns] == ["cancelled"]
    assert "word199" not in turns[0].answer
    # The session carries on: the next command runs normally.
    assert session.handle("/tokens")


def test_completion_offers_commands_with_their_help() -> None:
    completer = SlashCompleter(build_registry())
    completions = list(completer.get_completions(Document("/sea"), CompleteEvent()))
    assert completions and completions[0].text == "/search"
    assert completions[0].display_meta_text
    assert list(completer.get_completions(Document("hello /sea"), CompleteEvent())) == []
    assert list(completer.get_completions(Document("/search mars"), CompleteEvent())) == []
    assert list(completer.get_completions(Document("/nope x"), CompleteEvent())) == []
    everything = {c.text for c in completer.get_completions(Document("/"), CompleteEvent())}
    assert {"/help", "/search", "/context", "/compact", "/quit"} <= everything


def test_typed_lines_are_kept_between_sessions_but_not_huge_pastes(
    chat: tuple[ChatSession, io.StringIO],
) -> None:
    session, _ = chat
    pasted = "/help " + "x" * 5000
    with create_pipe_input() as pipe:
        # A terminal delivers a paste as one bracketed block, not as key presses.
        pipe.send_text(f"/tokens\n\x1b[200~{pasted}\x1b[201~\n")
        pipe.close()
        history = open_input_history(input_history_path())
        run_interactive(session, input=pipe, output=DummyOutput(), history=history)
    remembered = list(FileHistory(str(input_history_path())).load_history_strings())
    assert remembered == ["/tokens"]


def test_lore_chat_reads_questions_from_a_pipe(sample_vault: Vault, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "lore", "--vault", str(sample_vault.root), "chat"],
        input=f"{QUESTION}\n/nope\n/quit\nnever asked\n",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LORE_HOME": str(tmp_path / "home")},
    )
    assert result.returncode == 0, result.stderr
    assert "sources: [" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    questions = [turn.question for turn in HistoryStore(sample_vault).tail(5)]
    assert questions == [QUESTION]


def test_the_line_repl_never_loads_the_full_screen_toolkit() -> None:
    # `lore chat` is for terminals where the app is not wanted; it must start without Textual.
    code = "import sys, lore.repl, lore.cli.chat_cmd; print('textual' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr


def test_arguments_complete_commands_for_help_and_titles_for_note(
    chat: tuple[ChatSession, io.StringIO],
) -> None:
    session, _ = chat
    completer = session.completer
    help_args = [c.text for c in completer.get_completions(Document("/help hist"), CompleteEvent())]
    assert help_args[0] == "history"
    titles = [c.text for c in completer.get_completions(Document("/note jup"), CompleteEvent())]
    assert titles and titles[0] == "Jupiter"
    # Titles that start with the words come first, then those that merely contain them.
    belts = [c.text for c in completer.get_completions(Document("/note belt"), CompleteEvent())]
    assert belts == ["Asteroid Belt", "Kuiper Belt"]
    voyagers = [c.text for c in completer.get_completions(Document("/note voy"), CompleteEvent())]
    assert voyagers == ["Voyager 1", "Voyager 2"]
