"""The parser built for one command reads its command line exactly as the whole parser does."""

from __future__ import annotations

import argparse

import pytest

from lore.cli import NO_COMMAND, build_parser, named_command

COMMAND_LINES = [
    [],
    ["--vault", "/tmp/v"],
    ["--vault=/tmp/v", "--provider", "ollama"],
    ["search", "ocean", "--limit", "3"],
    ["--vault", "search", "search", "--json", "ice"],
    ["--va", "/tmp/v", "notes", "list", "--json"],
    ["--model", "llama3", "ask", "--json", "what is Europa?"],
    ["notes", "show", "Europa"],
    ["history", "show", "t1"],
    ["quarantine", "list"],
    ["log"],
    ["init", "/tmp/new", "--name", "New"],
    ["ingest", "a.md", "b.md"],
    ["mcp"],
]


def _read(parser: argparse.ArgumentParser, argv: list[str]) -> dict[str, object]:
    read = vars(parser.parse_args(argv))
    # Some commands are closures made as they register: the same code, not the same object.
    if callable(read.get("func")):
        read["func"] = read["func"].__qualname__
    return read


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


@pytest.mark.parametrize("argv", COMMAND_LINES, ids=" ".join)
def test_one_command_is_read_as_by_the_whole_parser(argv: list[str]) -> None:
    assert _read(build_parser(argv), argv) == _read(build_parser(), argv)


def test_only_the_command_named_is_built() -> None:
    assert _commands(build_parser(["search", "ocean"])) == {"search"}
    assert _commands(build_parser(["--vault", "x"])) == set()
    assert {"search", "notes", "ask", "history", "mcp"} <= _commands(build_parser())


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], NO_COMMAND),
        (["--vault", "x"], NO_COMMAND),
        (["--version"], NO_COMMAND),
        (["--provider=ollama", "ask", "q"], "ask"),
        (["--help"], None),
        (["--vault", "x", "-h"], None),
        (["-x"], None),
        (["bogus"], "bogus"),
    ],
)
def test_the_command_named(argv: list[str], expected: str | None) -> None:
    assert named_command(argv) == expected


def test_a_mistyped_command_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        build_parser(["serch"]).parse_args(["serch"])
    assert caught.value.code == 2
    error = capsys.readouterr().err
    assert "invalid choice: 'serch'" in error and "'search'" in error and "'history'" in error


def test_a_command_help_still_shows_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser(["search", "--help"]).parse_args(["search", "--help"])
    assert "--limit" in capsys.readouterr().out
