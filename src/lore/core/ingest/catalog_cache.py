"""What the catalog of notes learnt from each note, kept between runs in the state folder.

Filing needs every note's title, trust, status and origin, and the similarity sketches of
its claims. Reading and sketching 10,000 notes takes seconds, and every ingest and every
promotion from quarantine starts with it, though most notes have not changed since the last
run. So each note's part of the catalog is kept here, beside the size and modification time
of the file it was read from, and a note whose file still has both is taken from here
instead of being read again. What is kept is exactly what reading the note makes, so a
catalog is the same either way.

The cache is an SQLite database (`.lore/catalog.sqlite3`): a note's row is replaced on its
own, in a transaction, so a run that read a few changed notes writes a few rows, and a
crash leaves the rows as they were. It is derived state: a missing, damaged, foreign or
older file is a miss, and the notes are read as if it were not there.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from pathlib import Path
from typing import Any

from lore.core.dataclass_lite import dataclass_own_init

CACHE_FILE = "catalog.sqlite3"
# Changed whenever what a note's row holds changes. How the catalog reads a note is checked
# by the caller's fingerprint of it (`reading`): rows of another version or another reading
# are never used.
CACHE_VERSION = "1"
# Paths are looked up this many at a time (SQLite's limit on parameters is 999 in old builds).
_LOOKUP_BATCH = 500
# Past this share of the cached notes, every row is read in one pass instead, this many
# rows at a time.
_READ_ALL_SHARE = 0.25
_READ_CHUNK = 500
# How long a write waits for another process reading the cache (writers hold the vault lock).
_BUSY_TIMEOUT_S = 2.0


@dataclass_own_init
class NoteInfo:
    """What filing needs to know of a note without its body: title, trust, status, the source it
    came from, and whether it is safe to rewrite."""

    path: str
    title: str
    trust: str
    status: str
    origin_uri: str | None
    origin_sha: str | None
    writable: bool


@dataclass_own_init(slots=True)
class CachedNote:
    """One note as the catalog read it: the size and mtime of its file then, what filing
    knows of it, and each claim the similarity index holds for it, as (its words' sketch,
    its shingles' sketch, its text or None; the text is kept for trusted notes only)."""

    size: int
    mtime_ns: int
    info: NoteInfo
    claims: list[tuple[array[int], array[int], str | None]]

    @property
    def path(self) -> str:
        return self.info.path


class CatalogCache:
    """The rows of `.lore/catalog.sqlite3`, read and written a transaction at a time.

    Every call opens the database and closes it again, so nothing stays open across a fork
    or between threads; the caller holds the vault lock."""

    def __init__(self, path: Path, *, writable: bool, reading: str) -> None:
        self.path = path
        self.writable = writable
        self.reading = reading

    @classmethod
    def of_vault(cls, state: Path, *, writable: bool, reading: str) -> CatalogCache:
        return cls(state / CACHE_FILE, writable=writable, reading=reading)

    def read(self, paths: Sequence[str]) -> Iterator[CachedNote | None]:
        """For each of `paths`, in order, its cached note, or None where the cache has
        none (or is missing, damaged or of another version).

        Where `paths` are a quarter of the rows or more (a catalog read whole), `paths`
        must be sorted, as Python sorts strings: the rows are then read in that order a
        chunk at a time, so that no more than a chunk is decoded ahead of the catalog, and
        a write may take place between two chunks."""
        given = 0
        with self._reading() as connection:
            if connection is not None:
                for cached in self._read(connection, paths):
                    given += 1
                    yield cached
        # Where the database could not be read, or failed part way: misses.
        yield from repeat(None, len(paths) - given)

    @staticmethod
    def _read(connection: sqlite3.Connection, paths: Sequence[str]) -> Iterator[CachedNote | None]:
        total = connection.execute("SELECT count(*) FROM notes").fetchone()[0]
        if len(paths) < total * _READ_ALL_SHARE:
            found: dict[str, CachedNote] = {}
            for start in range(0, len(paths), _LOOKUP_BATCH):
                for row in _rows_named(connection, paths[start : start + _LOOKUP_BATCH]):
                    cached = _decoded(row)
                    if cached is not None:
                        found[cached.path] = cached
            yield from map(found.get, paths)
            return
        # Both in the order of their UTF-8 bytes, which is the order of their code points.
        rows = _rows_in_order(connection)
        row = next(rows, None)
        for path in paths:
            while row is not None and row[0] < path:
                row = next(rows, None)
            yield _decoded(row) if row is not None and row[0] == path else None

    def paths(self) -> set[str]:
        """The paths of every note cached (none where the cache cannot be read)."""
        with self._reading() as connection:
            if connection is None:
                return set()
            return {path for (path,) in connection.execute("SELECT path FROM notes")}
        return set()

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection | None]:
        """The database opened read-only, or None where it is missing, not a regular file,
        damaged or of another version. An SQLite error while reading it ends the block."""
        if not self._is_regular():
            yield None
            return
        try:
            connection = sqlite3.connect(f"{self.path.as_uri()}?mode=ro", uri=True, timeout=0)
        except sqlite3.Error:
            yield None
            return
        try:
            yield connection if _current(connection, self.reading) else None
        except (sqlite3.Error, ValueError, TypeError):
            pass
        finally:
            connection.close()

    def write(self, notes: Iterable[CachedNote], gone: Iterable[str]) -> None:
        """Keep `notes` (replacing their rows) and drop the rows of the paths `gone`, in one
        transaction; nothing when the cache cannot be written (it is read again next time).
        A damaged file (not a database, or one cut short) is replaced by a new one."""
        rows = [_encoded(note) for note in notes]
        dropped = [(path,) for path in gone]
        if not self.writable or not (rows or dropped):
            return
        for _ in range(2):
            if not self._is_regular(missing_ok=True) or not self._made():
                return
            try:
                connection = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S)
            except sqlite3.Error:
                return
            try:
                with connection:
                    if not _current(connection, self.reading):
                        _reset(connection, self.reading)
                    connection.executemany("DELETE FROM notes WHERE path = ?", dropped)
                    connection.executemany(
                        "INSERT OR REPLACE INTO notes (path, size, mtime, info, sketches) "
                        "VALUES (?, ?, ?, ?, ?)",
                        rows,
                    )
                return
            except sqlite3.Error as exc:
                # A busy or full disk leaves the file as it is, read again next time.
                if getattr(exc, "sqlite_errorname", "") not in ("SQLITE_CORRUPT", "SQLITE_NOTADB"):
                    return
            finally:
                connection.close()
            try:
                os.unlink(self.path)
            except OSError:
                return

    def _made(self) -> bool:
        """Whether the cache file exists, made here if missing: readable by its owner only,
        as the notes whose text it holds are (SQLite would make it readable by all)."""
        try:
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            pass
        except OSError:
            return False
        return True

    def _is_regular(self, *, missing_ok: bool = False) -> bool:
        """Whether the cache is a regular file Lore may open (never a link, pipe or device)."""
        try:
            return stat.S_ISREG(os.lstat(self.path).st_mode)
        except FileNotFoundError:
            return missing_ok
        except OSError:
            return False


_COLUMNS = ("path", "size", "mtime", "info", "sketches")
_SELECT = "SELECT path, size, mtime, info, sketches FROM notes"


def _rows_named(connection: sqlite3.Connection, paths: Sequence[str]) -> list[Any]:
    return connection.execute(
        f"{_SELECT} WHERE path IN ({','.join('?' * len(paths))})", list(paths)
    ).fetchall()


def _rows_in_order(connection: sqlite3.Connection) -> Iterator[Any]:
    """Every row by path, a chunk at a time: each chunk's read is over before the next, so
    the database is not held locked while the catalog works on what was read."""
    after = ""
    while True:
        chunk = connection.execute(
            f"{_SELECT} WHERE path > ? ORDER BY path LIMIT ?", (after, _READ_CHUNK)
        ).fetchall()
        yield from chunk
        if len(chunk) < _READ_CHUNK:
            return
        after = chunk[-1][0]


def _current(connection: sqlite3.Connection, reading: str) -> bool:
    """Whether the database holds the notes table of this version, in this byte order, as
    notes are read now."""
    try:
        rows = dict(connection.execute("SELECT key, value FROM meta"))
        columns = [row[1] for row in connection.execute("PRAGMA table_info(notes)")]
    except (sqlite3.Error, ValueError, TypeError, IndexError):
        return False
    return (
        rows.get("version") == CACHE_VERSION
        and rows.get("byteorder") == sys.byteorder
        and rows.get("reading") == reading
        and columns == list(_COLUMNS)
    )


def _reset(connection: sqlite3.Connection, reading: str) -> None:
    connection.execute("DROP TABLE IF EXISTS notes")
    connection.execute("DROP TABLE IF EXISTS meta")
    connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    connection.execute(
        "CREATE TABLE notes (path TEXT PRIMARY KEY, size INTEGER, mtime INTEGER, "
        "info TEXT, sketches BLOB)"
    )
    connection.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?)",
        [("version", CACHE_VERSION), ("byteorder", sys.byteorder), ("reading", reading)],
    )


def _encoded(note: CachedNote) -> tuple[str, int, int, str, bytes]:
    values = array("q")
    counts = []
    for words, shingles, text in note.claims:
        values.extend(words)
        values.extend(shingles)
        counts.append([len(words), len(shingles), text])
    known = note.info
    info = [
        known.title,
        known.trust,
        known.status,
        known.origin_uri,
        known.origin_sha,
        known.writable,
        counts,
    ]
    return (
        note.path,
        note.size,
        note.mtime_ns,
        json.dumps(info, ensure_ascii=False, separators=(",", ":")),
        values.tobytes(),
    )


# The type of each field of a row's info: title, trust, status, origin's URI and digest,
# whether the note may be rewritten, and its claims.
_INFO_TYPES: tuple[type | tuple[type, ...], ...] = (
    str,
    str,
    str,
    (str, type(None)),
    (str, type(None)),
    bool,
    list,
)


def _decoded(row: Any) -> CachedNote | None:
    """A row as a note, or None for one that is not what `_encoded` writes."""
    try:
        path, size, mtime, info_text, data = row
        info = json.loads(info_text)
        if (
            not isinstance(path, str)
            or type(size) is not int
            or type(mtime) is not int
            or not isinstance(data, bytes)
            or not isinstance(info, list)
            or len(info) != len(_INFO_TYPES)
            or not all(isinstance(v, kind) for v, kind in zip(info, _INFO_TYPES, strict=True))
            or len(data) % 8
        ):
            return None
        values = array("q")
        values.frombytes(data)
        claims: list[tuple[array[int], array[int], str | None]] = []
        at = 0
        for counts in info[6]:
            words, shingles, text = counts
            if type(words) is not int or type(shingles) is not int or words < 0 or shingles < 0:
                return None
            if text is not None and not isinstance(text, str):
                return None
            middle, end = at + words, at + words + shingles
            claims.append((values[at:middle], values[middle:end], text))
            at = end
        if at != len(values):
            return None
    except (ValueError, TypeError, RecursionError):
        return None
    return CachedNote(size, mtime, NoteInfo(path, *info[:6]), claims)
