"""Which conversation a `lore ask` continues: one per terminal, while it is recent.

The app and every REPL session are each a conversation of their own. A command line has no
session, so each terminal remembers its latest conversation in `.lore/state/conversations/`,
one small file per terminal (two terminals never write the same file). `lore ask` continues
that conversation when the terminal asked within CONTINUE_WINDOW_S, or whenever asked to
(`--continue`); otherwise, or with `--new`, it starts a new one. Two terminals asking at once
are two conversations, and neither follows up the other.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from lore.core.dataclass_lite import dataclass_lite
from lore.core.json_decode import decode_json
from lore.core.storage import atomic_write_json
from lore.core.turns import new_conversation_id
from lore.core.vault import Vault
from lore.errors import LoreError

# Ten minutes: long enough to read an answer and ask again, short enough that tomorrow's
# first question is not read against yesterday's last.
CONTINUE_WINDOW_S = 600
_FOLDER = "conversations"


def terminal_key() -> str:
    """This terminal, as steadily as the system says: its session, its tty, the machine."""
    parts = [_host_name()]
    try:
        parts.append(f"session {os.getsid(0)}")
    except (AttributeError, OSError):
        parts.append(f"parent {os.getppid()}")
    for stream in (0, 1, 2):
        try:
            parts.append(os.ttyname(stream))
            break
        except OSError:
            continue
    return _sha256_hex("\0".join(parts).encode("utf-8"))[:16]


def _sha256_hex(data: bytes) -> str:
    """sha256 as hashlib computes it, from the one built into Python where there is one:
    hashlib loads OpenSSL and sets up its every algorithm as it is imported (2-3 ms of
    every ask, which needs this one hash). Python 3.12 calls that module `_sha2`; without
    either, hashlib's."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found]
        except ImportError:
            from hashlib import sha256
    return str(sha256(data).hexdigest())


def _host_name() -> str:
    """The machine's name, as `socket.gethostname` gives it: from `uname` where there is one,
    without loading the socket module for it."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


@dataclass_lite
class Continuation:
    """The conversation a terminal's next ask belongs to, whether it carries one on, and the
    terminal's key."""

    conversation: str
    continued: bool  # False: a new conversation starts with this ask
    terminal: str


def _path(vault: Vault, terminal: str) -> Path:
    return vault.layout.state / _FOLDER / f"{terminal}.json"


def _remembered(vault: Vault, terminal: str) -> tuple[str, float] | None:
    try:
        data = decode_json(_path(vault, terminal).read_text(encoding="utf-8"))
        return str(data["conversation"]), float(data["asked"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def choose(
    vault: Vault,
    *,
    continue_latest: bool = False,
    new: bool = False,
    terminal: str | None = None,
    now: float | None = None,
) -> Continuation:
    """The conversation this terminal's next ask belongs to."""
    terminal = terminal or terminal_key()
    now = time.time() if now is None else now
    if not new:
        remembered = _remembered(vault, terminal)
        if remembered is not None:
            conversation, asked = remembered
            if continue_latest or now - asked <= CONTINUE_WINDOW_S:
                return Continuation(conversation, True, terminal)
        elif continue_latest:
            latest = _latest_conversation(vault)
            if latest:
                return Continuation(latest, True, terminal)
    return Continuation(new_conversation_id(), False, terminal)


def _latest_conversation(vault: Vault) -> str:
    """The conversation of the newest turn in the history, from any face."""
    from lore.core.history import HistoryStore

    for turn in reversed(HistoryStore(vault).tail(1)):
        return turn.conversation
    return ""


def remember(vault: Vault, continuation: Continuation, *, now: float | None = None) -> None:
    """Note that this terminal just asked in its conversation. Failing to is no error: the
    next ask then starts a new conversation, and nothing else is lost."""
    asked = time.time() if now is None else now
    record = {"conversation": continuation.conversation, "asked": asked}
    try:
        atomic_write_json(_path(vault, continuation.terminal), record)
    except (OSError, LoreError):
        pass
