"""Vault settings: `lore.yaml` read into strict, nested pydantic models.

A bad key or value becomes one `ConfigError` line naming the file, the key and what was
expected. Nothing here is read at import time; callers load the file they mean.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lore.errors import ConfigError

# libyaml's safe loader when installed: the same rules as yaml.safe_load, many times faster,
# which matters for files read on the way to the first screen.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

TrustLevel = Literal["trusted", "semi-trusted", "untrusted"]
NoteStatus = Literal["active", "superseded"]
ProviderName = Literal["offline", "ollama", "openai"]

TRUST_LEVELS: tuple[TrustLevel, ...] = ("trusted", "semi-trusted", "untrusted")


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


class LoreConfig(StrictModel):
    vault: VaultSettings = Field(default_factory=VaultSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    gates: GateSettings = Field(default_factory=GateSettings)
    provider: ProviderSettings = Field(default_factory=ProviderSettings)
    ask: AskSettings = Field(default_factory=AskSettings)
    history: HistorySettings = Field(default_factory=HistorySettings)
    ui: UISettings = Field(default_factory=UISettings)
    keymap: dict[str, str] = Field(default_factory=dict)


def _describe(error: dict[str, Any]) -> str:
    key = ".".join(str(part) for part in error["loc"]) or "(top level)"
    if error["type"] == "extra_forbidden":
        return f"{key}: unknown key"
    got = error.get("input")
    shown = repr(got) if not isinstance(got, dict) else "a mapping"
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{key}: {error['msg'].lower()} (got {shown})"


def parse_config(data: Any, source: str) -> LoreConfig:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of settings at the top level")
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


def load_config(path: Path) -> LoreConfig:
    """Settings from `path`; defaults when the file does not exist."""
    return parse_config(load_yaml_file(path), str(path))


CONFIG_TEMPLATE = """\
# Lore vault settings. Every key is optional; the values shown are the defaults.
# A bad key or value is reported as one line naming this file and the key.

vault:
  name: {name}
  # Files under notes/ larger than this are skipped with a warning.
  max_note_bytes: 5000000

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

# keymap:
#   ask.cancel: ctrl+c
"""
