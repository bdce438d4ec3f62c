"""Settings validated once come back from the vault's cache, and any change to them is seen."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lore.config import LoreConfig, load_config
from lore.core.settings_cache import SettingsCache
from lore.core.vault import Vault, init_vault
from lore.errors import ConfigError

SAMPLE_VAULT = Path(__file__).resolve().parents[1] / "samples" / "vault"
AN_HOUR_AGO = time.time() - 3600


def _settle(path: Path) -> None:
    # A settings file written a moment ago is not cached yet (its clock may not have ticked).
    os.utime(path, (AN_HOUR_AGO, AN_HOUR_AGO))


def _write_settings(root: Path, text: str) -> Path:
    path = root / "lore.yaml"
    path.write_text(text, encoding="utf-8")
    _settle(path)
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    made = init_vault(tmp_path / "vault", "Cached")
    _write_settings(made, "vault:\n  name: Cached\nask:\n  top_k: 12\n")
    return made


def _cache_file(root: Path) -> Path:
    return root / ".lore" / "settings.json"


def _open(root: Path) -> LoreConfig:
    vault = Vault.open(root)
    try:
        return vault.config
    finally:
        vault.close()


def test_settings_are_saved_once_validated_and_read_back_alike(root: Path) -> None:
    first = _open(root)
    assert _cache_file(root).is_file()
    saved = json.loads(_cache_file(root).read_text(encoding="utf-8"))
    assert saved["settings"]["ask"]["top_k"] == 12
    second = _open(root)
    assert second == first
    assert second.ask.top_k == 12 and second.vault.name == "Cached"
    assert isinstance(second.provider.timeout_s, float)


def test_an_edit_of_the_same_size_is_seen(root: Path) -> None:
    _open(root)
    path = _write_settings(root, "vault:\n  name: Cached\nask:\n  top_k: 13\n")
    assert _open(root).ask.top_k == 13
    # Back to the old text, and the old times: the file's change time still tells them apart.
    path.write_text("vault:\n  name: Cached\nask:\n  top_k: 12\n", encoding="utf-8")
    _settle(path)
    assert _open(root).ask.top_k == 12


def test_a_file_just_written_is_cached_and_an_edit_at_once_after_is_seen(root: Path) -> None:
    path = root / "lore.yaml"
    for name in ("Fresh", "Frish", "Fresh"):
        # Same size each time, and within one tick of a coarse clock: only the text differs.
        path.write_text(f"vault:\n  name: {name}\n", encoding="utf-8")
        assert _open(root).vault.name == name
        saved = json.loads(_cache_file(root).read_text(encoding="utf-8"))
        assert saved["settings"]["vault"]["name"] == name


def test_a_file_removed_or_made_is_a_change(root: Path) -> None:
    _open(root)
    (root / "lore.yaml").unlink()
    assert _open(root).ask.top_k != 12
    _write_settings(root, "ask:\n  top_k: 12\n")
    assert _open(root).ask.top_k == 12


def test_variables_and_the_user_config_take_part(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _open(root)
    monkeypatch.setenv("LORE_ASK__TOP_K", "30")
    assert _open(root).ask.top_k == 30
    monkeypatch.delenv("LORE_ASK__TOP_K")
    assert _open(root).ask.top_k == 12
    user = Path(os.environ["LORE_HOME"]) / "config" / "config.yaml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("search:\n  default_limit: 7\n", encoding="utf-8")
    _settle(user)
    config = load_config(
        root / "lore.yaml",
        user_config=user,
        cache=SettingsCache(_cache_file(root), root / ".lore" / "lock"),
    )
    assert config.search.default_limit == 7 and config.ask.top_k == 12


def test_a_broken_file_is_reported_every_time_and_never_cached(root: Path) -> None:
    _open(root)
    _write_settings(root, "ask:\n  top_k: 0\n")
    for _ in range(2):
        with pytest.raises(ConfigError, match=r"ask\.top_k"):
            Vault.open(root)


@pytest.mark.parametrize(
    "damage",
    [
        b"{not json",
        b'{"signature": 1, "settings": {}}',
        b"",
        b"\x00" * 64,
    ],
)
def test_a_damaged_cache_is_a_miss(root: Path, damage: bytes) -> None:
    _open(root)
    _cache_file(root).write_bytes(damage)
    assert _open(root).ask.top_k == 12


def test_settings_of_another_schema_are_validated_again(root: Path) -> None:
    _open(root)
    saved = json.loads(_cache_file(root).read_text(encoding="utf-8"))
    saved["settings"]["ask"]["a_key_no_longer_known"] = 1
    _cache_file(root).write_text(json.dumps(saved), encoding="utf-8")
    config = _open(root)
    assert config.ask.top_k == 12 and not hasattr(config.ask, "a_key_no_longer_known")


def test_a_cache_that_cannot_be_read_or_written_changes_nothing(root: Path) -> None:
    _open(root)
    _cache_file(root).unlink()
    _cache_file(root).mkdir()
    assert _open(root).ask.top_k == 12
    assert _cache_file(root).is_dir()


def test_a_command_with_settings_cached_loads_neither_yaml_nor_pydantic_nor_their_limits(
    tmp_path: Path,
) -> None:
    copy = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, copy, ignore=shutil.ignore_patterns(".lore"))
    _settle(copy / "lore.yaml")
    probe = (
        "import sys, lore.cli\n"
        "code = lore.cli.main(sys.argv[1:])\n"
        "watched = ('yaml', 'pydantic', 'annotated_types')\n"
        "print(sorted(n for n in watched if n in sys.modules))\n"
        "sys.exit(code)\n"
    )
    command = [sys.executable, "-c", probe, "--vault", str(copy), "search", "--json", "ocean"]
    loaded = []
    for _ in range(2):
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        loaded.append(result.stdout.strip().splitlines()[-1])
    # The first run validates the settings (and builds the index); the second reads both.
    assert loaded == ["['annotated_types', 'pydantic', 'yaml']", "[]"]


def test_a_pipe_in_place_of_the_cache_or_the_settings_never_hangs(root: Path) -> None:
    _open(root)
    _cache_file(root).unlink()
    os.mkfifo(_cache_file(root))
    assert _open(root).ask.top_k == 12
    settings = root / "lore.yaml"
    settings.unlink()
    os.mkfifo(settings)
    with pytest.raises(ConfigError, match="not a regular file"):
        Vault.open(root)


def test_a_new_vault_starts_with_its_settings_cached(tmp_path: Path) -> None:
    made = init_vault(tmp_path / "new", "Fresh start")
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from lore.core.vault import Vault\n"
        "vault = Vault.open(Path(sys.argv[1]))\n"
        "print(repr(vault.config.vault.name), 'pydantic' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(made)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "'Fresh start' False"
    cached = _open(made)
    _cache_file(made).unlink()
    assert _open(made) == cached


def test_a_new_vault_under_a_broken_user_config_reports_it_at_its_first_command(
    tmp_path: Path,
) -> None:
    user = Path(os.environ["LORE_HOME"]) / "config" / "config.yaml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("ask:\n  top_k: 0\n", encoding="utf-8")
    made = init_vault(tmp_path / "new", "Fresh start")
    assert not _cache_file(made).exists()
    with pytest.raises(ConfigError, match=r"top_k"):
        Vault.open(made)
