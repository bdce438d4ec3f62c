"""The version catalog: which commit changed which file, kept in `.lore/versions.sqlite3`.

`git log -- PATH` compares the trees of every commit; on a vault with ten thousand commits
that takes seconds. The catalog answers "every version of this note" with one indexed query.
It is derived state: built from `git log` when missing, and brought up to date with the
commits made since it was last used (Lore's own, and any made with git directly).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from lore.core.dataclass_lite import dataclass_own_init
from lore.core.versioning.git import Repository
from lore.errors import VaultError

CATALOG_VERSION = "2"

# One record per commit: a record separator, then fields split by unit separators; with -z
# the changed files follow as NUL-separated status and paths.
_FIELDS = (
    "%H",
    "%P",
    "%ct",
    "%an",
    "%(trailers:key=Lore-Operation,valueonly,separator=%x2C)",
    "%(trailers:key=Lore-Actor,valueonly,separator=%x2C)",
    "%(trailers:key=Lore-Id,valueonly,separator=%x2C)",
    "%(trailers:key=Lore-Renamed,valueonly,separator=%x1D)",
    "%s",
)
# A note's tombstone in trash/ is an exact copy, so git takes a removal or a rename for a
# move into trash/. It is a removal; the renames Lore made are named in the message.
TRASH = "trash/"
LOG_FORMAT = "%x1e" + "%x1f".join(_FIELDS)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS commits (
    seq INTEGER PRIMARY KEY,
    sha TEXT NOT NULL UNIQUE,
    time INTEGER NOT NULL,
    author TEXT NOT NULL,
    operation TEXT NOT NULL,
    actor TEXT NOT NULL,
    operation_id TEXT NOT NULL,
    subject TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER NOT NULL,
    status TEXT NOT NULL,
    path TEXT NOT NULL,
    old_path TEXT
);
CREATE INDEX IF NOT EXISTS changes_by_path ON changes (path, seq);
"""


@dataclass_own_init(frozen=True)
class CommitInfo:
    """One commit as the catalog keeps it: its sequence number, sha, time and author, and the
    Lore operation it records."""

    seq: int
    sha: str
    time: int
    author: str
    # Empty for a commit Lore did not make (one made with git directly).
    operation: str
    actor: str
    operation_id: str
    subject: str


@dataclass_own_init(frozen=True)
class FileChange:
    """One file a commit changed, and how."""

    commit: CommitInfo
    # "A" added, "M" modified, "D" deleted, "R" renamed from old_path, "T" type changed.
    status: str
    path: str
    old_path: str | None = None


class VersionCatalog:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._guard = threading.Lock()
        self._db = self._connect()

    def _connect(self) -> sqlite3.Connection:
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                return self._prepare(
                    sqlite3.connect(self.path, timeout=30, check_same_thread=False)
                )
            except (OSError, sqlite3.Error):
                # Damaged or on a disk that takes no writes: rebuild, or keep it in memory.
                with contextlib.suppress(OSError):
                    self.path.unlink()
                try:
                    return self._prepare(
                        sqlite3.connect(self.path, timeout=30, check_same_thread=False)
                    )
                except (OSError, sqlite3.Error):
                    self.path = None
        return self._prepare(sqlite3.connect(":memory:", check_same_thread=False))

    @staticmethod
    def _prepare(db: sqlite3.Connection) -> sqlite3.Connection:
        db.isolation_level = None
        # Derived state: a crash may lose the last update, which the next sync redoes.
        db.execute("PRAGMA synchronous=OFF")
        db.executescript(_SCHEMA)
        row = db.execute("SELECT value FROM meta WHERE key='version'").fetchone()
        if row is None or row[0] != CATALOG_VERSION:
            db.executescript("DELETE FROM commits; DELETE FROM changes; DELETE FROM meta;")
            db.execute("INSERT INTO meta VALUES ('version', ?)", (CATALOG_VERSION,))
        return db

    def close(self) -> None:
        with self._guard:
            self._db.close()

    # -- keeping up with the repository ----------------------------------------------------

    def sync(self, repo: Repository, head: str | None = None) -> None:
        """Record every commit up to `head` (HEAD when not given) that is not recorded yet."""
        if head is None:
            done = repo.git.run(["rev-parse", "--verify", "--quiet", "HEAD"], accept=(0, 1))
            head = done.stdout.decode().strip() or None
        try:
            self._sync(repo, head)
        except sqlite3.Error as exc:
            raise VaultError(f"the version catalog {self.path} cannot be updated ({exc})") from None

    def _sync(self, repo: Repository, head: str | None) -> None:
        with self._guard:
            if self._known_head() == head:
                return
            with self._transaction():
                known = self._known_head()
                if known == head:
                    return
                if head is None:
                    self._clear()
                    return
                if known is None or not self._extend(repo, known, head):
                    self._clear()
                    self._record(repo, [head])
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('head', ?)", (head,))

    def _known_head(self) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key='head'").fetchone()
        return str(row[0]) if row else None

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _clear(self) -> None:
        self._db.execute("DELETE FROM commits")
        self._db.execute("DELETE FROM changes")
        self._db.execute("DELETE FROM meta WHERE key='head'")

    def _extend(self, repo: Repository, known: str, head: str) -> bool:
        """Record the commits after `known`; False when history was rewritten past it."""
        return self._record(repo, [f"{known}..{head}"], follows=known)

    def _record(self, repo: Repository, revisions: list[str], follows: str | None = None) -> bool:
        done = repo.git.run(
            [
                "log",
                "--reverse",
                "--first-parent",
                "--diff-merges=first-parent",
                "-M",
                "--name-status",
                "-z",
                "--relative",
                f"--format={LOG_FORMAT}",
                *revisions,
                "--",
                ".",
            ],
            accept=(0, 128),
        )
        if done.returncode != 0:
            return False
        records = done.stdout.split(b"\x1e")[1:]
        if follows is not None:
            parents = records[0].split(b"\x1f", 2)[1].split() if records else []
            # The usual case, a commit on top of the last one recorded, needs no more asking;
            # otherwise commits outside the vault came between, or history was rewritten.
            if not parents or parents[0].decode() != follows:
                ancestry = repo.git.run(
                    ["merge-base", "--is-ancestor", follows, revisions[0].split("..")[1]],
                    accept=(0, 1, 128),
                )
                if ancestry.returncode != 0:
                    return False
        for record in records:
            self._insert(record)
        return True

    def _insert(self, record: bytes) -> None:
        header, _, body = record.partition(b"\x00")
        fields = [field.decode("utf-8", errors="replace") for field in header.split(b"\x1f")]
        fields += [""] * (len(_FIELDS) - len(fields))
        sha, _parents, time, author, operation, actor, operation_id, renamed, subject = fields[:9]
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO commits "
            "(sha, time, author, operation, actor, operation_id, subject) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                sha,
                int(time or 0),
                author,
                operation.strip(),
                actor.strip(),
                operation_id.strip(),
                subject,
            ),
        )
        if not cursor.rowcount:
            return
        seq = cursor.lastrowid
        rows: list[tuple[int | None, str, str, str | None]] = []
        tokens = [token.decode("utf-8", errors="replace") for token in body.split(b"\x00")]
        position = 0
        while position < len(tokens):
            status = tokens[position].strip()
            position += 1
            if not status:
                continue
            kind = status[0]
            if kind in "RC" and position + 1 < len(tokens):
                old, new = tokens[position], tokens[position + 1]
                position += 2
                if kind == "R" and not (new.startswith(TRASH) or old.startswith(TRASH)):
                    rows.append((seq, "R", new, old))
                else:
                    if kind == "R":
                        rows.append((seq, "D", old, None))
                    rows.append((seq, "A", new, None))
            elif position < len(tokens):
                rows.append((seq, kind, tokens[position], None))
                position += 1
        for pair in renamed.split("\x1d"):
            old, arrow, new = pair.strip().partition(" -> ")
            if not arrow:
                continue
            rows = [row for row in rows if not (row[2] == new and row[1] in "AR")]
            rows.append((seq, "R", new, old))
        self._db.executemany("INSERT INTO changes VALUES (?, ?, ?, ?)", rows)

    # -- questions -------------------------------------------------------------------------

    def changes_to(self, path: str, before_seq: int | None = None) -> list[FileChange]:
        """Every recorded change to `path`, newest first, older than `before_seq` if given."""
        query = (
            "SELECT c.seq, c.sha, c.time, c.author, c.operation, c.actor, c.operation_id, "
            "c.subject, ch.status, ch.path, ch.old_path "
            "FROM changes ch JOIN commits c ON c.seq = ch.seq WHERE ch.path = ?"
        )
        parameters: list[object] = [path]
        if before_seq is not None:
            query += " AND c.seq < ?"
            parameters.append(before_seq)
        with self._guard:
            rows = self._db.execute(query + " ORDER BY c.seq DESC", parameters).fetchall()
        return [
            FileChange(CommitInfo(*row[:8]), status=row[8], path=row[9], old_path=row[10])
            for row in rows
        ]

    def removed(self, folder: str) -> list[FileChange]:
        """Deletions of files under `folder`, newest first (to find a note that was removed)."""
        with self._guard:
            rows = self._db.execute(
                "SELECT c.seq, c.sha, c.time, c.author, c.operation, c.actor, c.operation_id, "
                "c.subject, ch.status, ch.path, ch.old_path "
                "FROM changes ch JOIN commits c ON c.seq = ch.seq "
                "WHERE ch.status = 'D' AND ch.path LIKE ? ESCAPE '\\' ORDER BY c.seq DESC",
                (_like_prefix(folder),),
            ).fetchall()
        return [
            FileChange(CommitInfo(*row[:8]), status=row[8], path=row[9], old_path=row[10])
            for row in rows
        ]

    def commit(self, sha: str) -> CommitInfo | None:
        with self._guard:
            row = self._db.execute(
                "SELECT seq, sha, time, author, operation, actor, operation_id, subject "
                "FROM commits WHERE sha = ?",
                (sha,),
            ).fetchone()
        return CommitInfo(*row) if row else None

    def commit_for_operation(self, operation_id: str) -> CommitInfo | None:
        """The commit that carries `operation_id` (an operation may share one, recovered)."""
        with self._guard:
            row = self._db.execute(
                "SELECT seq, sha, time, author, operation, actor, operation_id, subject "
                "FROM commits WHERE instr(',' || operation_id || ',', ?) > 0 "
                "ORDER BY seq DESC LIMIT 1",
                (f",{operation_id},",),
            ).fetchone()
        return CommitInfo(*row) if row else None

    def recent(self, limit: int) -> list[CommitInfo]:
        with self._guard:
            rows = self._db.execute(
                "SELECT seq, sha, time, author, operation, actor, operation_id, subject "
                "FROM commits ORDER BY seq DESC LIMIT ?",
                (limit,),
            ).fetchall()
        return [CommitInfo(*row) for row in rows]

    def changed_paths(self, seq: int) -> list[FileChange]:
        with self._guard:
            rows = self._db.execute(
                "SELECT status, path, old_path FROM changes WHERE seq = ? ORDER BY path", (seq,)
            ).fetchall()
        info = self._commit_by_seq(seq)
        return [FileChange(info, status=row[0], path=row[1], old_path=row[2]) for row in rows]

    def _commit_by_seq(self, seq: int) -> CommitInfo:
        with self._guard:
            row = self._db.execute(
                "SELECT seq, sha, time, author, operation, actor, operation_id, subject "
                "FROM commits WHERE seq = ?",
                (seq,),
            ).fetchone()
        return CommitInfo(*row)


def _like_prefix(folder: str) -> str:
    escaped = folder.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.rstrip("/") + "/%"
