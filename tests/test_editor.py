"""One rule for the user's editor, whichever face opens it."""

from __future__ import annotations

import pytest

from lore.cli import main
from lore.core.editor import editor_command
from lore.core.vault import Vault


def test_visual_wins_over_editor_and_arguments_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDITOR", "nano")
    monkeypatch.setenv("VISUAL", "code --wait")
    assert editor_command() == ["code", "--wait"]
    monkeypatch.delenv("VISUAL")
    assert editor_command() == ["nano"]
    monkeypatch.delenv("EDITOR")
    assert editor_command() == ["vi"]


def test_an_editor_setting_with_an_unbalanced_quote_is_one_line_not_a_traceback(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    vault.create_note("Phobos", "Phobos is the larger moon of Mars.")
    monkeypatch.setenv("EDITOR", 'vim "unbalanced')
    assert editor_command() == ['vim "unbalanced']
    code = main(["--vault", str(vault.root), "notes", "edit", "Phobos"])
    err = capsys.readouterr().err
    assert code != 0 and "not found" in err and "Traceback" not in err
