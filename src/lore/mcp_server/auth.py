"""The bearer token that guards `lore mcp --http`: one per vault, made on first use.

Anyone who can reach the port could otherwise read the vault and file proposals, so every
HTTP request must carry `Authorization: Bearer <token>`. The token lives in the vault's
`.lore/` folder (never shared or synced), readable by its owner alone; `lore mcp --token`
prints it for pasting into an agent's configuration.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any

from lore.core.session import LoreSession

TOKEN_FILE = "mcp-token"
REFUSAL = "lore: missing or wrong bearer token (see: lore mcp --token)\n"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def vault_token(session: LoreSession) -> str:
    """The vault's token, made and kept on first use."""
    return session.keep_secret(TOKEN_FILE, new_token)


def token_matches(header: bytes, token: str) -> bool:
    """Whether an Authorization header value carries `token` (compared in constant time)."""
    scheme, _, supplied = header.decode("latin-1").strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(supplied.strip().encode("utf-8"), token.encode("utf-8"))


class BearerTokenGate:
    """ASGI middleware: an HTTP request without the token gets a 401 and one line."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            header = next(
                (value for name, value in scope["headers"] if name == b"authorization"), b""
            )
            if not token_matches(header, self.token):
                body = REFUSAL.encode("utf-8")
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode("ascii")),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
