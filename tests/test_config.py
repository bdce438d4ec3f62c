"""lore.yaml: strict settings, and one clear line for every mistake in it."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from lore.cli import main
from lore.config import (
    CONFIG_TEMPLATE,
    LoreConfig,
    McpSettings,
    SearchSettings,
    VaultSettings,
    load_config,
    parse_config,
)
from lore.core.vault import init_vault
from lore.errors import ConfigError


def _config_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "lore.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "\n" not in message
    assert str(path) in message
    return message


def test_missing_file_gives_defaults(tmp_path: Path) -> None:
    assert load_config(tmp_path / "lore.yaml") == LoreConfig()


def test_empty_file_gives_defaults(tmp_path: Path) -> None:
    (tmp_path / "lore.yaml").write_text("# only comments\n")
    assert load_config(tmp_path / "lore.yaml") == LoreConfig()


def test_template_is_valid_and_matches_the_defaults() -> None:
    import yaml

    config = parse_config(yaml.safe_load(CONFIG_TEMPLATE.format(name='"x"')), "template")
    assert dataclasses.replace(config, vault=LoreConfig().vault) == LoreConfig()


def test_unknown_key_names_the_key(tmp_path: Path) -> None:
    message = _config_error(tmp_path, "search:\n  defualt_limit: 5\n")
    assert "search.defualt_limit" in message and "unknown key" in message


def test_unknown_section(tmp_path: Path) -> None:
    assert "colours: unknown key" in _config_error(tmp_path, "colours: {}\n")


def test_bad_value_names_key_expectation_and_value(tmp_path: Path) -> None:
    message = _config_error(tmp_path, "search:\n  default_limit: lots\n")
    assert "search.default_limit" in message and "integer" in message and "'lots'" in message


def test_out_of_range_value(tmp_path: Path) -> None:
    message = _config_error(tmp_path, "vault:\n  max_note_bytes: -1\n")
    assert "vault.max_note_bytes" in message and "greater than 0" in message


def test_bad_choice(tmp_path: Path) -> None:
    message = _config_error(tmp_path, "provider:\n  name: skynet\n")
    assert "provider.name" in message and "offline" in message


def test_several_errors_are_counted(tmp_path: Path) -> None:
    message = _config_error(tmp_path, "search:\n  default_limit: x\nbogus: 1\nother: 2\n")
    assert "(and 2 more)" in message


def test_section_that_is_not_a_mapping(tmp_path: Path) -> None:
    assert "search" in _config_error(tmp_path, "search: 5\n")


def test_top_level_that_is_not_a_mapping(tmp_path: Path) -> None:
    assert "mapping" in _config_error(tmp_path, "- a\n- b\n")


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    message = _config_error(tmp_path, "search:\n  default_limit: 5\n bad: [unclosed\n")
    assert "line 3" in message and "YAML" in message


def test_invalid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "lore.yaml"
    path.write_bytes(b"vault:\n  name: \xff\n")
    with pytest.raises(ConfigError, match="UTF-8"):
        load_config(path)


def test_yaml_tags_that_build_objects_are_refused(tmp_path: Path) -> None:
    message = _config_error(tmp_path, "vault: !!python/object/apply:os.system ['echo hi']\n")
    assert "YAML" in message


def test_cli_reports_a_bad_config_as_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = init_vault(tmp_path / "v")
    (root / "lore.yaml").write_text("search:\n  default_limit: many\n")
    assert main(["--vault", str(root), "notes", "list"]) == 1
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1
    assert "lore.yaml" in lines[0] and "search.default_limit" in lines[0]
    assert "Traceback" not in captured.err + captured.out


def test_bad_config_in_a_subprocess_has_no_traceback(tmp_path: Path) -> None:
    root = init_vault(tmp_path / "v")
    (root / "lore.yaml").write_text("ask:\n  budget_tokens: [1, 2]\n")
    result = subprocess.run(
        [sys.executable, "-m", "lore", "--vault", str(root), "search", "x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "ask.budget_tokens" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_settings_compare_and_show_as_dataclasses_do() -> None:
    assert repr(McpSettings(ingest_roots=["inbox"])) == (
        "McpSettings(ingest_roots=['inbox'], max_body_chars=20000)"
    )
    changed = LoreConfig()
    changed.ask.top_k = 3
    assert changed != LoreConfig() and LoreConfig() == LoreConfig()
    assert VaultSettings() != SearchSettings() and VaultSettings() != "VaultSettings()"
    with pytest.raises(TypeError, match="unhashable"):
        hash(LoreConfig())
