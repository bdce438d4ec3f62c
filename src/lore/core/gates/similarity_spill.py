"""Claims the similarity index moved out of memory, in a scratch database of its own.

An ingest of a large corpus files hundreds of thousands of claims, and each kept in memory
costs about 340 bytes: memory would grow with every document. Past a budget the index moves
its oldest claims here, sketches, trusted texts and bucket entries, and keeps of each only its
trust and note (13 bytes), so an ingest of any size holds about the same.

The database is an SQLite file in the vault's state folder, made for one index and unlinked
as soon as it is open: no other process can open it, and it is gone with the process, even
one that crashes. It keeps no journal and never syncs, as nothing in it outlives the process:
so a move that fails part way (a full disk) may leave it inconsistent, and it is not read
again (see `SimilarityIndex._spill`). Bucket
entries are kept by (kind, value, order filed), so a bucket reads back in the order its
claims were filed, as the index's own buckets do.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

_SCHEMA = """
CREATE TABLE claims (
    number INTEGER PRIMARY KEY,
    words BLOB NOT NULL,
    shingles BLOB NOT NULL,
    text TEXT
);
CREATE TABLE buckets (
    kind INTEGER NOT NULL,
    value INTEGER NOT NULL,
    filed INTEGER NOT NULL,
    number INTEGER NOT NULL,
    PRIMARY KEY (kind, value, filed)
) WITHOUT ROWID;
"""

# A spilled claim: its number, sketches, and text (None unless it was trusted when filed).
SpilledClaim = tuple[int, "array[int]", "array[int]", "str | None"]


class SpilledClaims:
    """The claims an index moved out of memory; see the module's docstring."""

    def __init__(self, connection: sqlite3.Connection, folder: Path) -> None:
        self._connection = connection
        self.folder = folder
        self._filed = 0
        # Entries kept of each kind: a kind with none is not looked up at all.
        self._entries = [0, 0]

    @classmethod
    def open(cls, folder: Path) -> SpilledClaims | None:
        """A new, empty store in `folder`; None where none can be made there (a read-only
        vault, a full disk), and the index keeps its claims in memory instead."""
        try:
            handle, name = tempfile.mkstemp(prefix="similarity-", suffix=".scratch", dir=folder)
        except OSError:
            return None
        os.close(handle)
        connection: sqlite3.Connection | None = None
        try:
            # Used by whichever thread runs the ingest, one at a time.
            connection = sqlite3.connect(name, isolation_level=None, check_same_thread=False)
            connection.executescript(
                "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
                "PRAGMA locking_mode = EXCLUSIVE; PRAGMA temp_store = MEMORY;" + _SCHEMA
            )
        except sqlite3.Error:
            if connection is not None:
                connection.close()
            return None
        finally:
            # Open, it stays readable through its handle; unlinked, nothing else can open it.
            with contextlib.suppress(OSError):
                os.unlink(name)
        return cls(connection, folder)

    def has(self, kind: int) -> bool:
        return self._entries[kind] > 0

    def spill(
        self, claims: Iterable[SpilledClaim], entries: Iterable[tuple[int, int, int]]
    ) -> None:
        """Keep `claims`, and the bucket `entries` (kind, value, claim number), each bucket's
        in the order they were filed, after those kept before. Both are read as they are
        written, never held in a list.

        Raises sqlite3.Error (a full disk, say), after which the store may hold part of
        them, or be damaged."""
        start = self._filed
        counted = [0, 0]

        def rows() -> Iterator[tuple[int, int, int, int]]:
            filed = start
            for kind, value, number in entries:
                counted[kind] += 1
                yield kind, value, filed, number
                filed += 1

        connection = self._connection
        connection.execute("BEGIN")
        try:
            connection.executemany(
                "INSERT INTO claims VALUES (?, ?, ?, ?)",
                (
                    (number, words.tobytes(), shingles.tobytes(), text)
                    for number, words, shingles, text in claims
                ),
            )
            connection.executemany("INSERT INTO buckets VALUES (?, ?, ?, ?)", rows())
            connection.execute("COMMIT")
        except BaseException:
            # Without a journal this only ends the transaction: it undoes nothing written.
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
            raise
        self._filed = start + sum(counted)
        self._entries = [had + more for had, more in zip(self._entries, counted, strict=True)]

    def buckets(self, kind: int, values: Sequence[int]) -> dict[int, list[int]]:
        """The claims kept under each of `values` of `kind`, each list in the order filed; a
        value with none is left out."""
        found: dict[int, list[int]] = {}
        if not values or not self._entries[kind]:
            return found
        marks = ", ".join("?" * len(values))
        rows = self._connection.execute(
            f"SELECT value, number FROM buckets WHERE kind = ? AND value IN ({marks}) "
            "ORDER BY value, filed",
            (kind, *values),
        )
        for value, number in rows:
            held = found.get(value)
            if held is None:
                found[value] = [number]
            else:
                held.append(number)
        return found

    def claims(
        self, numbers: Sequence[int]
    ) -> dict[int, tuple[array[int], array[int], str | None]]:
        """The sketches and text of each of the claims `numbers`."""
        if not numbers:
            return {}
        marks = ", ".join("?" * len(numbers))
        rows = self._connection.execute(
            f"SELECT number, words, shingles, text FROM claims WHERE number IN ({marks})",
            tuple(numbers),
        )
        found: dict[int, tuple[array[int], array[int], str | None]] = {}
        for number, words, shingles, text in rows:
            word_values, shingle_values = array("q"), array("q")
            word_values.frombytes(words)
            shingle_values.frombytes(shingles)
            found[number] = (word_values, shingle_values, text)
        return found
