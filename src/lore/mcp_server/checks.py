"""Checks on what an agent sends, each failing with one line before anything is written."""

from __future__ import annotations

import base64
import binascii
import json
import re
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from lore.core.session import LoreSession
from lore.errors import UsageError
from lore.mcp_server.auth import TOKEN_FILE

MAX_TITLE_CHARS = 200
MAX_TAGS = 20
TAG = re.compile(r"^[\w][\w/-]{0,63}$")


def required(value: str, what: str) -> str:
    if not value.strip():
        raise UsageError(f"the {what} is empty; nothing was done")
    return value.strip()


def page_key(fields: dict[str, Any]) -> tuple[str, str]:
    return (str(fields["title"]).casefold(), str(fields["path"]))


def encode_cursor(key: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode("utf-8")).decode("ascii")


def decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error, RecursionError):
        key = None
    if not (isinstance(key, list) and len(key) == 2 and all(isinstance(k, str) for k in key)):
        raise UsageError("the cursor is not one list_notes returned; start again without one")
    return key[0], key[1]


def folder_prefix(folder: str) -> str:
    parts = PurePosixPath(folder.strip().strip("/")).parts
    if ".." in parts:
        raise UsageError(f"{folder!r} is not a folder of the vault's notes")
    if parts and parts[0] == "notes":
        parts = parts[1:]
    return "/".join(("notes", *parts)) + "/"


def proposal_text(title: str, body: str, tags: list[str], actor: str) -> str:
    """The proposal as a Markdown source: front matter only of keys a source may set."""
    front: dict[str, Any] = {"author": actor}
    if tags:
        front["tags"] = tags
    header = yaml.safe_dump(front, allow_unicode=True, sort_keys=False)
    return f"---\n{header}---\n# {title}\n\n{body.strip()}\n"


def check_proposal(
    session: LoreSession, title: str, body: str, tags: list[str], source: str | None
) -> str:
    title = required(title, "title")
    if "\n" in title or len(title) > MAX_TITLE_CHARS:
        raise UsageError(f"the title must be one line of at most {MAX_TITLE_CHARS} characters")
    required(body, "body")
    limit = session.config.mcp.max_body_chars
    if len(body) > limit:
        raise UsageError(
            f"the body is {len(body):,} characters, over the limit of {limit:,} "
            "(mcp.max_body_chars); nothing was filed"
        )
    if len(tags) > MAX_TAGS or any(not TAG.match(tag) for tag in tags):
        raise UsageError(
            f"tags must be at most {MAX_TAGS} words of letters, digits, - or / (got {tags!r})"
        )
    if source is not None and ("\n" in source or len(source) > 2000):
        raise UsageError("the source must be one line: a URL or a short citation")
    return title


def allowed_path(session: LoreSession, target: str) -> Path:
    """`target` resolved, if it is a file inside one of the folders mcp.ingest_roots names."""
    roots = [
        (session.root / Path(root).expanduser()).resolve()
        for root in session.config.mcp.ingest_roots
    ]
    if not roots:
        raise UsageError(
            "ingesting files is off: the person names the folders agents may offer in "
            "lore.yaml under mcp.ingest_roots; http(s) URLs may be ingested"
        )
    path = Path(target).expanduser()
    if not path.is_absolute():
        path = session.root / path
    resolved = path.resolve()
    inside = next((root for root in roots if resolved.is_relative_to(root)), None)
    if inside is None:
        raise UsageError(f"{target!r} is outside the folders lore.yaml lets agents ingest from")
    hidden = any(part.startswith(".") for part in resolved.relative_to(inside).parts)
    if hidden or resolved.is_relative_to(session.secret_path(TOKEN_FILE).parent):
        raise UsageError(f"{target!r} is a hidden file or Lore's own state; it is not read")
    if not resolved.is_file():
        raise UsageError(f"{target!r} is not a file (ingest one file or one URL at a time)")
    return resolved
