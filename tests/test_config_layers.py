"""Settings in layers: defaults < config.yaml < lore.yaml < LORE_* variables < flags."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lore.cli import main
from lore.config import (
    CONFIG_TEMPLATE,
    SETTINGS_REFERENCE,
    LoreConfig,
    commented_out,
    config_sources,
    load_config,
    parse_config,
)
from lore.core.doctor import examine
from lore.core.vault import Vault, init_vault
from lore.errors import ConfigError
from lore.paths import user_dirs


@pytest.fixture(autouse=True)
def _no_setting_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    # A LORE_SECTION__KEY exported in the shell that runs the tests must not leak in.
    import os

    for name in list(os.environ):
        if name.startswith("LORE_") and "__" in name:
            monkeypatch.delenv(name)


@pytest.fixture
def user_config() -> Path:
    path = user_dirs().user_config
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _vault_with(tmp_path: Path, text: str) -> Path:
    root = init_vault(tmp_path / "v", "V")
    (root / "lore.yaml").write_text(text, encoding="utf-8")
    return root


# -- where the user's file is -------------------------------------------------------------


def test_tests_never_read_the_real_user_config(tmp_path_factory: pytest.TempPathFactory) -> None:
    assert user_dirs().user_config.is_relative_to(tmp_path_factory.getbasetemp())
    assert user_dirs().user_config.name == "config.yaml"


def test_user_config_follows_xdg_config_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LORE_HOME")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert user_dirs().user_config == tmp_path / "xdg" / "lore" / "config.yaml"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_dirs().user_config == tmp_path / "home" / ".config" / "lore" / "config.yaml"


# -- the order of the layers --------------------------------------------------------------


def test_each_layer_overrides_the_one_below_key_by_key(tmp_path: Path, user_config: Path) -> None:
    user_config.write_text(
        "provider:\n  name: ollama\n  model: from-user\n  temperature: 0.7\n"
        "search:\n  default_limit: 3\nkeymap:\n  ask.cancel: ctrl+c\n"
    )
    root = _vault_with(tmp_path, "provider:\n  model: from-vault\nkeymap:\n  app.quit: ctrl+q\n")
    environ = {"LORE_PROVIDER__TEMPERATURE": "1.5", "LORE_HOME": "/elsewhere"}
    config = load_config(root / "lore.yaml", environ=environ)
    assert config.provider.name == "ollama"  # only the user file sets it
    assert config.provider.model == "from-vault"  # the vault beats the user file
    assert config.provider.temperature == 1.5  # the variable beats both
    assert config.search.default_limit == 3
    assert config.ask == LoreConfig().ask  # no layer sets it: the default
    assert config.keymap == {"ask.cancel": "ctrl+c", "app.quit": "ctrl+q"}


def test_flags_beat_variables_and_files(
    tmp_path: Path,
    user_config: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from servers import FakeModelServer, refused_url

    with FakeModelServer(models=("from-env", "from-flag")) as server:
        user_config.write_text(
            f"provider:\n  name: ollama\n  model: from-user\n  base_url: {refused_url()}\n"
        )
        root = _vault_with(tmp_path, "provider:\n  model: from-vault\n")
        monkeypatch.setenv("LORE_PROVIDER__BASE_URL", server.url)
        monkeypatch.setenv("LORE_PROVIDER__MODEL", "from-env")
        asks = [
            ["ask", "--json", "What is Io?"],
            ["--model", "from-flag", "ask", "--json", "What is Io?"],
            ["--provider", "offline", "ask", "--json", "What is Io?"],
        ]
        turns = []
        for argv in asks:
            assert main(["--vault", str(root), *argv]) == 0
            turns.append(json.loads(capsys.readouterr().out)["turn"])
        sent = [request.body["model"] for request in server.chat_requests]
    assert sent == ["from-env", "from-flag"]
    assert [turn["provider"] for turn in turns] == ["ollama", "ollama", "offline"]


def test_a_vault_made_by_init_follows_the_user_config(tmp_path: Path, user_config: Path) -> None:
    user_config.write_text("provider:\n  name: ollama\n  model: llama3\nui:\n  theme: lore-light\n")
    vault = Vault.open(init_vault(tmp_path / "fresh", "Fresh"))
    assert (vault.config.provider.name, vault.config.provider.model) == ("ollama", "llama3")
    assert vault.config.ui.theme == "lore-light"
    assert vault.name == "Fresh"
    vault.close()


def test_a_section_with_everything_commented_out_sets_nothing(
    tmp_path: Path, user_config: Path
) -> None:
    user_config.write_text("provider:\n  model: llama3\n")
    root = _vault_with(tmp_path, "provider:\n  # model: other\n")
    assert load_config(root / "lore.yaml", environ={}).provider.model == "llama3"


def test_the_template_is_the_reference_commented_out() -> None:
    assert parse_config(yaml.safe_load(SETTINGS_REFERENCE), "reference") == LoreConfig()
    assert commented_out(SETTINGS_REFERENCE) in CONFIG_TEMPLATE
    template = yaml.safe_load(CONFIG_TEMPLATE.format(name='"x"'))
    assert template == {"vault": {"name": "x"}}


# -- environment variables ----------------------------------------------------------------


def test_variables_are_converted_like_yaml_values(tmp_path: Path) -> None:
    environ = {
        "LORE_ASK__BUDGET_TOKENS": "4000",
        "LORE_GATES__REVIEW": "false",
        "LORE_PROVIDER__MODEL": "3",
        "LORE_PROVIDER__BASE_URL": "",
        "LORE_Search__Default_Limit": "7",
    }
    config = load_config(tmp_path / "lore.yaml", environ=environ)
    assert config.ask.budget_tokens == 4000
    assert config.gates.review is False
    assert config.provider.model == "3"
    assert config.provider.base_url is None
    assert config.search.default_limit == 7


def test_other_lore_variables_are_not_settings(tmp_path: Path) -> None:
    environ = {"LORE_HOME": "/x", "LORE_VAULT": "/y", "LORE_DEBUG": "1", "LORE_ACTOR": "me"}
    assert load_config(tmp_path / "lore.yaml", environ=environ) == LoreConfig()


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("LORE_ASK__BUDGET_TOKENS", "lots", "valid integer"),
        ("LORE_ASK__BUDGET_TOKENS", "-5", "greater than or equal to 0"),
        ("LORE_PROVIDER__NAME", "skynet", "offline"),
        ("LORE_PROVIDER__MODLE", "x", "provider.modle: unknown key"),
        ("LORE_COLOURS__TEXT", "x", "no settings section 'colours'"),
        ("LORE_KEYMAP__ASK", "x", "no settings section 'keymap'"),
        ("LORE_PROVIDER__MODEL__X", "x", "expected LORE_SECTION__KEY"),
        ("LORE___MODEL", "x", "expected LORE_SECTION__KEY"),
    ],
)
def test_a_bad_variable_is_one_line_naming_it(
    tmp_path: Path, name: str, value: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "lore.yaml", environ={name: value})
    message = str(caught.value)
    assert message.startswith(f"{name}: ") and expected in message and "\n" not in message


def test_a_bad_variable_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = init_vault(tmp_path / "v")
    monkeypatch.setenv("LORE_SEARCH__DEFAULT_LIMIT", "many")
    assert main(["--vault", str(root), "search", "x"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "LORE_SEARCH__DEFAULT_LIMIT" in err and "'many'" in err


# -- a broken user file -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("provider:\n  model: [unclosed\n", "could not parse YAML"),
        ("provider:\n  modle: x\n", "provider.modle: unknown key"),
        ("- just\n- a list\n", "mapping"),
    ],
)
def test_a_broken_user_config_names_that_file(
    tmp_path: Path, user_config: Path, text: str, expected: str
) -> None:
    user_config.write_text(text)
    root = init_vault(tmp_path / "v")
    with pytest.raises(ConfigError) as caught:
        load_config(root / "lore.yaml", environ={})
    message = str(caught.value)
    assert message.startswith(str(user_config)) and expected in message and "\n" not in message


def test_a_broken_user_config_in_a_subprocess_has_no_traceback(
    tmp_path: Path, user_config: Path
) -> None:
    user_config.write_text("ask:\n  budget_tokens: {\n")
    root = init_vault(tmp_path / "v")
    for command in (["search", "x"], ["doctor"]):
        result = subprocess.run(
            [sys.executable, "-m", "lore", "--vault", str(root), *command],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 1
        assert "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert str(user_config) in result.stderr and "YAML" in result.stderr


# -- lore locate config and lore doctor ---------------------------------------------------


def test_locate_config_lists_every_source_in_order(
    tmp_path: Path,
    user_config: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = init_vault(tmp_path / "v")
    monkeypatch.setenv("LORE_PROVIDER__MODEL", "llama3")
    monkeypatch.setenv("LORE_ASK__TOP_K", "5")
    assert main(["--vault", str(root), "locate", "config"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"user   {user_config}  (missing)",
        f"vault  {root / 'lore.yaml'}",
        "env    LORE_ASK__TOP_K",
        "env    LORE_PROVIDER__MODEL",
    ]
    user_config.write_text("{}\n")
    (root / "lore.yaml").unlink()
    monkeypatch.delenv("LORE_PROVIDER__MODEL")
    monkeypatch.delenv("LORE_ASK__TOP_K")
    assert main(["--vault", str(root), "locate", "config"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"user   {user_config}",
        f"vault  {root / 'lore.yaml'}  (missing)",
    ]


def test_config_sources_ignore_variables_that_are_not_settings(tmp_path: Path) -> None:
    environ = {"LORE_HOME": "/x", "LORE_DEBUG": "1", "LORE_UI__THEME": "lore-light"}
    sources = config_sources(tmp_path / "lore.yaml", environ=environ)
    assert [(s.kind, s.where) for s in sources][2:] == [("env", "LORE_UI__THEME")]


def test_doctor_names_vault_keys_that_hide_the_user_config(
    tmp_path: Path, user_config: Path
) -> None:
    user_config.write_text("provider:\n  name: ollama\n  model: llama3\n")
    root = _vault_with(tmp_path, "provider:\n  name: offline\n  model: llama3\n")
    vault = Vault.open(root)
    report = examine(vault)
    [finding] = [f for f in report.findings if f.kind == "config-override"]
    assert finding.path == "lore.yaml"
    assert re.search(
        r"provider\.name: 'offline' here overrides 'ollama' from .*config\.yaml", finding.message
    )
    assert report.ok
    vault.close()


def test_doctor_reports_a_user_config_broken_after_the_vault_opened(
    tmp_path: Path, user_config: Path
) -> None:
    vault = Vault.open(init_vault(tmp_path / "v"))
    user_config.write_text("search:\n  default_limit: many\n")
    report = examine(vault)
    [finding] = [f for f in report.findings if f.kind == "config"]
    assert finding.path == str(user_config) and "search.default_limit" in finding.message
    assert not report.ok
    vault.close()
