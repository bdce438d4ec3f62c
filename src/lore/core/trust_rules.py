"""Trust levels for sources: `trust_rules.yaml` in the vault, then Lore's built-in rules.

A rule names a host suffix and a level; the first matching rule wins, the user's rules are
tried before the built-ins. Local files get their own level (semi-trusted unless changed).
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, ValidationError

from lore.config import StrictModel, TrustLevel, load_yaml_file
from lore.errors import ConfigError


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


@dataclass
class TrustRules:
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
