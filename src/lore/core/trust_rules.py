"""Trust levels for sources: `trust_rules.yaml` in the vault, then Lore's built-in rules.

A rule names a host suffix and a level; the first matching rule wins, the user's rules are
tried before the built-ins. Local files get their own level (semi-trusted unless changed).
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lore.config import TrustLevel, load_yaml_file
from lore.core.dataclass_lite import dataclass_own_init
from lore.core.vault import Vault
from lore.errors import ConfigError


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TrustRule(StrictModel):
    host: str = Field(min_length=1)
    trust: TrustLevel


class TrustRulesFile(StrictModel):
    rules: list[TrustRule] = Field(default_factory=list)
    local_files: TrustLevel = "semi-trusted"
    default: TrustLevel = "untrusted"


BUILT_IN_RULES = [
    TrustRule(host="localhost", trust="semi-trusted"),
    TrustRule(host="127.0.0.1", trust="semi-trusted"),
    TrustRule(host="docs.python.org", trust="trusted"),
    TrustRule(host="wikipedia.org", trust="semi-trusted"),
    TrustRule(host="github.com", trust="semi-trusted"),
]


def host_matches(host: str, suffix: str) -> bool:
    host, suffix = host.lower().rstrip("."), suffix.lower().strip().lstrip("*").strip(".")
    return host == suffix or host.endswith("." + suffix)


@dataclass_own_init
class TrustRules:
    """What sets a source's trust: host rules (the user's, then the built-ins), the level for
    local files, and the level for anything else."""

    rules: list[TrustRule]
    local_files: TrustLevel = "semi-trusted"
    default: TrustLevel = "untrusted"

    @classmethod
    def load(cls, path: Path) -> TrustRules:
        data = load_yaml_file(path)
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping with a 'rules' list")
        try:
            parsed = TrustRulesFile.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            key = ".".join(str(part) for part in first["loc"]) or "(top level)"
            message = "unknown key" if first["type"] == "extra_forbidden" else first["msg"].lower()
            raise ConfigError(f"{path}: {key}: {message}") from None
        return cls(parsed.rules + BUILT_IN_RULES, parsed.local_files, parsed.default)

    def level_for(self, uri: str) -> tuple[TrustLevel, str]:
        """(trust level, why) for a source URI."""
        parsed = urllib.parse.urlsplit(uri)
        if parsed.scheme in ("http", "https"):
            host = parsed.hostname or ""
            for rule in self.rules:
                if host_matches(host, rule.host):
                    return rule.trust, f"rule {rule.host}"
            return self.default, "no rule matches the host"
        if parsed.scheme == "file" or not parsed.scheme:
            return self.local_files, "local file"
        return self.default, f"{parsed.scheme}: source"


@dataclass_own_init
class TrustChange:
    """A note whose trust the current rules change, from `old` to `new`, and why."""

    path: str
    title: str
    source: str
    old: str
    new: str
    why: str

    def to_dict(self) -> dict[str, str]:
        return {
            "path": self.path,
            "title": self.title,
            "source": self.source,
            "old": self.old,
            "new": self.new,
            "why": self.why,
        }


def retier(vault: Vault, *, dry_run: bool = False, actor: str = "user") -> list[TrustChange]:
    """Re-apply the current trust rules to every note Lore filed from a source.

    Notes written by hand and notes whose trust a person set on promotion are left alone.
    """
    from lore.core.audit import AuditEntry, AuditLog

    rules = TrustRules.load(vault.layout.trust_rules)
    changes: list[TrustChange] = []
    summary = "trust_rules.yaml applied to the notes filed from sources"
    with vault.lock() if dry_run else vault.operation("retier", actor=actor, summary=summary):
        for note in vault.iter_notes():
            origin = note.extra.get("origin")
            if (
                not isinstance(origin, dict)
                or not origin.get("uri")
                or note.extra.get("trust_pinned")
            ):
                continue
            level, why = rules.level_for(str(origin["uri"]))
            if level != note.trust:
                changes.append(
                    TrustChange(note.path, note.title, str(origin["uri"]), note.trust, level, why)
                )
                if not dry_run and note.writable:
                    note.trust = level
                    vault.save(note)
        if not dry_run and changes:
            AuditLog(vault).append_many(
                [
                    AuditEntry(
                        change.path,
                        change.source,
                        "trust",
                        "retiered",
                        [f"{change.old} -> {change.new} ({change.why})"],
                        actor,
                    )
                    for change in changes
                ]
            )
    return changes
