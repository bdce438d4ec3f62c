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
from typing import TYPE_CHECKING

from lore import __version__
from lore.cli import ask_cmd, chat_cmd, history_cmd, ingest_cmd, mcp_cmd, notes_cmd, versions_cmd
from lore.cli.common import Context
from lore.errors import LoreError

if TYPE_CHECKING:
    from rich.text import Text

# Each module adds its subcommands with `register(subparsers)`.
COMMAND_MODULES = [notes_cmd, chat_cmd, ingest_cmd, ask_cmd, history_cmd, mcp_cmd, versions_cmd]


def build_parser() -> argparse.ArgumentParser:
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
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
