"""A brief command run as its own process spends nothing on Python's cyclic garbage collector.

A command such as `lore search` makes a few hundred thousand objects, nearly all of them
while it imports what it uses, and next to none becomes a reference cycle; yet the collector
walked them 60 to 100 times while the command ran (14 to 24 ms of a 160 to 340 ms command),
and all of them once more as the interpreter exited (about 30 ms). So the `lore` program reads
its command line with the collector paused; a command marked brief runs so to the end, and
then its objects are frozen (`gc.freeze`): the interpreter's last collection leaves them
alone, and the operating system takes the memory back at once. Commands that keep running
(the app, `lore chat`, `lore mcp`, `lore ingest`, `lore compact`) collect as usual while
they run, and are left to the exit the same way once done: after compacting 100,000 turns,
the interpreter's last collections took about 110 ms to walk what the memory archive holds.
Any caller that runs commands in its own process (`lore.cli.main(argv)`) collects as usual.
"""

from __future__ import annotations

import gc
from typing import Any

# The default a command's parser sets to be run with the collector paused.
BRIEF = "brief"


def mark_brief(parser: Any) -> None:
    """The command `parser` reads does a bounded amount of work, then exits."""
    parser.set_defaults(**{BRIEF: True})


def pause() -> bool:
    """Pause the collector, until `resume` or `leave_for_exit`; whether this did (it may be
    paused already)."""
    if not gc.isenabled():
        return False
    gc.disable()
    return True


def resume() -> None:
    gc.enable()


def leave_for_exit() -> None:
    """Keep every object made so far out of any later collection, then collect again.

    Frozen objects are never freed by the collector: for the process's last moments, when
    the operating system frees them all at once. A process that goes on (a caller of
    `main()` that keeps running) collects what it makes from here on as usual.
    """
    gc.freeze()
    gc.enable()
