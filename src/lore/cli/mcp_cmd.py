"""`lore mcp`: serve the vault to agents over stdio, or over HTTP with a bearer token."""

from __future__ import annotations

import sys
from typing import Any

from lore.cli.common import Context
from lore.rich_display import plain


def register(subparsers: Any) -> None:
    command = subparsers.add_parser(
        "mcp",
        help="serve the vault to agents over the Model Context Protocol",
        description="Agents may search, read, ask and propose; what they write passes the "
        "admission gates, and only a person promotes what is held. Without --http the "
        "server speaks on standard input and output, as an agent's MCP configuration "
        "launches it.",
    )
    how = command.add_mutually_exclusive_group()
    how.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp (host 127.0.0.1 unless given); "
        "clients must send the bearer token",
    )
    how.add_argument(
        "--token",
        action="store_true",
        help="print the vault's bearer token for --http (made on first use) and exit",
    )
    command.set_defaults(func=cmd_mcp)


def cmd_mcp(ctx: Context) -> int:
    # The SDK is imported here, not at the top: no other command should pay for loading it.
    from lore.mcp_server.auth import vault_token

    session = ctx.session
    if ctx.args.token:
        sys.stdout.write(vault_token(session) + "\n")
        return 0
    import anyio

    from lore.mcp_server.run import (
        log_to_stderr,
        open_in_background,
        parse_address,
        serve_http,
        serve_stdio,
    )
    from lore.mcp_server.server import build_server

    log_to_stderr()
    if ctx.args.http:
        host, port = parse_address(ctx.args.http)
        token = vault_token(session)
        server = build_server(session, host=host)
        open_in_background(server)
        shown = f"[{host}]" if ":" in host else host
        ctx.err.print(
            plain(
                f"lore mcp: serving {session.name} at http://{shown}:{port}/mcp; clients send "
                "'Authorization: Bearer TOKEN' (see: lore mcp --token)"
            )
        )
        anyio.run(serve_http, server, host, port, token)
        return 0
    server = build_server(session)
    open_in_background(server)
    if sys.stdin.isatty():
        ctx.err.print(
            plain(
                f"lore mcp: serving {session.name} on standard input and output; an agent's "
                "MCP configuration starts this command itself (Ctrl-D ends it)"
            )
        )
    anyio.run(serve_stdio, server)
    return 0
