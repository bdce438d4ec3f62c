"""The `lore` command line: one parser, subcommands registered by module, one-line errors."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from rich.text import Text

from lore import __version__
from lore.cli import ask_cmd, chat_cmd, history_cmd, ingest_cmd, notes_cmd
from lore.cli.common import Context
from lore.core.public import visible
from lore.errors import LoreError

# Each module adds its subcommands with `register(subparsers)`.
COMMAND_MODULES = [notes_cmd, chat_cmd, ingest_cmd, ask_cmd, history_cmd]


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
        ctx.err.print(Text.assemble(("lore: ", "bold red"), visible(exc.message, multiline=True)))
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
            Text.assemble(
                ("lore: internal error: ", "bold red"),
                visible(
                    f"{type(exc).__name__}: {exc} (set LORE_DEBUG=1 for the traceback)",
                    multiline=True,
                ),
            )
        )
        return 1
    finally:
        ctx.close()
        sys.stdout.flush()
