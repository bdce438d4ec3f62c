"""Serving over stdio (what desktop agents launch) and over streamable HTTP on a port.

Over stdio, standard output belongs to the protocol: the transport is handed its own copy of
it and file descriptor 1 is pointed at standard error, so nothing else that prints (Lore, a
library, a C extension) can put a stray line in front of the client.
"""

from __future__ import annotations

import io
import logging
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from mcp.server.stdio import stdio_server

from lore.errors import UsageError
from lore.mcp_server.auth import BearerTokenGate
from lore.mcp_server.server import LoreMcpServer

logger = logging.getLogger("lore.mcp")


def _not_a_closed_stream(record: logging.LogRecord) -> bool:
    # The SDK (1.x) logs a traceback when a client ends its HTTP session while the server's
    # notification stream is open; a client leaving is not an error.
    error = record.exc_info[1] if record.exc_info else None
    return not (
        record.name.startswith("mcp.server.streamable_http")
        and isinstance(error, anyio.ClosedResourceError)
    )


def log_to_stderr() -> None:
    """Warnings and errors, one line each, on standard error; the SDK's chatter stays quiet."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("lore mcp: %(levelname)s: %(message)s"))
    handler.addFilter(_not_a_closed_stream)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)


def open_in_background(server: LoreMcpServer) -> None:
    """Open the note index while the client connects, so the first search is quick."""

    def open_index() -> None:
        try:
            server.open_index_once()
        except Exception as exc:  # the first tool call meets the same error, as one line
            logger.warning("could not open the index: %s", exc)

    threading.Thread(target=open_index, name="lore-mcp-index", daemon=True).start()


def parse_address(text: str) -> tuple[str, int]:
    """`PORT`, `HOST:PORT` or `[IPV6]:PORT`; the host is 127.0.0.1 unless named."""
    host, colon, port_text = text.rpartition(":")
    if not colon:
        host, port_text = "", text
    host = host.strip("[]") or "127.0.0.1"
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise UsageError(f"--http: expected [HOST:]PORT with a port from 1 to 65535 (got {text!r})")
    return host, int(port_text)


@contextmanager
def _stdout_for_protocol() -> Iterator[anyio.AsyncFile[str]]:
    sys.stdout.flush()
    stdout_fd = sys.stdout.fileno()
    protocol_fd = os.dup(stdout_fd)
    saved_fd = os.dup(stdout_fd)
    os.dup2(sys.stderr.fileno(), stdout_fd)
    protocol = io.TextIOWrapper(os.fdopen(protocol_fd, "wb"), encoding="utf-8")
    try:
        yield anyio.wrap_file(protocol)
    finally:
        sys.stdout.flush()
        protocol.close()
        os.dup2(saved_fd, stdout_fd)
        os.close(saved_fd)


async def serve_stdio(server: LoreMcpServer) -> None:
    """Serve one client on standard input and output until it closes them."""
    try:
        with _stdout_for_protocol() as protocol:
            async with stdio_server(stdout=protocol) as (read_stream, write_stream):
                # FastMCP 1.x has no public way to give its stdio transport another stream.
                lowlevel: Any = server._mcp_server
                await lowlevel.run(
                    read_stream, write_stream, lowlevel.create_initialization_options()
                )
    finally:
        await server.clients.aclose()


async def serve_http(server: LoreMcpServer, host: str, port: int, token: str) -> None:
    """Serve streamable HTTP at http://HOST:PORT/mcp to clients that bear `token`."""
    import uvicorn

    app = BearerTokenGate(server.streamable_http_app(), token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    try:
        await uvicorn.Server(config).serve()
    finally:
        await server.clients.aclose()
