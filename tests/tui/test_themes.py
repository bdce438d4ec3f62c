"""Themes: built-in YAML themes, user themes, broken files, and the remembered choice."""

from __future__ import annotations

from pathlib import Path

import pytest
from pane_harness import wait_until

from lore.core.session import LoreSession
from lore.core.themes import LORE_VARIABLES, load_themes, remember_theme, remembered_theme
from lore.core.vault import Vault
from lore.paths import user_dirs
from lore.tui.app import LoreApp


def test_built_in_themes_cover_dark_light_and_high_contrast() -> None:
    catalogue = load_themes()
    assert catalogue.problems == []
    assert {"lore-dark", "lore-light", "lore-high-contrast"} <= set(catalogue.themes)
    assert catalogue.themes["lore-light"].dark is False
    for spec in catalogue.themes.values():
        assert set(LORE_VARIABLES) <= set(spec.variables), spec.name


def test_a_user_theme_loads_and_a_broken_one_is_reported(tmp_path: Path) -> None:
    folder = user_dirs().themes
    folder.mkdir(parents=True)
    (folder / "dusk.yaml").write_text(
        "name: dusk\nprimary: '#aa88ff'\nbackground: '#101018'\nvariables:\n  citation: '#00ccff'\n",
        encoding="utf-8",
    )
    (folder / "broken.yaml").write_text(
        "name: broken\nprimary: [not, a, colour\n", encoding="utf-8"
    )
    (folder / "wrong.yaml").write_text("name: wrong\nprimary: 'not a colour'\n", encoding="utf-8")
    catalogue = load_themes()
    assert catalogue.themes["dusk"].variables == {"citation": "#00ccff"}
    assert "broken" not in catalogue.themes and "wrong" not in catalogue.themes
    assert len(catalogue.problems) == 2
    assert any("broken.yaml" in line and "YAML" in line for line in catalogue.problems)
    assert any("wrong.yaml: primary" in line for line in catalogue.problems)


def test_the_choice_is_kept_beside_other_preferences() -> None:
    state = user_dirs().state_file
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text("other: kept\n", encoding="utf-8")
    assert remembered_theme() is None
    remember_theme("lore-light")
    assert remembered_theme() == "lore-light"
    assert "other: kept" in state.read_text(encoding="utf-8")


async def test_switching_theme_restyles_and_persists(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(100, 30)) as pilot:
        assert app.theme == "lore-dark"
        dark_background = app.screen.styles.background
        assert app.apply_theme("lore-light")
        await pilot.pause()
        assert app.screen.styles.background != dark_background
        assert app.get_css_variables()["citation"] == "#0b6bcb"
        await wait_until(lambda: remembered_theme() == "lore-light", message="theme not saved")
        assert not app.apply_theme("no-such-theme")
        assert app.theme == "lore-light"
        await wait_until(
            lambda: any("no theme named 'no-such-theme'" in n.message for n in app._notifications)
        )
    # The next start opens with the remembered theme.
    again = LoreApp(LoreSession(sample_vault))
    async with again.run_test(size=(100, 30)):
        assert again.theme == "lore-light"


async def test_a_broken_user_theme_is_one_notification_and_the_default_applies(
    sample_vault: Vault,
) -> None:
    folder = user_dirs().themes
    folder.mkdir(parents=True)
    (folder / "lore-dark.yaml").write_text("primary: '#zzz'\n", encoding="utf-8")
    remember_theme("lore-dark")
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(lambda: any("lore-dark.yaml" in n.message for n in app._notifications))
        await pilot.pause()
        problems = [n for n in app._notifications if "lore-dark.yaml" in n.message]
        assert len(problems) == 1
        # The built-in lore-dark still applies: the broken override was skipped.
        assert app.theme == "lore-dark"
        assert app.get_css_variables()["citation"] == "#7dcfff"


@pytest.mark.parametrize("name", ["textual-dark", "nord"])
async def test_lore_colours_have_defaults_under_any_textual_theme(
    sample_vault: Vault, name: str
) -> None:
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(100, 30)) as pilot:
        assert app.apply_theme(name)
        await pilot.pause()
        variables = app.get_css_variables()
        assert all(variables.get(key) for key in LORE_VARIABLES)


async def test_a_theme_file_added_while_the_app_runs_can_be_chosen(sample_vault: Vault) -> None:
    app = LoreApp(LoreSession(sample_vault))
    async with app.run_test(size=(100, 30)):
        folder = user_dirs().themes
        folder.mkdir(parents=True, exist_ok=True)
        light = Path(__file__).resolve().parents[2] / "themes" / "lore-light.yaml"
        text = light.read_text(encoding="utf-8").replace("name: lore-light", "name: my-paper")
        (folder / "my-paper.yaml").write_text(text, encoding="utf-8")
        assert not app.apply_theme("my-paper")  # not known yet: looked for on a worker
        await wait_until(lambda: app.theme == "my-paper", message="new theme never applied")
