"""Settings read into strict, nested pydantic models, in layers.

Lowest to highest: the defaults here, the user's `config.yaml` in the XDG config folder, the
vault's `lore.yaml`, then `LORE_SECTION__KEY` environment variables; command-line flags go on
top. A bad key or value becomes one `ConfigError` line naming the file or variable, the key
and what was expected. Nothing here is read at import time; callers load what they mean.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lore.errors import ConfigError
from lore.paths import user_dirs
from lore.trust_levels import TRUST_LEVELS as TRUST_LEVELS
from lore.trust_levels import TrustLevel as TrustLevel

# `LORE_PROVIDER__MODEL=llama3` sets provider.model: the prefix, the section, `__`, the key.
ENV_PREFIX = "LORE_"
ENV_SEPARATOR = "__"

# libyaml's safe loader when installed: the same rules as yaml.safe_load, many times faster,
# which matters for files read on the way to the first screen.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

NoteStatus = Literal["active", "superseded"]
ProviderName = Literal["offline", "ollama", "openai"]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class VaultSettings(StrictModel):
    name: str | None = None
    max_note_bytes: int = Field(default=5_000_000, gt=0)


class SearchSettings(StrictModel):
    default_limit: int = Field(default=10, gt=0, le=1000)


class IngestSettings(StrictModel):
    chunk_chars: int = Field(default=3000, ge=200)
    max_source_bytes: int = Field(default=25_000_000, gt=0)
    url_timeout_s: float = Field(default=20.0, gt=0)
    url_max_bytes: int = Field(default=10_000_000, gt=0)
    url_max_redirects: int = Field(default=5, ge=0)
    # Fetching loopback, link-local or private addresses (the first request or a redirect)
    # would let a page reach services on this machine or its network; off unless asked for.
    allow_private_urls: bool = False
    extract_retries: int = Field(default=2, ge=0, le=10)
    # Longer paragraphs become several claims, split on sentence boundaries.
    max_claim_chars: int = Field(default=1000, ge=100)


class GateSettings(StrictModel):
    sanitise: bool = True
    trust: bool = True
    review: bool = True
    similarity: bool = True
    # The trained detector of instructions aimed at an AI, read by the review gate.
    detector: bool = True
    # Another detector model file (from `make train-gate`) instead of the packaged one;
    # relative to the vault.
    detector_model: str | None = None
    hostile_source_ratio: float = Field(default=0.5, gt=0, le=1)
    duplicate_threshold: float = Field(default=0.85, gt=0, le=1)
    contradiction_threshold: float = Field(default=0.5, gt=0, le=1)
    # An untrusted claim sharing this much of its wording with a trusted note is on its subject.
    subject_threshold: float = Field(default=0.3, gt=0, le=1)


class ProviderSettings(StrictModel):
    name: ProviderName = "offline"
    model: str = ""
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = Field(default=0.2, ge=0, le=2)
    timeout_s: float = Field(default=120.0, gt=0)
    stall_timeout_s: float = Field(default=30.0, gt=0)
    connect_timeout_s: float = Field(default=5.0, gt=0)
    retries: int = Field(default=2, ge=0, le=10)


class AskSettings(StrictModel):
    budget_tokens: int = Field(default=4096, ge=0)
    instructions_tokens: int = Field(default=400, ge=0)
    memory_tokens: int = Field(default=600, ge=0)
    recent_turns_tokens: int = Field(default=800, ge=0)
    evidence_tokens: int = Field(default=2400, ge=0)
    reply_tokens: int = Field(default=800, ge=0)
    # How many notes retrieval hands the pack; their best passages compete for the evidence.
    top_k: int = Field(default=40, gt=0, le=200)
    max_question_chars: int = Field(default=16_000, gt=0)


class HistorySettings(StrictModel):
    compact_threshold_tokens: int = Field(default=6000, gt=0)
    keep_recent_turns: int = Field(default=6, ge=0)
    memory_budget_tokens: int = Field(default=600, gt=0)
    memory_fanout: int = Field(default=8, ge=2)


class UISettings(StrictModel):
    theme: str | None = None


class McpSettings(StrictModel):
    """What `lore mcp` lets a connected agent do beyond reading."""

    # Folders the ingest tool may read files from (relative ones are inside the vault);
    # none by default, so an agent cannot have Lore read a file the person did not offer.
    ingest_roots: list[str] = Field(default_factory=list)
    # The longest body propose_note accepts, in characters.
    max_body_chars: int = Field(default=20_000, gt=0)


class VersioningSettings(StrictModel):
    # Commit each change Lore makes: unset, yes in a repository `lore init` made and no in
    # a git repository of your own; true or false decides for either.
    auto_commit: bool | None = None


class LoreConfig(StrictModel):
    vault: VaultSettings = Field(default_factory=VaultSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    gates: GateSettings = Field(default_factory=GateSettings)
    provider: ProviderSettings = Field(default_factory=ProviderSettings)
    ask: AskSettings = Field(default_factory=AskSettings)
    history: HistorySettings = Field(default_factory=HistorySettings)
    ui: UISettings = Field(default_factory=UISettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    versioning: VersioningSettings = Field(default_factory=VersioningSettings)
    keymap: dict[str, str] = Field(default_factory=dict)


def _problem(error: dict[str, Any]) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown key"
    got = error.get("input")
    shown = repr(got) if not isinstance(got, dict) else "a mapping"
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{error['msg'].lower()} (got {shown})"


def _describe(error: dict[str, Any]) -> str:
    key = ".".join(str(part) for part in error["loc"]) or "(top level)"
    return f"{key}: {_problem(error)}"


def settings_mapping(data: Any, source: str) -> dict[str, Any]:
    """A settings file's top level as a mapping; a section left empty counts as absent."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of settings at the top level")
    # `provider:` with every key under it commented out reads as null; it sets nothing.
    return {
        key: value
        for key, value in data.items()
        if value is not None or key not in LoreConfig.model_fields
    }


def parse_config(data: Any, source: str) -> LoreConfig:
    data = settings_mapping(data, source)
    try:
        return LoreConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = len(exc.errors()) - 1
        suffix = f" (and {more} more)" if more else ""
        raise ConfigError(f"{source}: {_describe(dict(first))}{suffix}") from None


def load_yaml_file(path: Path) -> Any:
    """Read a YAML file with safe_load, turning every failure into one ConfigError line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        return yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{path}{where}: could not parse YAML ({problem})") from None


def load_config_file(path: Path) -> LoreConfig:
    """Settings from `path` alone; defaults when the file does not exist."""
    return parse_config(load_yaml_file(path), str(path))


@dataclass(frozen=True)
class ConfigSource:
    """One place settings come from, as `lore locate config` lists them."""

    kind: Literal["user", "vault", "env"]
    where: str
    present: bool


def config_variables(environ: Mapping[str, str]) -> list[str]:
    """The `LORE_SECTION__KEY` variables set in `environ`, sorted.

    Only names with the `__` separator are settings, so LORE_HOME, LORE_VAULT, LORE_DEBUG and
    LORE_ACTOR keep their own meanings.
    """
    return sorted(
        name
        for name in environ
        if name.startswith(ENV_PREFIX) and ENV_SEPARATOR in name[len(ENV_PREFIX) :]
    )


def _section_models() -> dict[str, type[BaseModel]]:
    sections: dict[str, type[BaseModel]] = {}
    for name, field in LoreConfig.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            sections[name] = annotation
    return sections


def _env_setting(name: str, value: str) -> tuple[str, str, str | None]:
    """The section, key and value a variable sets, checked against the schema."""
    parts = name[len(ENV_PREFIX) :].lower().split(ENV_SEPARATOR)
    sections = _section_models()
    if len(parts) != 2 or not all(parts):
        raise ConfigError(f"{name}: expected LORE_SECTION__KEY, e.g. LORE_PROVIDER__MODEL")
    section, key = parts
    model = sections.get(section)
    if model is None:
        known = ", ".join(sorted(sections))
        raise ConfigError(f"{name}: no settings section {section!r} (one of {known})")
    field = model.model_fields.get(key)
    if field is None:
        raise ConfigError(f"{name}: {section}.{key}: unknown key")
    # An empty value clears a setting that may be unset (provider.base_url, ui.theme, ...).
    if value == "" and type(None) in get_args(field.annotation):
        return section, key, None
    return section, key, value


def env_config_data(environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings `LORE_SECTION__KEY` variables set, each checked with its name in the error.

    Values stay strings and pydantic converts them as it does YAML scalars ("4000" to an
    integer, "true" to a boolean), so a model name such as "3" stays text.
    """
    data: dict[str, dict[str, Any]] = {}
    for name in config_variables(environ):
        section, key, value = _env_setting(name, environ[name])
        try:
            LoreConfig.model_validate({section: {key: value}})
        except ValidationError as exc:
            raise ConfigError(f"{name}: {_problem(dict(exc.errors()[0]))}") from None
        data.setdefault(section, {})[key] = value
    return data


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _file_data(path: Path) -> dict[str, Any]:
    """A settings file's mapping, validated on its own so an error names this file."""
    data = settings_mapping(load_yaml_file(path), str(path))
    parse_config(data, str(path))
    return data


def config_sources(
    vault_config: Path,
    *,
    user_config: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[ConfigSource]:
    """Every place settings come from, lowest precedence first (flags, above all, aside)."""
    user_config = user_config or user_dirs().user_config
    environ = os.environ if environ is None else environ
    sources = [
        ConfigSource("user", str(user_config), user_config.is_file()),
        ConfigSource("vault", str(vault_config), vault_config.is_file()),
    ]
    sources.extend(ConfigSource("env", name, True) for name in config_variables(environ))
    return sources


def load_config(
    vault_config: Path,
    *,
    user_config: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> LoreConfig:
    """A vault's settings: defaults, then the user's config.yaml, then the vault's lore.yaml,
    then `LORE_SECTION__KEY` variables; each later one wins key by key.

    Command-line flags are applied by the caller on top of this.
    """
    user_config = user_config or user_dirs().user_config
    environ = os.environ if environ is None else environ
    data = _file_data(user_config)
    data = _merge(data, _file_data(vault_config))
    data = _merge(data, env_config_data(environ))
    return parse_config(data, str(vault_config))


def overridden_settings(vault_config: Path, user_config: Path) -> list[tuple[str, Any, Any]]:
    """Keys both files set to different values: (dotted key, vault value, user value).

    A vault made by an older `lore init` spells out every default, which silently hides the
    user's config.yaml; `lore doctor` lists these so that is not a mystery.
    """
    user = _file_data(user_config)
    vault = _file_data(vault_config)
    found: list[tuple[str, Any, Any]] = []
    for section, values in user.items():
        theirs = vault.get(section)
        if not isinstance(values, dict) or not isinstance(theirs, dict):
            if section in vault and theirs != values:
                found.append((section, theirs, values))
            continue
        for key, value in values.items():
            if key in theirs and theirs[key] != value:
                found.append((f"{section}.{key}", theirs[key], value))
    return found


# Every setting but the vault's own with its default. `lore init` writes it commented out, so
# a new vault follows the user's config.yaml until a line here is uncommented.
SETTINGS_REFERENCE = """\
search:
  default_limit: 10

ingest:
  # Long sources are split on heading, paragraph and sentence boundaries near this size.
  chunk_chars: 3000
  max_source_bytes: 25000000
  # The whole fetch of a URL, however slowly the server sends, ends within this time.
  url_timeout_s: 20.0
  url_max_bytes: 10000000
  url_max_redirects: 5
  # Fetch loopback, link-local and private addresses (127.0.0.1, 10.x, 192.168.x, ...).
  allow_private_urls: false
  # With a model: retries per chunk before the chunk is held instead of extracted.
  extract_retries: 2
  # Longer paragraphs become several claims, split between sentences.
  max_claim_chars: 1000

gates:
  sanitise: true
  trust: true
  review: true
  similarity: true
  # The review gate's trained detector of instructions aimed at an AI.
  detector: true
  # detector_model: models/my-detector.json.gz   (another model file, relative to the vault)
  # A source with more than this share of claims flagged for hidden text is held whole.
  hostile_source_ratio: 0.5
  duplicate_threshold: 0.85
  contradiction_threshold: 0.5
  # An untrusted claim sharing this much wording with a trusted note is on its subject.
  subject_threshold: 0.3

provider:
  # offline needs no model; ollama and openai speak HTTP to a local or remote server.
  name: offline
  model: ""
  # base_url: http://127.0.0.1:11434
  # The API key is read from this environment variable, never from this file.
  api_key_env: OPENAI_API_KEY
  temperature: 0.2
  # How long the server may take to start answering (a model loading), and how long it may
  # then go quiet before the reply counts as stalled.
  timeout_s: 120.0
  stall_timeout_s: 30.0
  connect_timeout_s: 5.0
  # Failed connections are retried this many times; a request the server received never is.
  retries: 2

ask:
  # The whole prompt never exceeds this many tokens; each section has its own cap.
  budget_tokens: 4096
  instructions_tokens: 400
  memory_tokens: 600
  recent_turns_tokens: 800
  evidence_tokens: 2400
  # Notes retrieved per question; the best passages among them fill the evidence section.
  top_k: 40

history:
  # Older turns are compacted into memory once the live history passes this size.
  compact_threshold_tokens: 6000
  keep_recent_turns: 6
  memory_budget_tokens: 600
"""


def commented_out(text: str) -> str:
    """`text` with every setting line turned into a comment, its comments left as they are."""
    lines = []
    for line in text.splitlines(keepends=True):
        body = line.lstrip(" ")
        if body.strip() and not body.startswith("#"):
            line = line[: len(line) - len(body)] + "# " + body
        lines.append(line)
    return "".join(lines)


CONFIG_TEMPLATE = (
    """\
# Lore vault settings. Every key is optional, and one set here wins over the same key in your
# own config.yaml (`lore locate config` lists both). Uncomment a line to set it for this vault;
# the values shown are the defaults. A bad key or value is one line naming this file and key.

vault:
  name: {name}
  # Files under notes/ larger than this are skipped with a warning.
  # max_note_bytes: 5000000

"""
    + commented_out(SETTINGS_REFERENCE)
    + """
# keymap:
#   ask.cancel: ctrl+c
"""
)
