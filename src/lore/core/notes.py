"""A note: Markdown with YAML front matter, parsed leniently and written back faithfully.

Parsing never fails. A note whose front matter is broken is still a note (its body can be
searched); the problem is recorded with its line so `lore doctor` can point at it, and Lore
never rewrites such a file on its own.
"""

from __future__ import annotations

import re
import time
from dataclasses import field
from datetime import UTC, date, datetime
from functools import cache
from typing import Any, NamedTuple

from lore.config import TRUST_LEVELS, NoteStatus, TrustLevel
from lore.core.dataclass_lite import dataclass_own_init
from lore.core.random_ids import random_hex

KNOWN_KEYS = ("id", "title", "tags", "created", "updated", "sources", "trust", "status")
_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)


class _Yaml(NamedTuple):
    module: Any
    safe_loader: Any
    no_alias_loader: Any
    safe_dumper: Any


@cache
def _yaml() -> _Yaml:
    """PyYAML and its loaders, made on the first note read or written.

    Loaded on demand: a search or a listing answered from the index reads no front matter.
    The libyaml bindings parse front matter several times faster; both are safe loaders.
    """
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        """Refuses `*alias` references: nested ones expand exponentially when a value is read."""

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                raise yaml.MarkedYAMLError(
                    problem="aliases (*name) are not allowed in front matter", problem_mark=mark
                )
            return super().compose_node(parent, index)

    return _Yaml(
        module=yaml,
        safe_loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader),
        no_alias_loader=NoAliasLoader,
        safe_dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
    )


def _load_front_matter(front: str) -> Any:
    tools = _yaml()
    loader = tools.no_alias_loader if "&" in front and "*" in front else tools.safe_loader
    return tools.module.load(front, Loader=loader)


_FENCE_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_note_id() -> str:
    """Time-ordered and random: unique without consulting the vault, so never reused."""
    return f"n{int(time.time() * 1000):011x}{random_hex(3)}"


def path_note_id(relpath: str) -> str:
    """A stable id for a hand-written note that has no front matter to store one in."""
    import hashlib

    return "h" + hashlib.sha1(relpath.encode("utf-8")).hexdigest()[:14]


@dataclass_own_init
class Source:
    """A document a note was made from: where it is, its content hash and its title."""

    uri: str
    sha256: str = ""
    title: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"uri": self.uri, "sha256": self.sha256, "title": self.title}


@dataclass_own_init
class Note:
    """One Markdown note as read: its front matter's fields, its body, and what was wrong with
    the file (`problems`, and the line that makes it unsafe to rewrite)."""

    path: str
    id: str
    title: str
    body: str
    tags: list[str] = field(default_factory=list)
    created: str | None = None
    updated: str | None = None
    sources: list[Source] = field(default_factory=list)
    trust: TrustLevel = "semi-trusted"
    status: NoteStatus = "active"
    extra: dict[str, Any] = field(default_factory=dict)
    has_front_matter: bool = True
    problems: list[str] = field(default_factory=list)
    problem_line: int | None = None

    @property
    def writable(self) -> bool:
        """Whether Lore may rewrite this file when asked to change the note."""
        return self.problem_line is None


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, date):
        return f"{value.isoformat()}T00:00:00Z"
    return str(value)


def _tags(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [part for part in re.split(r"[,\s]+", value) if part]
    if not isinstance(value, list):
        return [str(value)]
    return [str(tag).strip().lstrip("#").lower() for tag in value if str(tag).strip()]


def _sources(value: Any, problems: list[str]) -> list[Source]:
    if value is None:
        return []
    if not isinstance(value, list):
        value = [value]
    sources = []
    for item in value:
        if isinstance(item, str):
            sources.append(Source(uri=item))
        elif isinstance(item, dict) and item.get("uri"):
            sources.append(
                Source(
                    uri=str(item["uri"]),
                    sha256=str(item.get("sha256") or ""),
                    title=str(item.get("title") or ""),
                )
            )
        else:
            problems.append("sources: each entry needs a uri")
    return sources


def title_from_body(body: str, relpath: str) -> str:
    match = _HEADING.search(body)
    if match:
        return match.group(1).strip()
    stem = relpath.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return stem.replace("-", " ").replace("_", " ").strip() or stem


def split_front_matter(text: str) -> tuple[str | None, str, bool]:
    """(front matter text or None when there is none, body, whether the fence was closed)."""
    if not (text.startswith("---\n") or text.startswith("---\r\n")):
        return None, text, True
    start = text.index("\n") + 1
    close = _FENCE_CLOSE.search(text, start)
    if close is None:
        return "", text, False
    body_start = text.find("\n", close.end())
    body = "" if body_start == -1 else text[body_start + 1 :]
    return text[start : close.start()], body, True


def parse_note(text: str, relpath: str) -> Note:
    front, body, closed = split_front_matter(text)
    problems: list[str] = []
    problem_line: int | None = None
    data: dict[str, Any] = {}
    if not closed:
        problems.append("front matter starts with --- but is never closed")
        problem_line = 1
    elif front is not None:
        try:
            loaded = _load_front_matter(front)
        except _yaml().module.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            problem_line = (mark.line + 2) if mark is not None else 1
            problems.append(f"front matter is not valid YAML: {getattr(exc, 'problem', exc)}")
        else:
            if loaded is None:
                loaded = {}
            if isinstance(loaded, dict):
                data = {str(key): value for key, value in loaded.items()}
            else:
                problem_line = 2
                problems.append("front matter is not a mapping of keys to values")

    trust = data.get("trust", "semi-trusted")
    if trust not in TRUST_LEVELS:
        problems.append(f"trust: expected one of {', '.join(TRUST_LEVELS)} (got {trust!r})")
        trust = "untrusted"
    status = data.get("status", "active")
    if status not in ("active", "superseded"):
        problems.append(f"status: expected active or superseded (got {status!r})")
        status = "active"
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        title = title_from_body(body, relpath)
    note_id = data.get("id")
    return Note(
        path=relpath,
        id=str(note_id) if note_id not in (None, "") else path_note_id(relpath),
        title=str(title).strip(),
        body=body,
        tags=_tags(data.get("tags")),
        created=_iso(data.get("created")),
        updated=_iso(data.get("updated")),
        sources=_sources(data.get("sources"), problems),
        trust=trust,
        status=status,
        extra={key: value for key, value in data.items() if key not in KNOWN_KEYS},
        has_front_matter=front is not None,
        problems=problems,
        problem_line=problem_line,
    )


def _needs_front_matter(note: Note) -> bool:
    """Whether `note` holds anything that a file without front matter could not keep."""
    return (
        note.has_front_matter
        or note.title != title_from_body(note.body, note.path)
        or note.id != path_note_id(note.path)
        or bool(note.tags or note.sources or note.extra)
        or note.trust != "semi-trusted"
        or note.status != "active"
    )


def render_note(note: Note) -> str:
    """The file text of `note`.

    A note the user wrote without front matter is written back without it as long as only its
    body changed: Lore does not impose its format on a file the user owns.
    """
    body = note.body if note.body.endswith("\n") or not note.body else note.body + "\n"
    if not _needs_front_matter(note):
        return body
    meta: dict[str, Any] = {
        "id": note.id,
        "title": note.title,
        "tags": list(note.tags),
        "created": note.created,
        "updated": note.updated,
        "sources": [source.to_dict() for source in note.sources],
        "trust": note.trust,
        "status": note.status,
    }
    meta.update(note.extra)
    tools = _yaml()
    front = tools.module.dump(
        meta, Dumper=tools.safe_dumper, sort_keys=False, allow_unicode=True, width=100
    )
    return f"---\n{front}---\n{body}"
