"""Small pieces the History, Metrics, Quarantine and Notes panes share."""

from __future__ import annotations

import subprocess
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from textual.app import App, SuspendNotSupported
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from lore.core.public import editor_command
from lore.errors import LoreError
from lore.tui.held_text import notify_plain


def report_worker_failure(widget: Widget, worker: Worker[object], state: WorkerState) -> None:
    """Turn a failed worker into one notification: a LoreError says what to do, anything
    else is a bug, shown with its type so it can be reported."""
    if state != WorkerState.ERROR or worker.error is None:
        return
    error = worker.error
    if isinstance(error, LoreError):
        message = str(error)
    else:
        message = f"{worker.name or 'background task'} failed: {type(error).__name__}: {error}"
    notify_plain(widget, message, title="Lore", severity="error", timeout=8)


def _suspended(app: App[object]) -> AbstractContextManager[None]:
    # A headless app (tests, pipes) owns no terminal, so there is nothing to hand over.
    if app.is_headless:
        return nullcontext()
    return app.suspend()


def run_editor(app: App[object], path: Path) -> str | None:
    """Open `path` in the user's editor with the app suspended; the reason it failed, or None."""
    command = [*editor_command(), str(path)]
    try:
        with _suspended(app):
            completed = subprocess.run(command, check=False)
    except SuspendNotSupported:
        return "this terminal cannot hand over to an editor; edit the file outside Lore"
    except FileNotFoundError:
        return f"editor not found: {command[0]} (set $EDITOR)"
    except OSError as exc:
        return f"cannot start the editor {command[0]}: {exc.strerror}"
    if completed.returncode != 0:
        return f"the editor exited with status {completed.returncode}"
    return None
