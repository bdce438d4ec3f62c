"""Where Lore keeps things: LORE_HOME, the XDG folders, and `lore locate`."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.cli import main
from lore.core.vault import init_vault
from lore.paths import find_vault_root, user_dirs


def test_lore_home_moves_every_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORE_HOME", str(tmp_path / "home"))
    dirs = user_dirs()
    for folder in (dirs.config, dirs.data, dirs.cache, dirs.default_vault, dirs.themes):
        assert folder.is_relative_to(tmp_path / "home")


def test_xdg_variables_apply_without_lore_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LORE_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/is/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    dirs = user_dirs()
    assert dirs.default_vault == tmp_path / "data" / "lore" / "vault"
    assert dirs.config == tmp_path / "config" / "lore"
    assert dirs.cache == tmp_path / "user" / ".cache" / "lore"


def test_find_vault_root_walks_up(tmp_path: Path) -> None:
    root = init_vault(tmp_path / "v")
    deep = root / "notes" / "x"
    deep.mkdir(parents=True)
    assert find_vault_root(deep) == root
    assert find_vault_root(tmp_path) is None


@pytest.mark.parametrize("what", ["vault", "data", "themes"])
def test_locate_prints_one_path(
    what: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = init_vault(tmp_path / "v")
    assert main(["--vault", str(root), "locate", what]) == 0
    printed = capsys.readouterr().out.strip()
    expected = {
        "vault": root,
        "data": user_dirs().data,
        "themes": user_dirs().themes,
    }[what]
    assert printed == str(expected)


def test_locate_does_not_create_the_default_vault(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["locate", "vault"]) == 0
    assert capsys.readouterr().out.strip() == str(user_dirs().default_vault)
    assert not user_dirs().default_vault.exists()
