"""Text from documents is data wherever the command line and the REPL show it: never Rich
markup, never an escape sequence written to the terminal, never a link to an odd scheme."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from lore.cli import main
from lore.core.audit import AuditLog
from lore.core.display_text import (
    clean_title,
    linkable_uri,
    strip_hidden,
    visible,
    visible_with_offsets,
)
from lore.core.notes import Source
from lore.core.quarantine import HeldClaim, Quarantine, render_held
from lore.core.session import LoreSession
from lore.core.vault import Vault
from lore.repl import ChatSession

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # writes "echo pwned" to the clipboard
TITLE_SET = "\x1b]0;owned\x07"
CLEAR_SCREEN = "\x1b[2J"
# What a terminal would act on, whichever form it takes.
RAW_SEQUENCES = ("\x1b]52", "\x1b]0;", "\x1b[2J", "\x07")
ESC_SPELLED = "⟦U+001B ESC⟧"


def run(capsys: pytest.CaptureFixture[str], vault: Vault, *args: str) -> tuple[int, str, str]:
    code = main(["--vault", str(vault.root), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_nothing_raw(*outputs: str) -> None:
    for output in outputs:
        for sequence in RAW_SEQUENCES:
            assert sequence not in output, f"{sequence!r} reached the terminal"


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")


@pytest.fixture
def tainted(vault: Vault) -> Vault:
    """A note as an editor, a sync or an older Lore could leave it: escapes in title and body."""
    vault.create_note(
        f"Comet tails {OSC52}",
        f"Comet tails {TITLE_SET}point away from the Sun {CLEAR_SCREEN}because of the solar "
        "wind.\n",
        sources=[
            Source("javascript:alert(1)", "", "a script"),
            Source("https://example.org/comets\x1b]8;;", "", f"escaped {OSC52}"),
            Source("https://example.org/tails", "", "the real page"),
        ],
    )
    return vault


def _note_path(vault: Vault) -> str:
    (path,) = (vault.root / "notes").glob("*.md")
    return vault.relpath(path)


def _hold(vault: Vault, claim_id: str, text: str, *, title: str = "blog") -> None:
    held = HeldClaim(
        id=claim_id,
        text=text,
        section="Status",
        source_uri="https://blog.example/status",
        source_title=title,
        source_sha256="ab" * 32,
        trust="untrusted",
        gate="sanitise",
        reasons=["instruction-like text: [/bold] ![status](http://x/y)"],
    )
    folder = vault.layout.quarantine
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{claim_id}.md").write_text(render_held(held), encoding="utf-8")


# -- the pure functions ----------------------------------------------------------------------


def test_visible_spells_out_what_a_terminal_would_act_on() -> None:
    shown = visible(f"a{OSC52}b\u202ec\u200bd\ne\tf", multiline=True)
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert shown == (
        "a⟦U+001B ESC⟧]52;c;ZWNobyBwd25lZA==⟦U+0007 BEL⟧b⟦U+202E RLO⟧c⟦U+200B ZWSP⟧d\ne\tf"
    )
    assert visible("one\ntwo", multiline=False) == "one⟦U+000A LF⟧two"
    assert visible("plain text", multiline=False) == "plain text"


@pytest.mark.parametrize(
    "text",
    ["plain words, nothing hidden", "two\nlines\tand a tab", f"a{OSC52}b\u202ec\r\nd", ""],
)
@pytest.mark.parametrize("multiline", [True, False])
def test_offsets_place_each_character_of_the_original_in_what_is_shown(
    text: str, multiline: bool
) -> None:
    shown, starts = visible_with_offsets(text, multiline=multiline)
    assert len(starts) == len(text) + 1 and starts[-1] == len(shown)
    for position, ch in enumerate(text):
        piece = shown[starts[position] : starts[position + 1]]
        assert piece == visible(ch, multiline=multiline)
    assert "\x1b" not in shown and "\u202e" not in shown and "\r" not in shown


def test_titles_lose_whole_sequences_and_hidden_characters() -> None:
    assert clean_title(f"Comets {OSC52} and {TITLE_SET} tails {CLEAR_SCREEN}") == "Comets and tails"
    assert clean_title("Ig\u200bnore \u202eevil\u202c  title\x9b31m") == "Ignore evil title"
    assert clean_title("Orbital   resonance") == "Orbital resonance"


def test_only_http_https_and_file_uris_are_linkable() -> None:
    assert linkable_uri("https://example.org/a?b=c")
    assert linkable_uri("http://example.org")
    assert linkable_uri("file:///tmp/notes.md")
    for uri in (
        "javascript:alert(1)",
        "data:text/html,hi",
        "https://example.org/\x1b]8;;",
        "https://exa mple.org",
        "http:no-host",
        "",
    ):
        assert not linkable_uri(uri), uri


def test_strip_hidden_counts_what_it_removed() -> None:
    assert strip_hidden("Ig\u200bnore\u202e me\n\tok") == ("Ignore me\n\tok", 2)


# -- quarantine review -----------------------------------------------------------------------


def test_quarantine_list_and_show_print_brackets_literally(
    vault: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "Close with [/bold]; see ![status](http://x/y)"
    _hold(vault, "c0ffee01", text, title="[bold]blog[/bold]")
    code, out, err = run(capsys, vault, "quarantine", "list")
    assert code == 0, err
    assert "[/bold]" in out and "![status](http://x/y)" in out
    assert "[bold]blog[/bold]" in out
    code, out, err = run(capsys, vault, "quarantine", "show", "c0ffee01")
    assert code == 0, err
    assert text in out and "[bold]blog[/bold]" in out
    assert "instruction-like text: [/bold] ![status](http://x/y)" in out


def test_quarantine_list_never_writes_a_held_escape(
    vault: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    _hold(vault, "c0ffee02", f"Clipboard {OSC52} and title {TITLE_SET}", title=f"b{CLEAR_SCREEN}")
    code, out, err = run(capsys, vault, "quarantine", "list")
    assert code == 0
    assert_nothing_raw(out, err)
    assert ESC_SPELLED in out.replace("\n", "")
    code, out, err = run(capsys, vault, "quarantine", "show", "c0ffee02")
    assert code == 0
    assert_nothing_raw(out, err)


def test_promotion_strips_hidden_characters_and_says_so(
    vault: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    _hold(vault, "c0ffee03", "Europa\u200b has a sub\u202esurface ocean\u2060.")
    code, out, err = run(capsys, vault, "quarantine", "promote", "c0ffee03")
    assert code == 0, err
    assert "removed 3 hidden characters" in out
    (path,) = re.findall(r"notes/\S+\.md", out)
    note = (vault.root / path).read_text(encoding="utf-8")
    assert "Europa has a subsurface ocean." in note
    assert not any(char in note for char in "\u200b\u202e\u2060")
    (entry,) = [e for e in AuditLog(vault).read() if e.verdict == "promoted"]
    assert "removed 3 hidden characters" in entry.reasons


def test_promoting_a_source_reports_the_hidden_characters_too(
    vault: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    _hold(vault, "c0ffee04", "Io\u200b has volcanoes.")
    _hold(vault, "c0ffee05", "Io is\u200d\u200d hot.")
    promotion = Quarantine(vault).promote_source_and_report("https://blog.example/status")
    assert promotion.hidden_removed == 3
    assert promotion.hidden_note() == "removed 3 hidden characters"


# -- notes, search, ask, history, context ----------------------------------------------------


def test_note_listings_spell_out_escapes_in_titles(
    tainted: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (["notes", "list"], ["search", "comet"], ["summary"]):
        code, out, err = run(capsys, tainted, *args)
        assert code == 0, (args, err)
        assert_nothing_raw(out, err)
        assert ESC_SPELLED in out, args


def test_notes_show_spells_out_escapes_in_title_body_and_sources(
    tainted: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, tainted, "notes", "show", _note_path(tainted))
    assert code == 0, err
    assert_nothing_raw(out, err)
    assert out.count(ESC_SPELLED) >= 3  # title, body, a source title


def test_json_output_is_exact_and_still_safe_to_print(
    vault: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    title = f"Mirror \u202eelbat{OSC52}"
    vault.create_note(title, "Mirrors reflect light.\n")
    code, out, _ = run(capsys, vault, "notes", "list", "--json")
    assert code == 0
    assert [note["title"] for note in json.loads(out)] == [title]
    assert "\u202e" not in out and "\x1b" not in out and "\\u202e" in out


def test_ask_and_history_never_write_escapes_from_notes_or_questions(
    tainted: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    question = f"Why do comet tails {TITLE_SET}point away from the Sun?"
    code, out, err = run(capsys, tainted, "ask", question)
    assert code == 0, err
    assert "[1]" in out  # a citation line was printed
    assert_nothing_raw(out, err)
    assert ESC_SPELLED in out
    code, out, err = run(capsys, tainted, "history")
    assert code == 0
    assert_nothing_raw(out, err)
    assert ESC_SPELLED in out.replace("\n", "")
    turn_id = json.loads(run(capsys, tainted, "history", "--json")[1])[0]["id"]
    code, out, err = run(capsys, tainted, "history", "show", turn_id)
    assert code == 0
    assert_nothing_raw(out, err)
    assert ESC_SPELLED in out


def test_context_raw_spells_out_escapes_in_question_and_evidence(
    tainted: Vault, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, tainted, "context", "--raw", f"comet {CLEAR_SCREEN}tails")
    assert code == 0, err
    assert_nothing_raw(out, err)
    assert "Comet tails" in out and ESC_SPELLED in out
    code, out, err = run(capsys, tainted, "context", f"comet {CLEAR_SCREEN}tails")
    assert code == 0
    assert_nothing_raw(out, err)


def test_history_export_to_a_terminal_is_shown_safely_and_to_a_pipe_exactly(
    tainted: Vault, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run(capsys, tainted, "ask", f"comet {TITLE_SET}tails?")
    code, piped, _ = run(capsys, tainted, "history", "export")
    assert code == 0 and TITLE_SET in piped
    monkeypatch.setattr("sys.stdout.isatty", lambda: True, raising=False)
    code, shown, _ = run(capsys, tainted, "history", "export")
    assert code == 0
    assert_nothing_raw(shown)


# -- links -----------------------------------------------------------------------------------


def _links(output: str) -> list[str]:
    return re.findall(r"\x1b\]8;[^;]*;([^\x1b]*)\x1b\\", output)


def test_only_http_and_file_sources_become_terminal_links(
    tainted: Vault, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # the CLI's console writes as to a terminal
    code, out, err = run(capsys, tainted, "notes", "show", _note_path(tainted))
    assert code == 0, err
    links = [link for link in _links(out) if link]
    assert links == ["https://example.org/tails"]
    assert "javascript:" not in "".join(links)
    assert "\x1b]52" not in out and "\x1b]0;" not in out
    assert "a script" in out  # the other sources are still named, without a link


def test_markdown_links_to_other_schemes_are_not_terminal_links(
    vault: Vault, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    vault.create_note(
        "Links",
        "See [the page](https://example.org/a), [a shell](ssh://host/x) and "
        "[a phone](tel:12345).\n",
    )
    code, out, _ = run(capsys, vault, "notes", "show", "Links")
    assert code == 0
    assert [link for link in _links(out) if link] == ["https://example.org/a"]


# -- ingest ----------------------------------------------------------------------------------


def test_a_heading_with_escape_sequences_gives_a_clean_title(
    vault: Vault, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = tmp_path / "comets.md"
    doc.write_text(
        f"# Comets {OSC52}and {TITLE_SET}tails {CLEAR_SCREEN}\n\n"
        "## Tails \u202e\u200bexplained\n\n"
        "Comets are icy bodies that orbit the Sun.\n\n"
        "A comet tail points away from the Sun.\n",
        encoding="utf-8",
    )
    code, out, err = run(capsys, vault, "ingest", str(doc))
    assert code == 0, err
    assert_nothing_raw(out, err)
    # The hidden characters in the headings hold the claims; a person promotes them.
    assert list((vault.root / "notes").glob("*.md")) == []
    code, out, err = run(capsys, vault, "quarantine", "promote", "--source", doc.as_uri())
    assert code == 0, err
    assert_nothing_raw(out, err)
    notes = list((vault.root / "notes").glob("*.md"))
    assert notes
    for path in notes:
        text = path.read_text(encoding="utf-8")
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    titles = [
        note["title"] for note in json.loads(run(capsys, vault, "notes", "list", "--json")[1])
    ]
    assert "Comets and tails — Tails explained" in titles
    for args in (["notes", "list"], ["search", "comet"], ["quarantine", "list"]):
        code, out, err = run(capsys, vault, *args)
        assert_nothing_raw(out, err)


# -- the REPL --------------------------------------------------------------------------------


def test_the_repl_shows_answers_and_tables_as_data(tainted: Vault) -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=200)
    session = ChatSession(LoreSession(tainted), console)
    session.handle(f"why do comet tails {TITLE_SET}point away?")
    session.handle("/search comet")
    output = buffer.getvalue()
    assert "\x1b]52" not in output and "\x1b]0;" not in output and "\x1b[2J" not in output
    assert ESC_SPELLED in output
