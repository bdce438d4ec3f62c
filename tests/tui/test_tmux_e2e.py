"""`lore` in a real terminal: tmux runs the app on a copy of the sample vault, a question is
typed, and the answer with a citation must appear on the screen."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lore.core.history import HistoryStore
from lore.core.vault import Vault

REPO = Path(__file__).resolve().parents[2]
SAMPLE_VAULT = REPO / "samples" / "vault"

pytestmark = pytest.mark.slow


class Terminal:
    """One tmux server of our own (a private socket), holding one session."""

    def __init__(self, socket: str, session: str) -> None:
        self.socket = socket
        self.session = session

    def tmux(self, *args: str) -> str:
        result = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False
        )
        return result.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.session)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", self.session, "-l", text)

    def key(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.session, *keys)

    def wait_for(self, condition: Callable[[str], bool], what: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if condition(screen):
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{what} never appeared on screen; last screen:\n{screen}")


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[tuple[Terminal, Path]]:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed: the end-to-end test needs it (.ci/run installs it)")
    vault = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".lore"))
    home = tmp_path / "home"
    env = {
        "LORE_HOME": str(home),
        "TERM": "xterm-256color",
        "COLORTERM": "truecolor",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    command = " ".join(
        [
            "env",
            *(f"{key}={value}" for key, value in env.items()),
            sys.executable,
            "-m",
            "lore",
            "--vault",
            str(vault),
            "--provider",
            "offline",
        ]
    )
    term = Terminal(f"lore-e2e-{uuid.uuid4().hex[:8]}", "lore")
    subprocess.run(
        ["tmux", "-L", term.socket, "-f", "/dev/null", "new-session", "-d", "-s", term.session,
         "-x", "140", "-y", "45", command],
        check=True,
    )  # fmt: skip
    try:
        yield term, vault
    finally:
        term.tmux("kill-server")


def test_a_question_typed_in_a_real_terminal_is_answered_with_a_citation(
    terminal: tuple[Terminal, Path],
) -> None:
    term, vault = terminal
    term.wait_for(lambda screen: "1 Ask" in screen and "Solar System" in screen, "the first screen")
    term.wait_for(lambda screen: "ctx" in screen and "?/" not in screen, "the context meter")
    term.type("How thick is the ice shell of Europa?")
    term.key("Enter")
    screen = term.wait_for(lambda screen: "Sources:" in screen, "the answer's sources", timeout=45)
    assert "Europa" in screen
    assert "[1]" in screen
    history = HistoryStore(Vault.open(vault)).tail(1)
    assert history and history[0].status == "ok" and history[0].cited
    # Alt+2 from the prompt, sent as terminals without the kitty protocol send it (ESC, 2),
    # switches pane rather than typing a symbol.
    term.key("M-2")
    term.wait_for(lambda screen: "Search every turn" in screen, "the History pane")
    term.key("M-1")
    screen = term.wait_for(lambda screen: "f3 Sources" in screen, "the Ask pane again")
    assert "™" not in screen
    term.key("C-q")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and term.tmux("list-sessions"):
        time.sleep(0.2)
    assert not term.tmux("list-sessions"), "lore did not quit on Ctrl+Q"
