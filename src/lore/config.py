"""Settings in layers, validated against the schema of plain dataclasses.

Lowest to highest: the defaults here, the user's `config.yaml` in the XDG config folder, the
vault's `lore.yaml`, then `LORE_SECTION__KEY` environment variables; command-line flags go on
top. A bad key or value becomes one `ConfigError` line naming the file or variable, the key
and what was expected. Nothing here is read at import time; callers load what they mean.

The sections are stdlib dataclasses whose annotations carry their limits; pydantic validates
them, and is imported only to validate. Every command reads the settings, and settings that
were validated before come back from a cache in the vault (lore.core.settings_cache) without
YAML or pydantic: together they were most of a short command's start-up. The limits
themselves (annotated_types' Gt, Ge, Le) are loaded only when an annotation is read, which
only validating and checking a variable's key do (`_read_limits`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, field, fields
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    NamedTuple,
    TypeVar,
    get_args,
    get_type_hints,
)

from lore.core.dataclass_lite import dataclass_lite
from lore.errors import ConfigError
from lore.paths import user_dirs
from lore.trust_levels import TRUST_LEVELS as TRUST_LEVELS
from lore.trust_levels import TrustLevel as TrustLevel

if TYPE_CHECKING:
    from annotated_types import Ge, Gt, Le
    from pydantic import TypeAdapter

    from lore.core.settings_cache import SettingsCache

# `LORE_PROVIDER__MODEL=llama3` sets provider.model: the prefix, the section, `__`, the key.
ENV_PREFIX = "LORE_"
ENV_SEPARATOR = "__"
# Far more than any settings or theme file; a bigger one is not one.
MAX_SETTINGS_BYTES = 1_000_000

NoteStatus = Literal["active", "superseded"]
ProviderName = Literal["offline", "ollama", "openai"]

# Read by pydantic when it validates a section: a key the schema does not know is an error.
_STRICT = {"extra": "forbid"}
Settings = TypeVar("Settings")


@dataclass_lite
class VaultSettings:
    """`vault:` in lore.yaml: what the vault is called, and the largest note it reads."""

    __pydantic_config__ = _STRICT
    name: str | None = None
    max_note_bytes: Annotated[int, Gt(0)] = 5_000_000


@dataclass_lite
class SearchSettings:
    """`search:`: how many hits a search shows unless asked for more."""

    __pydantic_config__ = _STRICT
    default_limit: Annotated[int, Gt(0), Le(1000)] = 10


@dataclass_lite
class IngestSettings:
    """`ingest:`: how sources are read, fetched and split into claims."""

    __pydantic_config__ = _STRICT
    chunk_chars: Annotated[int, Ge(200)] = 3000
    max_source_bytes: Annotated[int, Gt(0)] = 25_000_000
    url_timeout_s: Annotated[float, Gt(0)] = 20.0
    url_max_bytes: Annotated[int, Gt(0)] = 10_000_000
    url_max_redirects: Annotated[int, Ge(0)] = 5
    # Fetching loopback, link-local or private addresses (the first request or a redirect)
    # would let a page reach services on this machine or its network; off unless asked for.
    allow_private_urls: bool = False
    extract_retries: Annotated[int, Ge(0), Le(10)] = 2
    # Longer paragraphs become several claims, split on sentence boundaries.
    max_claim_chars: Annotated[int, Ge(100)] = 1000


@dataclass_lite
class GateSettings:
    """`gates:`: which admission gates run, and the thresholds they judge by."""

    __pydantic_config__ = _STRICT
    sanitise: bool = True
    trust: bool = True
    review: bool = True
    similarity: bool = True
    # The trained detector of instructions aimed at an AI, read by the review gate.
    detector: bool = True
    # Another detector model file (from `make train-gate`) instead of the packaged one;
    # relative to the vault.
    detector_model: str | None = None
    hostile_source_ratio: Annotated[float, Gt(0), Le(1)] = 0.5
    duplicate_threshold: Annotated[float, Gt(0), Le(1)] = 0.85
    contradiction_threshold: Annotated[float, Gt(0), Le(1)] = 0.5
    # An untrusted claim sharing this much of its wording with a trusted note is on its subject.
    subject_threshold: Annotated[float, Gt(0), Le(1)] = 0.3


@dataclass_lite
class ProviderSettings:
    """`provider:`: the model answers come from, and how it is reached."""

    __pydantic_config__ = _STRICT
    name: ProviderName = "offline"
    model: str = ""
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: Annotated[float, Ge(0), Le(2)] = 0.2
    timeout_s: Annotated[float, Gt(0)] = 120.0
    stall_timeout_s: Annotated[float, Gt(0)] = 30.0
    connect_timeout_s: Annotated[float, Gt(0)] = 5.0
    retries: Annotated[int, Ge(0), Le(10)] = 2


@dataclass_lite
class AskSettings:
    """`ask:`: the token budget of a prompt, section by section, and the notes it draws on."""

    __pydantic_config__ = _STRICT
    budget_tokens: Annotated[int, Ge(0)] = 4096
    instructions_tokens: Annotated[int, Ge(0)] = 400
    memory_tokens: Annotated[int, Ge(0)] = 600
    recent_turns_tokens: Annotated[int, Ge(0)] = 800
    evidence_tokens: Annotated[int, Ge(0)] = 2400
    reply_tokens: Annotated[int, Ge(0)] = 800
    # How many notes retrieval hands the pack; their best passages compete for the evidence.
    top_k: Annotated[int, Gt(0), Le(200)] = 40
    max_question_chars: Annotated[int, Gt(0)] = 16_000


@dataclass_lite
class HistorySettings:
    """`history:`: when and how older turns are compacted into memory."""

    __pydantic_config__ = _STRICT
    compact_threshold_tokens: Annotated[int, Gt(0)] = 6000
    keep_recent_turns: Annotated[int, Ge(0)] = 6
    memory_budget_tokens: Annotated[int, Gt(0)] = 600
    memory_fanout: Annotated[int, Ge(2)] = 8


@dataclass_lite
class UISettings:
    """`ui:`: the app's theme."""

    __pydantic_config__ = _STRICT
    theme: str | None = None


@dataclass_lite
class McpSettings:
    """What `lore mcp` lets a connected agent do beyond reading."""

    __pydantic_config__ = _STRICT
    # Folders the ingest tool may read files from (relative ones are inside the vault);
    # none by default, so an agent cannot have Lore read a file the person did not offer.
    ingest_roots: list[str] = field(default_factory=list)
    # The longest body propose_note accepts, in characters.
    max_body_chars: Annotated[int, Gt(0)] = 20_000


@dataclass_lite
class VersioningSettings:
    """`versioning:`: whether each change Lore makes is committed."""

    __pydantic_config__ = _STRICT
    # Commit each change Lore makes: unset, yes in a repository `lore init` made and no in
    # a git repository of your own; true or false decides for either.
    auto_commit: bool | None = None


@dataclass_lite
class LoreConfig:
    """Every section of the settings, each with its defaults."""

    __pydantic_config__ = _STRICT
    vault: VaultSettings = field(default_factory=VaultSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    ingest: IngestSettings = field(default_factory=IngestSettings)
    gates: GateSettings = field(default_factory=GateSettings)
    provider: ProviderSettings = field(default_factory=ProviderSettings)
    ask: AskSettings = field(default_factory=AskSettings)
    history: HistorySettings = field(default_factory=HistorySettings)
    ui: UISettings = field(default_factory=UISettings)
    mcp: McpSettings = field(default_factory=McpSettings)
    versioning: VersioningSettings = field(default_factory=VersioningSettings)
    keymap: dict[str, str] = field(default_factory=dict)


_TOP_LEVEL_KEYS = frozenset(item.name for item in fields(LoreConfig))


def _read_limits() -> None:
    """Make the limits the annotations name readable, before anything reads an annotation.

    The annotations are strings (`from __future__ import annotations`) until pydantic or
    `get_type_hints` evaluates them in this module's globals; importing annotated_types with
    the module cost a command reading cached settings more than the rest of this module.
    """
    if "Gt" not in globals():
        from annotated_types import Ge, Gt, Le

        globals().update(Ge=Ge, Gt=Gt, Le=Le)


def _hints(schema: type) -> dict[str, Any]:
    _read_limits()
    return get_type_hints(schema)


_adapters: dict[type, TypeAdapter[Any]] = {}


def _adapter(schema: type[Settings]) -> TypeAdapter[Settings]:
    # Built once per schema: building one walks the whole schema.
    adapter = _adapters.get(schema)
    if adapter is None:
        from pydantic import TypeAdapter

        _read_limits()
        adapter = _adapters[schema] = TypeAdapter(schema)
    return adapter


def _validated(schema: type[Settings], data: Any) -> Settings:
    """`data` checked against `schema`; pydantic's ValidationError when it does not fit."""
    return _adapter(schema).validate_python(data)


def settings_from(
    schema: type[Settings], data: Mapping[str, Any], source: str = "settings"
) -> Settings:
    """One section of settings (or the whole config) from a mapping, checked as a file is."""
    from pydantic import ValidationError

    try:
        return _validated(schema, dict(data))
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_describe(dict(exc.errors()[0]))}") from None


def _section_models() -> dict[str, type]:
    # The sections' own annotations, where the limits are, are not read here.
    hints = get_type_hints(LoreConfig)
    return {
        name: hint for name, hint in hints.items() if isinstance(hint, type) and name != "keymap"
    }


def config_from_data(data: Mapping[str, Any]) -> LoreConfig:
    """Settings rebuilt from `settings_data` of settings validated before, without validating.

    A TypeError means the data is not of this schema (a cache from another version).
    """
    sections = _section_models()
    values: dict[str, Any] = {}
    for name, value in data.items():
        schema = sections.get(name)
        values[name] = schema(**value) if schema is not None else dict(value)
    return LoreConfig(**values)


def settings_data(config: LoreConfig) -> dict[str, Any]:
    """The settings as plain data (JSON's types only), as `config_from_data` reads them."""
    return asdict(config)


def _problem(error: dict[str, Any]) -> str:
    if error["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
        return "unknown key"
    if error["type"] == "dataclass_type":
        return f"expected a mapping of settings (got {_shown(error.get('input'))})"
    return f"{error['msg'].lower()} (got {_shown(error.get('input'))})"


def _shown(got: Any) -> str:
    shown = repr(got) if not isinstance(got, dict) else "a mapping"
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return shown


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
        key: value for key, value in data.items() if value is not None or key not in _TOP_LEVEL_KEYS
    }


def parse_config(data: Any, source: str) -> LoreConfig:
    from pydantic import ValidationError

    data = settings_mapping(data, source)
    try:
        return _validated(LoreConfig, data)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = len(exc.errors()) - 1
        suffix = f" (and {more} more)" if more else ""
        raise ConfigError(f"{source}: {_describe(dict(first))}{suffix}") from None


def load_yaml_file(path: Path) -> Any:
    """Read a YAML file with safe_load, turning every failure into one ConfigError line."""
    return parse_yaml_text(settings_text(path), path)


def settings_text(path: Path) -> str | None:
    """A settings file's text, None if there is none; a ConfigError line if it cannot be
    read as one."""
    from lore.core.storage import NotRegularFile, read_regular_bytes

    try:
        data = read_regular_bytes(path, MAX_SETTINGS_BYTES)
        if len(data) > MAX_SETTINGS_BYTES:
            raise ConfigError(f"{path}: larger than {MAX_SETTINGS_BYTES:,} bytes")
        return data.decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid UTF-8 text") from None
    except NotRegularFile:
        raise ConfigError(f"{path}: not a regular file (a pipe or device is never read)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None


def parse_yaml_text(text: str | None, path: Path) -> Any:
    """The YAML `text` of the file at `path` read with safe_load (None for no file), every
    failure one ConfigError line."""
    if text is None:
        return None
    import yaml

    # libyaml's safe loader when installed: the same rules as yaml.safe_load, many times
    # faster, which matters for files read on the way to the first screen.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{path}{where}: could not parse YAML ({problem})") from None


def load_config_file(path: Path) -> LoreConfig:
    """Settings from `path` alone; defaults when the file does not exist."""
    return parse_config(load_yaml_file(path), str(path))


class ConfigSource(NamedTuple):
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
    hint = _hints(model).get(key)
    if hint is None:
        raise ConfigError(f"{name}: {section}.{key}: unknown key")
    # An empty value clears a setting that may be unset (provider.base_url, ui.theme, ...).
    if value == "" and type(None) in get_args(hint):
        return section, key, None
    return section, key, value


def env_config_data(environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings `LORE_SECTION__KEY` variables set, each checked with its name in the error.

    Values stay strings and pydantic converts them as it does YAML scalars ("4000" to an
    integer, "true" to a boolean), so a model name such as "3" stays text.
    """
    names = config_variables(environ)
    if not names:
        return {}
    from pydantic import ValidationError

    data: dict[str, dict[str, Any]] = {}
    for name in names:
        section, key, value = _env_setting(name, environ[name])
        try:
            _validated(LoreConfig, {section: {key: value}})
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


def _file_data(path: Path, text: str | None) -> dict[str, Any]:
    """A settings file's mapping from its `text`, validated on its own so an error names
    this file."""
    data = settings_mapping(parse_yaml_text(text, path), str(path))
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
    cache: SettingsCache | None = None,
) -> LoreConfig:
    """A vault's settings: defaults, then the user's config.yaml, then the vault's lore.yaml,
    then `LORE_SECTION__KEY` variables; each later one wins key by key.

    With a `cache`, settings validated before from the very same sources are taken from it.
    Command-line flags are applied by the caller on top of this.
    """
    user_config = user_config or user_dirs().user_config
    environ = os.environ if environ is None else environ
    # Each file is read once: the settings validated are those of the very text the cache
    # is keyed on, however the file changes meanwhile.
    user_text = settings_text(user_config)
    vault_text = settings_text(vault_config)
    signature: list[Any] | None = None
    if cache is not None:
        variables = {name: environ[name] for name in config_variables(environ)}
        files = [(user_config, user_text), (vault_config, vault_text)]
        signature = cache.signature(Path(__file__), files, variables)
        saved = cache.read(signature)
        if saved is not None:
            try:
                return config_from_data(saved)
            except (TypeError, ValueError, AttributeError):
                pass  # not of this schema: validate the files below, as without a cache
    data = _file_data(user_config, user_text)
    data = _merge(data, _file_data(vault_config, vault_text))
    data = _merge(data, env_config_data(environ))
    config = parse_config(data, str(vault_config))
    if cache is not None and signature is not None:
        cache.write(signature, settings_data(config))
    return config


def overridden_settings(vault_config: Path, user_config: Path) -> list[tuple[str, Any, Any]]:
    """Keys both files set to different values: (dotted key, vault value, user value).

    A vault made by an older `lore init` spells out every default, which silently hides the
    user's config.yaml; `lore doctor` lists these so that is not a mystery.
    """
    user = _file_data(user_config, settings_text(user_config))
    vault = _file_data(vault_config, settings_text(vault_config))
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
