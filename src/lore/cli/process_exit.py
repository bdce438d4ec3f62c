"""The `lore` program's process ends without taking apart, object by object, what it made.

Once a command is done, its process has nothing left to do but exit; yet the interpreter's
shutdown empties every module and frees each object it holds, one at a time: about 2 ms
after a search, and 55-60 ms after compacting 100,000 turns, whose memory archive is a few
hundred thousand objects. The operating system takes the whole memory back at once anyway.
So, when the command has returned and this is the only thread left, the process does what
the shutdown does that matters (the exit handlers registered with `atexit`, which is where
logging, temporary folders and multiprocessing clean up, then flushing standard output and
error), and ends with `os._exit`. Lore's own files are all written, synced and closed by
the command before it returns (lore.core.storage), so none waits for the shutdown.

With another thread running, which the shutdown would wait for, under a profiler, a tracer
(a debugger, coverage) or `python -i`, each of which has work left after the program, or on
an interpreter without `atexit._run_exitfuncs` (CPython's, the function its shutdown calls),
the process exits the ordinary way.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any

# A status for output that could not be written: what `lore` returns for a closed pipe.
UNWRITTEN = 1


def end_process(code: int) -> None:
    """End this process with `code`, or return where the ordinary exit must do it."""
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return
    if sys.getprofile() is not None or sys.gettrace() is not None or sys.flags.inspect:
        return
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is None:
        return
    run_exit_handlers()
    # The streams in use, and the process's own, should something have replaced them.
    for stream in {id(stream): stream for stream in _standard_streams()}.values():
        try:
            stream.flush()
        except (OSError, ValueError):
            # A reader that went away (`lore search x | head -1`), or a closed stream.
            code = code or UNWRITTEN
    os._exit(code)


def _standard_streams() -> list[Any]:
    found = [sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__]
    return [stream for stream in found if stream is not None]
