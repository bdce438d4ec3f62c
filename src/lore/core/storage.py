"""Durable file primitives: atomic replace, fsynced JSONL appends, torn-line tolerant reads.

Every write Lore makes to a vault goes through these functions so that a reader, or a process
that crashes half way, only ever sees the old file or the new one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import field
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from lore.core.dataclass_lite import dataclass_lite
from lore.core.json_decode import decode_json
from lore.core.utf8_safe import json_bytes
from lore.errors import VaultError

T = TypeVar("T")


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class NotRegularFile(OSError):
    """A path that is a pipe, a device or a folder where a file's bytes were wanted."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(errno.EINVAL, "not a regular file; a pipe or device is never read")
        self.filename = str(path)


def open_regular(path: Path | str) -> BinaryIO:
    """The regular file at `path`, open for reading bytes.

    Opened without blocking and checked once open, so a named pipe put where a file was
    expected is refused at once (NotRegularFile) instead of hanging the reader.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(path)
        return open(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_bytes(path: Path, limit: int) -> bytes:
    """At most `limit` + 1 bytes of the regular file at `path` (one more tells it is longer);
    NotRegularFile for anything else (see `open_regular`)."""
    with open_regular(path) as handle:
        return handle.read(limit + 1)


def file_identity(path: Path) -> list[Any]:
    """What tells one version of a file from another without reading it: its path, inode,
    size, and modification and change times to the nanosecond; None in place of the rest
    when there is no such file. Caches of derived data are keyed on it."""
    try:
        found = os.stat(path)
    except OSError:
        return [str(path), None]
    return [str(path), found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns]


# A file changed this recently could change again within its clock's tick, keeping the same
# times and size: a cache keyed on `file_identity` does not save what it read until then.
SETTLED_NS = 2_000_000_000


def settled(identity: list[Any], now_ns: int) -> bool:
    """Whether the file `file_identity` described has been still long enough to cache."""
    return len(identity) < 5 or identity[3] <= now_ns - SETTLED_NS


def _describe_os_error(action: str, path: Path, exc: OSError) -> VaultError:
    reason = exc.strerror or str(exc)
    return VaultError(f"cannot {action} {path}: {reason}")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that readers see the old or the new file, never half."""
    atomic_write_stream(path, lambda handle: handle.write(data), binary=True)


def atomic_write_stream(path: Path, produce: Callable[[Any], T], *, binary: bool = False) -> T:
    """Replace `path` with what `produce` writes to the handle it is given, atomically.

    For content too large to hold in memory (an export of a long history): readers see the
    old file or the whole new one, never half, and a failure leaves no temporary file.
    Text is UTF-8 with "\n" line ends. Returns what `produce` returned.
    """
    # Here, not at the top: tempfile brings shutil, random and the compression modules, and
    # most commands write nothing.
    import tempfile

    folder = path.parent if str(path.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise _describe_os_error("write", path, exc) from None
    try:
        opened = (
            os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        )
        with opened as handle:
            result = produce(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise _describe_os_error("write", path, exc) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    _fsync_dir(folder)
    return result


def atomic_write_many(files: list[tuple[Path, bytes]], *, sync_each: bool = False) -> None:
    """Replace several files, each atomically, with one sync for the whole batch.

    Every temporary file is written and synced before any is renamed into place, so each
    file is still old or new, never half, and a crash leaves only stray .tmp files.
    `sync_each` syncs the files one by one, never the whole disk: for a few large files,
    whose wait should not depend on what other programs left unwritten.
    """
    import tempfile

    written: list[tuple[str, Path]] = []
    try:
        for path, data in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp_name = tempfile.mkstemp(
                prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
            )
            written.append((temp_name, path))
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
        if len(written) > 3 and not sync_each:
            # One sync for the batch costs about as much as three fsyncs here.
            os.sync()
        else:
            for temp_name, _ in written:
                fd = os.open(temp_name, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        for temp_name, path in written:
            os.replace(temp_name, path)
    except OSError as exc:
        for temp_name, _ in written:
            with contextlib.suppress(OSError):
                os.unlink(temp_name)
        raise _describe_os_error("write", files[0][0] if files else Path("."), exc) from None
    except BaseException:
        for temp_name, _ in written:
            with contextlib.suppress(OSError):
                os.unlink(temp_name)
        raise
    for folder in {path.parent for _, path in written}:
        _fsync_dir(folder)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, value: Any) -> None:
    atomic_write_bytes(path, json_bytes(value, indent=1, sort_keys=True) + b"\n")


def encode_record(record: dict[str, Any]) -> bytes:
    return json_bytes(record, separators=(",", ":")) + b"\n"


def append_record(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON record as a single write, then fsync, so a line is whole or absent."""
    append_raw(path, encode_record(record))


def append_raw(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Without blocking: a named pipe in the file's place is refused below, not waited on.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        raise _describe_os_error("append to", path, exc) from None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise NotRegularFile(path)
        # A torn last line from an earlier crash must not swallow this record.
        size = found.st_size
        if size:
            with open_regular(path) as reader:
                reader.seek(size - 1)
                if reader.read(1) != b"\n":
                    data = b"\n" + data
        written = os.write(fd, data)
        if written != len(data):
            raise OSError(28, "short write (disk full?)")
        os.fsync(fd)
    except OSError as exc:
        raise _describe_os_error("append to", path, exc) from None
    finally:
        os.close(fd)


@dataclass_lite
class JsonlReport:
    """What a tolerant JSONL read skipped, so `lore doctor` can tell the user."""

    records: int = 0
    bad_lines: list[int] = field(default_factory=list)
    torn_tail: bool = False


def iter_records(path: Path, report: JsonlReport | None = None) -> Iterator[dict[str, Any]]:
    """Yield each JSON object in a JSONL file, skipping garbage lines and a torn last line."""
    try:
        handle = open_regular(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _describe_os_error("read", path, exc) from None
    with handle:
        line_number = 0
        for raw in handle:
            line_number += 1
            if not raw.strip():
                continue
            try:
                value = decode_json(raw)
            except (ValueError, UnicodeDecodeError):
                value = None
            if not isinstance(value, dict):
                if report is not None:
                    report.bad_lines.append(line_number)
                    report.torn_tail = not raw.endswith(b"\n")
                continue
            if report is not None:
                report.records += 1
                report.torn_tail = False
            yield value


def read_tail_records(path: Path, count: int, chunk_size: int = 64 * 1024) -> list[dict[str, Any]]:
    """The last `count` whole records of a JSONL file, read backwards from its end.

    The cost depends on the size of those records, not on the length of the file.
    """
    if count <= 0:
        return []
    try:
        handle = open_regular(path)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise _describe_os_error("read", path, exc) from None
    with handle:
        end = handle.seek(0, os.SEEK_END)
        position = end
        buffer = b""
        records: list[dict[str, Any]] = []
        while position > 0 and len(records) < count:
            step = min(chunk_size, position)
            position -= step
            handle.seek(position)
            buffer = handle.read(step) + buffer
            lines = buffer.split(b"\n")
            # The first piece may be a partial line unless we reached the start of the file.
            buffer = lines[0] if position > 0 else b""
            complete = lines[1:] if position > 0 else lines
            for raw in reversed(complete):
                if len(records) >= count:
                    break
                if not raw.strip():
                    continue
                try:
                    value = decode_json(raw)
                except (ValueError, UnicodeDecodeError):
                    continue
                if isinstance(value, dict):
                    records.append(value)
        records.reverse()
        return records
