"""Local 127.0.0.1 model servers for tests: Ollama NDJSON and OpenAI SSE, scripted per request.

One `FakeModelServer` speaks both protocols (`/api/chat`, `/api/tags`, `/v1/chat/completions`,
`/v1/models`) from a thread. Each chat request takes the next `Script` from the queue (or the
default one) which says what to stream and how to misbehave: an error status, a slow first
byte, a stall, a connection dropped mid-body, a stream that ends without its done marker.
Every request is recorded so a test can check what the client sent.

    with FakeModelServer() as server:
        server.reply(Script(pieces=["Hel", "lo"]), Script(status=500, error="boom"))
        ... point a provider at server.url ...
        assert server.requests[0].body["options"]["num_ctx"] == 4096
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

# A stall lasts until the test ends (the server stops) or this long, whichever is first.
STALL_LIMIT_S = 30.0


@dataclass
class Script:
    """How the server answers one chat request."""

    pieces: list[str] = field(default_factory=lambda: ["Hello", ", ", "world", "."])
    prompt_tokens: int | None = 42
    completion_tokens: int | None = 4
    status: int = 200
    error: str = ""  # The message in the body of an error status.
    first_byte_delay_s: float = 0.0  # Before the response headers (a model loading).
    piece_delay_s: float = 0.0  # Between two pieces.
    first_piece_delay_s: float = 0.0  # After the headers, before the first piece (thinking).
    stall_after: int | None = None  # Send this many pieces, then go silent.
    ping_after: int | None = None  # OpenAI only: this many pieces, then keep-alives for ever.
    drop_after: int | None = None  # Send this many pieces, then close the connection mid-body.
    omit_done: bool = False  # End the body cleanly but without the protocol's done marker.
    garbage_after: int | None = None  # Send a line that is not JSON after this many pieces.
    stream_error: str | None = None  # Send an in-stream error object after the pieces.
    whole_json: bool = False  # OpenAI only: ignore `stream` and answer with one JSON body.
    html_page: bool = False  # Answer 200 with a web page, as a portal or proxy would.


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeModelServer:
    def __init__(
        self,
        *,
        models: tuple[str, ...] = ("llama3", "gpt-test"),
        api_key: str | None = None,
        reject_stream_options: bool = False,
        port: int = 0,
    ) -> None:
        self.models = list(models)
        self.api_key = api_key
        self.reject_stream_options = reject_stream_options
        self.default = Script()
        self.requests: list[RecordedRequest] = []
        self._scripts: deque[Script] = deque()
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self._httpd = _QuietServer(("127.0.0.1", port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._httpd.fake = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def reply(self, *scripts: Script) -> None:
        """Queue scripts for the next chat requests, in order."""
        with self._lock:
            self._scripts.extend(scripts)

    def next_script(self) -> Script:
        with self._lock:
            return self._scripts.popleft() if self._scripts else self.default

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith(("/api/chat", "/chat/completions"))]

    def start(self) -> FakeModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def refused_url() -> str:
    """An address on this machine where nothing listens: connections are refused at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def fake_server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as server:
        yield server


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # Clients hang up mid-stream on purpose in these tests.


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # Keep test output clean.

    @property
    def fake(self) -> FakeModelServer:
        return self.server.fake  # type: ignore[attr-defined,no-any-return]

    # -- routing ---------------------------------------------------------------------------

    def do_GET(self) -> None:
        self.fake.record(RecordedRequest("GET", self.path, dict(self.headers), None))
        if self.path == "/api/tags":
            self._send_json(200, {"models": [{"name": name} for name in self.fake.models]})
        elif self.path == "/v1/models":
            self._send_json(200, {"data": [{"id": name} for name in self.fake.models]})
        else:
            self._send_text(404, "404 page not found")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        self.fake.record(RecordedRequest("POST", self.path, dict(self.headers), body))
        if self.path == "/api/chat":
            self._chat(body, ollama=True)
        elif self.path == "/v1/chat/completions":
            self._chat(body, ollama=False)
        else:
            self._send_text(404, "404 page not found")

    # -- chat ------------------------------------------------------------------------------

    def _chat(self, body: Any, *, ollama: bool) -> None:
        script = self.fake.next_script()
        if script.first_byte_delay_s:
            self.fake.stopping.wait(script.first_byte_delay_s)
        expected_key = f"Bearer {self.fake.api_key}"
        if not ollama and self.fake.api_key and self.headers.get("Authorization") != expected_key:
            self._send_json(401, _openai_error("Incorrect API key provided", "invalid_api_key"))
            return
        if script.html_page:
            self._send_text(200, "<html><body>Please sign in</body></html>", "text/html")
            return
        if script.status >= 400:
            message = script.error or "something went wrong"
            payload = {"error": message} if ollama else _openai_error(message, "server_error")
            self._send_json(script.status, payload)
            return
        model = body.get("model") if isinstance(body, dict) else None
        if model not in self.fake.models:
            if ollama:
                self._send_json(404, {"error": f'model "{model}" not found, try pulling it first'})
            else:
                message = f"The model `{model}` does not exist or you do not have access to it."
                self._send_json(404, _openai_error(message, "model_not_found"))
            return
        wants_usage = isinstance(body, dict) and "stream_options" in body
        if not ollama and wants_usage and self.fake.reject_stream_options:
            self._send_json(
                400, _openai_error("Unrecognized request argument: stream_options", "x")
            )
            return
        if not ollama and script.whole_json:
            self._send_json(200, _openai_whole(script, model))
            return
        content_type = "application/x-ndjson" if ollama else "text/event-stream"
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = (
            _ollama_events(script, model) if ollama else _openai_events(script, model, wants_usage)
        )
        self._stream(script, events, ollama=ollama)

    def _stream(self, script: Script, events: list[bytes], *, ollama: bool) -> None:
        pieces_sent = 0
        if not ollama:
            self._chunk(b": keep-alive\n\n")
        for index, event in enumerate(events):
            is_piece = index < len(script.pieces)
            if is_piece:
                if script.ping_after is not None and pieces_sent >= script.ping_after:
                    while not self.fake.stopping.wait(0.05):
                        self._chunk(b": ping\n\n")
                    return
                if script.stall_after is not None and pieces_sent >= script.stall_after:
                    self.fake.stopping.wait(STALL_LIMIT_S)
                    self.close_connection = True
                    return
                if script.drop_after is not None and pieces_sent >= script.drop_after:
                    self._drop()
                    return
                if script.garbage_after is not None and pieces_sent == script.garbage_after:
                    self._chunk(b"<html>Bad Gateway</html>\n" if ollama else b"data: {oops\n\n")
                if pieces_sent and script.piece_delay_s:
                    time.sleep(script.piece_delay_s)
                if not pieces_sent and script.first_piece_delay_s:
                    time.sleep(script.first_piece_delay_s)
                pieces_sent += 1
            elif index == len(script.pieces):
                if script.drop_after is not None or script.stall_after is not None:
                    # Fewer pieces than the drop point: drop before the end all the same.
                    self._drop()
                    return
                if script.stream_error is not None:
                    error = (
                        {"error": script.stream_error}
                        if ollama
                        else _openai_error(script.stream_error, "server_error")
                    )
                    line = json.dumps(error).encode()
                    self._chunk(line + b"\n" if ollama else b"data: " + line + b"\n\n")
                    self._end()
                    return
                if script.omit_done:
                    self._end()
                    return
            self._chunk(event)
        self._end()

    # -- low level -------------------------------------------------------------------------

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_text(self, status: int, text: str, content_type: str = "text/plain") -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _openai_error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


def _ollama_events(script: Script, model: str) -> list[bytes]:
    events = [
        json.dumps(
            {"model": model, "message": {"role": "assistant", "content": piece}, "done": False}
        ).encode()
        + b"\n"
        for piece in script.pieces
    ]
    final: dict[str, Any] = {
        "model": model,
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "stop",
    }
    if script.prompt_tokens is not None:
        final["prompt_eval_count"] = script.prompt_tokens
    if script.completion_tokens is not None:
        final["eval_count"] = script.completion_tokens
    events.append(json.dumps(final).encode() + b"\n")
    return events


def _openai_events(script: Script, model: str, wants_usage: bool) -> list[bytes]:
    def event(payload: Any) -> bytes:
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    def delta(content: str | None, finish: str | None) -> dict[str, Any]:
        choice = {"index": 0, "delta": {} if content is None else {"content": content}}
        choice["finish_reason"] = finish
        return {"id": "c1", "object": "chat.completion.chunk", "model": model, "choices": [choice]}

    events = [event(delta(piece, None)) for piece in script.pieces]
    tail = event(delta(None, "stop"))
    if wants_usage:
        usage = {
            "prompt_tokens": script.prompt_tokens,
            "completion_tokens": script.completion_tokens,
        }
        tail += event({"id": "c1", "choices": [], "usage": usage})
    events.append(tail + b"data: [DONE]\n\n")
    return events


def _openai_whole(script: Script, model: str) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "".join(script.pieces)},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": script.prompt_tokens,
            "completion_tokens": script.completion_tokens,
        },
    }
