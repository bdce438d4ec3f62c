"""JSON nested deeper than the decoder goes is taken as the malformed text it is: refused
in one line when it comes from outside, read as missing when it is Lore's own state. The
standard decoder raises RecursionError for it, which is not a ValueError."""

from __future__ import annotations

import base64

import pytest
from pydantic import BaseModel

from lore.core.gates.llm import ReplyRejected, parse_reply
from lore.core.providers.http_common import error_message_of, parse_json_line
from lore.core.vault import Vault
from lore.errors import StreamInterrupted, UsageError
from lore.mcp_server.checks import decode_cursor

DEEP = "[" * 100_000 + "]" * 100_000


class Verdict(BaseModel):
    ok: bool


def test_a_model_servers_stream_line_nested_too_deep_is_an_interrupted_stream() -> None:
    with pytest.raises(StreamInterrupted, match="not JSON"):
        parse_json_line('{"message": ' + DEEP + "}", "Ollama")


def test_an_error_body_nested_too_deep_is_shown_as_text() -> None:
    assert error_message_of(DEEP.encode()).startswith("[[[")


def test_a_review_reply_nested_too_deep_is_rejected() -> None:
    with pytest.raises(ReplyRejected, match="nested too deeply"):
        parse_reply(DEEP, Verdict, "nonce")


def test_a_cursor_nested_too_deep_is_not_one_list_notes_returned() -> None:
    cursor = base64.urlsafe_b64encode(DEEP.encode()).decode("ascii")
    with pytest.raises(UsageError, match="cursor"):
        decode_cursor(cursor)


def test_lores_own_state_nested_too_deep_is_read_as_missing(vault: Vault) -> None:
    """A file of Lore's own state damaged this way is read as absent, as one damaged any
    other way is: made again, or done without."""
    from lore.core import conversations, theme_cache
    from lore.core.index_manifest import Manifest

    deep = '{"x": ' + DEEP + "}"
    state = vault.layout.state
    remembered = conversations._path(vault, "tty1")
    remembered.parent.mkdir(parents=True, exist_ok=True)
    remembered.write_text(deep, encoding="utf-8")
    assert conversations._remembered(vault, "tty1") is None
    folder = state / "manifest-test"
    folder.mkdir()
    manifest = Manifest(folder)
    manifest.snapshot_path.write_text(deep, encoding="utf-8")
    assert manifest.load() is False
    cache = state / "themes.json"
    cache.write_text(deep, encoding="utf-8")
    assert theme_cache._read(cache, []) is None
    journals = vault.versions._journal_folder
    journals.mkdir(parents=True, exist_ok=True)
    (journals / "deep.json").write_text(deep, encoding="utf-8")
    (journals / "fine.json").write_text('{"id": "fine"}', encoding="utf-8")
    assert vault.versions._journals() == [{"id": "fine"}]
