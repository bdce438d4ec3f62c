"""The themes cache: the app's next start takes its themes and choice without reading YAML."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from lore.core.theme_cache import themes_at_start
from lore.core.themes import load_themes, remember_theme
from lore.paths import user_dirs

DUSK = "name: dusk\nprimary: '#aa88ff'\nvariables:\n  citation: '#00ccff'\n"


def settle(path: Path) -> None:
    """Date a file a minute back, as one not touched since long before."""
    past = time.time() - 60
    os.utime(path, (past, past))


def cache_file() -> Path:
    return user_dirs().cache / "themes.json"


def user_theme(text: str) -> Path:
    folder = user_dirs().themes
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "dusk.yaml"
    path.write_text(text, encoding="utf-8")
    settle(path)
    return path


def test_the_next_start_takes_themes_and_choice_from_the_cache_without_yaml() -> None:
    user_theme(DUSK)
    remember_theme("dusk")
    settle(user_dirs().state_file)
    first, remembered = themes_at_start()
    assert remembered == "dusk" and cache_file().is_file()
    script = (
        "import sys\n"
        "from lore.core.theme_cache import themes_at_start\n"
        "catalogue, remembered = themes_at_start()\n"
        "assert 'yaml' not in sys.modules, 'yaml was imported'\n"
        "print(remembered, sorted(catalogue.themes), catalogue.themes['dusk'].variables)\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=os.environ, check=True
    ).stdout
    assert shown.split(" ", 1)[0] == "dusk"
    assert str(sorted(first.themes)) in shown and "'citation': '#00ccff'" in shown


def test_an_edited_theme_and_a_new_choice_are_read_at_once() -> None:
    path = user_theme(DUSK)
    themes_at_start()
    assert cache_file().is_file()
    path.write_text(DUSK.replace("#00ccff", "#112233"), encoding="utf-8")
    remember_theme("lore-light")
    catalogue, remembered = themes_at_start()
    assert catalogue.themes["dusk"].variables == {"citation": "#112233"}
    assert remembered == "lore-light"


def test_a_theme_file_changed_a_moment_ago_is_not_cached() -> None:
    user_theme(DUSK).write_text(DUSK, encoding="utf-8")
    themes_at_start()
    assert not cache_file().exists()


def test_a_damaged_cache_is_read_past_and_replaced() -> None:
    user_theme(DUSK)
    cache_file().parent.mkdir(parents=True, exist_ok=True)
    cache_file().write_text('{"signature": [1, 2', encoding="utf-8")
    catalogue, _ = themes_at_start()
    assert catalogue.themes == load_themes().themes
    assert themes_at_start()[0].themes == catalogue.themes
    assert cache_file().read_text(encoding="utf-8").startswith('{"signature": ["lore-themes/1"')


def test_a_broken_theme_file_is_reported_from_the_cache_too() -> None:
    broken = user_dirs().themes / "broken.yaml"
    user_theme(DUSK)
    broken.write_text("name: broken\nprimary: [not, a, colour\n", encoding="utf-8")
    settle(broken)
    first, _ = themes_at_start()
    again, _ = themes_at_start()
    assert len(first.problems) == 1 and again.problems == first.problems
    assert "broken.yaml" in again.problems[0]
