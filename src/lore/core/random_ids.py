"""Random parts of the ids and fences Lore makes, from the operating system's generator."""

from __future__ import annotations

import os


def random_hex(count: int) -> str:
    """`count` random bytes from the operating system, in hex: `secrets.token_hex`, without
    importing `secrets`, whose hashlib, hmac and base64 (and OpenSSL) an ask or a compaction
    needs none of: 7-16 ms of a process that imports it."""
    return os.urandom(count).hex()
