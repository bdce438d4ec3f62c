"""JSON from outside nested deeper than the decoder goes is refused in one line, as any text
that is not the JSON expected: the standard decoder raises RecursionError for it, which is
not a ValueError."""

from __future__ import annotations

import base64

import pytest
from pydantic import BaseModel

from lore.core.gates.llm import ReplyRejected, parse_reply
from lore.core.providers.http_common import error_message_of, parse_json_line
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
