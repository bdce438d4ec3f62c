"""The `lore` command line: one parser, subcommands registered by module, one-line errors.

Every command module is imported to build the parser, so each keeps its top level light
(argparse, the standard library, `lore.cli.common`, `lore.rich_display`) and imports what
its commands use inside them: `lore --help` reads no vault module, and `lore search` loads
neither the app, the ingest pipeline nor the ask engine (tests/test_startup_imports.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lore import __version__
from lore.cli import (
    ask_cmd,
    chat_cmd,
    collector,
    history_cmd,
    ingest_cmd,
    mcp_cmd,
    notes_cmd,
    process_exit,
    versions_cmd,
)
from lore.cli.common import Context
from lore.errors import LoreError

if TYPE_CHECKING:
    from rich.text import Text

# Each module adds its subcommands with `register(subparsers)`.
COMMAND_MODULES = [notes_cmd, chat_cmd, ingest_cmd, ask_cmd, history_cmd, mcp_cmd, versions_cmd]


# The options before the command that take a value (argparse also takes a prefix of one).
_VALUED_OPTIONS = ("--vault", "--provider", "--model")


# What `named_command` returns for a command line that names no command: the app.
NO_COMMAND = ""


def named_command(argv: Sequence[str]) -> str | None:
    """The command `argv` names, NO_COMMAND when none, None when every command is wanted:
    the top-level help, or a command line that cannot be read without the whole parser."""
    waiting_for_value = False
    for token in argv:
        if waiting_for_value:
            waiting_for_value = False
        elif token in ("-h", "--help", "--"):
            return None
        elif token.startswith("--"):
            name = token.partition("=")[0]
            takes_value = any(option.startswith(name) for option in _VALUED_OPTIONS)
            waiting_for_value = takes_value and "=" not in token
        elif token.startswith("-") and token != "-":
            return None
        else:
            return token
    return NO_COMMAND


class _CommandsNamed:
    """Subparsers that build only the command named on the command line.

    Building all 36 commands' parsers took longer than most commands' own work; the others
    are only needed for the help and for a mistyped command, when all are built.
    """

    def __init__(self, subparsers: Any, wanted: str) -> None:
        self._subparsers = subparsers
        self._wanted = wanted
        self.found = False

    def add_parser(self, name: str, **options: Any) -> Any:
        if name != self._wanted:
            return _UnusedParser()
        self.found = True
        return self._subparsers.add_parser(name, **options)


class _UnusedParser:
    """Stands for a command not named: takes its arguments and defaults, and keeps nothing."""

    def __getattr__(self, _name: str) -> Any:
        return self._ignore

    def _ignore(self, *_args: Any, **_options: Any) -> _UnusedParser:
        return self


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `argv`, one holding just the command it names, when it names one."""
    parser = _top_level_parser()
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = named_command(argv) if argv is not None else None
    if wanted == NO_COMMAND:
        return parser
    if wanted is not None:
        only = _CommandsNamed(subparsers, wanted)
        for module in COMMAND_MODULES:
            module.register(only)
        if only.found:
            return parser
        # Not a command: the whole parser says so, and lists them.
        parser = _top_level_parser()
        subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def _top_level_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lore",
        description="A local-first LLM wiki that lives in the terminal.",
        epilog="Run `lore COMMAND --help` for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"lore {__version__}")
    parser.add_argument("--vault", metavar="PATH", help="the vault folder (default: discovered)")
    parser.add_argument(
        "--provider",
        choices=["offline", "ollama", "openai"],
        help="answer with this provider instead of the one in lore.yaml",
    )
    parser.add_argument("--model", help="use this model instead of the one in lore.yaml")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; without `argv`, as the `lore` program, whose process then ends."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    # Only the program's own process may leave its objects to the exit (see collector).
    own_process = argv is None
    paused = own_process and collector.pause()
    brief = False
    try:
        args = build_parser(arguments).parse_args(arguments)
        brief = bool(getattr(args, collector.BRIEF, False))
        # `lore` alone may start the app, which resumes the collector once its first screen
        # is drawn (see notes_cmd.default_action).
        args.collector_paused = paused and getattr(args, "func", None) is None
        # Whether the process ends once the command returns (see process_exit).
        args.ends_process = own_process
        if paused and not brief and not args.collector_paused:
            collector.resume()
        code = _run(args)
    finally:
        if paused:
            # Whatever the command, the process ends next (see collector).
            collector.leave_for_exit()
    if own_process:
        process_exit.end_process(code)
    return code


def _run(args: argparse.Namespace) -> int:
    ctx = Context(args)
    action = getattr(args, "func", None) or notes_cmd.default_action
    try:
        code = action(ctx)
        ctx.warn_skipped()
        return int(code or 0)
    except LoreError as exc:
        ctx.warn_skipped()
        ctx.err.print(_error_line("lore: ", exc.message))
        return exc.exit_code
    except KeyboardInterrupt:
        ctx.err.print("lore: interrupted")
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:
        if os.environ.get("LORE_DEBUG"):
            raise
        ctx.err.print(
            _error_line(
                "lore: internal error: ",
                f"{type(exc).__name__}: {exc} (set LORE_DEBUG=1 for the traceback)",
            )
        )
        return 1
    finally:
        ctx.close()
        sys.stdout.flush()


def _error_line(label: str, message: str) -> Text:
    from rich.text import Text

    from lore.core.public import visible

    return Text.assemble((label, "bold red"), visible(message, multiline=True))
