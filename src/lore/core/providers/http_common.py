"""What the HTTP providers share: one client per event loop, retries, and errors as one line.

Ollama and OpenAI-compatible servers fail in the same few ways: nothing listens on the port,
the model is not there, the key is refused, the server errors, the reply stops half way or the
server goes silent. Each becomes a `ProviderError` subclass whose message says what happened
and what to do, so the command line, the REPL and the app can show it as one line.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx

from lore.config import ProviderSettings
from lore.core.json_decode import decode_json
from lore.errors import (
    ModelNotFound,
    ProviderAuthError,
    ProviderError,
    ProviderReplyInvalid,
    ProviderUnavailable,
    StreamInterrupted,
)

# Connection attempts back off 0.25 s, 0.5 s, 1 s … so a server that is starting up gets a
# moment, and a server that is down costs the user a second or two, not a minute.
RETRY_BASE_DELAY_S = 0.25
# Server error bodies are read for their message only; a huge HTML page is not worth reading.
ERROR_BODY_LIMIT = 4096

# Fails before any byte of the request reached the server, so retrying cannot run a prompt twice.
CONNECT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def origin_of(url: str) -> str:
    """The scheme, host and port of `url`: what a user recognises, without paths or keys."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else url


def shorten(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def error_message_of(body: bytes) -> str:
    """The human part of an error body: `{"error": "..."}`, `{"error": {"message": ...}}`, text."""
    text = body[:ERROR_BODY_LIMIT].decode("utf-8", errors="replace").strip()
    try:
        data = decode_json(text)
    except ValueError:
        return shorten(text)
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict):
            error = error.get("message") or error.get("code") or error
        if error:
            return shorten(str(error))
    return shorten(text)


class ProviderClient:
    """An `httpx.AsyncClient` tied to the event loop that uses it.

    The REPL and the command line may run each ask in its own event loop; a client made in
    one loop cannot be used in the next, so a new one is made when the loop changes.
    """

    def __init__(
        self,
        settings: ProviderSettings,
        *,
        headers: dict[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.settings = settings
        self._headers = headers or {}
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def timeout(self) -> httpx.Timeout:
        # Covers the wait for the response headers; `LineReader` applies the limits on the
        # body, before the first token (a model loading) and between tokens (a stall).
        return httpx.Timeout(self.settings.timeout_s, connect=self.settings.connect_timeout_s)

    def get(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._client.is_closed or self._loop is not loop:
            self._client = httpx.AsyncClient(
                timeout=self.timeout(),
                headers=self._headers,
                transport=self._transport,
                follow_redirects=True,
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is None or client.is_closed:
            return
        try:
            if self._loop is asyncio.get_running_loop():
                await client.aclose()
        except RuntimeError:
            pass  # No running loop: the client's loop is gone and its sockets with it.


class StreamFailure:
    """Turns transport errors into one-line provider errors that name the server."""

    def __init__(self, label: str, url: str, settings: ProviderSettings) -> None:
        self.label = label
        self.origin = origin_of(url)
        self.settings = settings

    def unreachable(self, exc: Exception) -> ProviderError:
        if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
            return ProviderUnavailable(
                f"{self.label} at {self.origin} did not accept a connection within "
                f"{self.settings.connect_timeout_s:g} s: check that it is running and reachable"
            )
        return ProviderUnavailable(
            f"cannot reach {self.label} at {self.origin} (is the server running?): {_reason(exc)}"
        )

    def silent(self, received_chars: int) -> ProviderError:
        """The server stopped sending: before the reply began, or part way through it."""
        if received_chars == 0:
            return ProviderError(
                f"{self.label} at {self.origin} sent nothing for {self.settings.timeout_s:g} s "
                "and was given up (a large model may need a longer provider.timeout_s)"
            )
        return StreamInterrupted(
            f"{self.label} stalled: nothing new for {stall_limit(self.settings):g} s after "
            f"{received_chars} characters of the reply (provider.stall_timeout_s)"
        )

    def during_stream(self, exc: Exception, received_chars: int) -> ProviderError:
        if isinstance(exc, httpx.ReadTimeout):
            return self.silent(received_chars)
        if isinstance(exc, CONNECT_ERRORS):
            return self.unreachable(exc)
        if received_chars == 0:
            return StreamInterrupted(
                f"{self.label} at {self.origin} closed the connection without answering "
                f"({_reason(exc)})"
            )
        return StreamInterrupted(
            f"the reply from {self.label} was cut off after {received_chars} characters "
            f"({_reason(exc)})"
        )

    def cut_off(self, received_chars: int) -> StreamInterrupted:
        return StreamInterrupted(
            f"the reply from {self.label} was cut off after {received_chars} characters "
            "(the stream ended before the server said it was done)"
        )


def stall_limit(settings: ProviderSettings) -> float:
    """Seconds without a new line, once text flows, before a reply counts as stalled."""
    # Never longer than the wait for the first token: a reply under way is no slower.
    return min(settings.stall_timeout_s, settings.timeout_s)


class LineReader:
    """The lines of a streaming reply, given up on when the server stops making progress.

    Before the first text the server may take `timeout_s` (a model loading); once text flows,
    `stall_timeout_s` without a new line is a stall. Blank lines and SSE comments (keep-alives)
    prove the connection is open, not that the model is working, so they do not count.
    """

    def __init__(self, response: httpx.Response, failure: StreamFailure) -> None:
        self._lines = response.aiter_lines()
        self._failure = failure
        self._settings = failure.settings
        self.received_chars = 0
        self._deadline = time.monotonic() + self._settings.timeout_s

    def got_text(self, text: str) -> None:
        self.received_chars += len(text)
        self._deadline = time.monotonic() + stall_limit(self._settings)

    def _limit(self) -> float:
        if self.received_chars:
            return stall_limit(self._settings)
        return self._settings.timeout_s

    async def next_line(self) -> str | None:
        """The next line (blank lines included, comments not); None at the end of the body."""
        while True:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                raise self._failure.silent(self.received_chars)
            try:
                async with asyncio.timeout(remaining):
                    line = await anext(self._lines)
            except StopAsyncIteration:
                return None
            except TimeoutError:
                raise self._failure.silent(self.received_chars) from None
            except httpx.HTTPError as exc:
                raise self._failure.during_stream(exc, self.received_chars) from None
            if line.startswith(":"):
                continue
            if line.strip():
                self._deadline = time.monotonic() + self._limit()
            return line


def _reason(exc: Exception) -> str:
    text = str(exc).strip()
    return shorten(text) if text else type(exc).__name__


@asynccontextmanager
async def open_stream(
    client: ProviderClient,
    failure: StreamFailure,
    url: str,
    payload: dict[str, Any],
    *,
    on_status: Callable[[int, str], ProviderError],
) -> AsyncIterator[httpx.Response]:
    """POST `payload` and yield the streaming response once the server accepted it.

    Connection errors are retried `settings.retries` times with backoff. Nothing else is:
    once a request reached the server it may have started generating, and an error status is
    an answer, not an accident. A status of 400 or more becomes the error `on_status` makes
    from the status and the server's message.
    """
    attempts = client.settings.retries + 1
    http = client.get()
    request = http.build_request("POST", url, json=payload)
    response: httpx.Response | None = None
    for attempt in range(attempts):
        try:
            response = await http.send(request, stream=True)
            break
        except CONNECT_ERRORS as exc:
            if attempt + 1 >= attempts:
                raise failure.unreachable(exc) from None
            await asyncio.sleep(RETRY_BASE_DELAY_S * (2**attempt))
        except httpx.HTTPError as exc:
            raise failure.during_stream(exc, 0) from None
    assert response is not None
    try:
        if response.status_code >= 400:
            body = await _read_limited(response)
            raise on_status(response.status_code, error_message_of(body))
        if response.headers.get("content-type", "").startswith("text/html"):
            # A login portal, a proxy's page, or another web server on the port.
            raise ProviderReplyInvalid(
                f"{failure.label} at {failure.origin} answered with a web page, not a chat "
                "stream: check provider.base_url"
            )
        yield response
    finally:
        await response.aclose()


async def _read_limited(response: httpx.Response) -> bytes:
    body = b""
    try:
        async for part in response.aiter_bytes():
            body += part
            if len(body) >= ERROR_BODY_LIMIT:
                break
    except httpx.HTTPError:
        pass  # The status already says what went wrong; a broken error body adds nothing.
    return body


def status_error(
    label: str,
    origin: str,
    status: int,
    message: str,
    *,
    model: str,
    key_hint: str,
) -> ProviderError:
    """One line for an error status, shared by both HTTP providers."""
    detail = f": {message}" if message else ""
    if status in (401, 403):
        return ProviderAuthError(
            f"{label} at {origin} refused the request ({status}){detail}; {key_hint}"
        )
    if status == 404:
        if "model" in message.lower():
            return ModelNotFound(f"{label} at {origin} has no model {model!r}{detail}")
        return ProviderError(
            f"{label} at {origin} has no chat endpoint here (404): check provider.base_url"
        )
    if status == 429:
        return ProviderError(f"{label} at {origin} is rate limiting requests (429){detail}")
    if status >= 500:
        return ProviderError(f"{label} at {origin} failed with a server error ({status}){detail}")
    return ProviderError(f"{label} at {origin} rejected the request ({status}){detail}")


def parse_json_line(line: str, label: str) -> dict[str, Any]:
    try:
        data = decode_json(line)
    except ValueError:
        raise StreamInterrupted(
            f"{label} sent a line that is not JSON mid-stream: {shorten(line, 80)!r}"
        ) from None
    if not isinstance(data, dict):
        raise StreamInterrupted(
            f"{label} sent an unexpected value mid-stream: {shorten(line, 80)!r}"
        )
    return data


def non_negative_int(value: Any) -> int | None:
    """A token count from a server reply, or None when it is missing or nonsense."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
