"""The core and the plain command line never load the terminal UI toolkits."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import importlib, json, pkgutil, sys
import lore.core
names = []
for module in pkgutil.walk_packages(lore.core.__path__, "lore.core."):
    importlib.import_module(module.name)
    names.append(module.name)
import lore.cli
from lore.cli import build_parser
build_parser()
loaded = sorted(
    name for name in sys.modules
    if name.split(".")[0] in {"textual", "prompt_toolkit"}
)
print(json.dumps({"modules": names, "ui": loaded}))
"""


def test_core_and_cli_import_no_ui_toolkit() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert "lore.core.vault" in report["modules"] and "lore.core.search.index" in report["modules"]
    assert report["ui"] == []


def test_a_plain_command_runs_without_the_ui(tmp_path: object) -> None:
    probe = (
        "import sys, lore.cli\n"
        "code = lore.cli.main(['locate', 'data'])\n"
        "bad = [n for n in sys.modules if n.split('.')[0] in {'textual', 'prompt_toolkit'}]\n"
        "print(bad)\n"
        "sys.exit(code)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
