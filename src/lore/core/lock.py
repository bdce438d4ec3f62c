"""The cross-process vault lock.

Writers take an exclusive `flock` on `.lore/lock`. The lock is re-entrant inside one process
so that a core function holding it can call another that takes it too.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lore.errors import VaultError, VaultLocked


class VaultLock:
    def __init__(self, path: Path, timeout_s: float = 30.0) -> None:
        self.path = path
        self.timeout_s = timeout_s
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._owner: int | None = None
        self._fd: int | None = None

    @contextmanager
    def hold(self) -> Iterator[None]:
        with self._thread_lock:
            self._owner = threading.get_ident()
            if self._depth == 0:
                self._acquire()
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._owner = None
                    self._release()

    def held_by_this_thread(self) -> bool:
        return self._depth > 0 and self._owner == threading.get_ident()

    def _acquire(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise VaultError(f"cannot take the vault lock {self.path}: {exc.strerror}") from None
        deadline = time.monotonic() + self.timeout_s
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise VaultLocked(
                        f"the vault is busy: another Lore process has held {self.path} "
                        f"for over {self.timeout_s:.0f}s"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
        self._fd = fd

    def _release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
