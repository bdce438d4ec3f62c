"""One commit per operation: what a Lore operation wrote, committed under the vault lock.

An operation (an ingest, a promotion, a note created...) begins under the vault lock by
looking at what is already uncommitted: changes left by an operation that was killed before
its commit are committed first as "recovered", and edits made outside Lore as "external
edits", so the history has no gaps. It then notes what is still uncommitted (another
process's ingest between two of its batches, or a person's own work in their repository),
does its atomic writes, and commits whatever changed since, in one commit that names the
operation, the actor and what changed.

A journal in `.lore/operations/` says which operations are under way. One left behind by a
process that died is how the next operation knows to say "recovered".
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import threading
from collections.abc import Iterable, Iterator
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.core.dataclass_lite import dataclass_own_init
from lore.core.json_decode import decode_json
from lore.core.notes import utc_now
from lore.core.random_ids import random_hex
from lore.core.storage import atomic_write_json, atomic_write_text
from lore.core.versioning.git import (
    GitFailed,
    Repository,
    create_repository,
    first_line,
    in_work_tree,
    open_repository,
)
from lore.errors import VaultError

if TYPE_CHECKING:
    from lore.core.vault import Vault
    from lore.core.versioning.catalog import VersionCatalog

# Never versioned. The logs are appended to and never edited: each is its own history (the
# audit log names the commit of every operation), and a copy of each in every commit would
# make the repository grow with every question asked. `.*.tmp` are unfinished atomic writes.
UNVERSIONED = ("history.jsonl", "metrics.jsonl", "audit.jsonl")
GITIGNORE = (
    "# Not versioned: logs that are appended to and never edited, each its own history,\n"
    "# and files Lore is still writing.\n"
    + "".join(f"/{name}\n" for name in UNVERSIONED)
    + ".*.tmp\n"
    "# Editors' and the system's own files, never notes.\n"
    ".*.sw?\n"
    "*~\n"
    ".DS_Store\n"
    "# Derived state: Lore rebuilds it whenever it is missing.\n"
    ".lore/\n"
)
# What Lore writes, in a repository of the person's own: nothing else there is committed.
LORE_PATHS = ("notes", "memory", "quarantine", "raw", "trash", "trust_rules.yaml")
_UNFINISHED = ":(exclude,glob)**/.*.tmp"
OWNED_SCOPE = (".", ":(exclude).lore", *(f":(exclude){name}" for name in UNVERSIONED), _UNFINISHED)
USER_SCOPE = (*LORE_PATHS, _UNFINISHED)

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
MAX_LISTED = 40
MAX_SUBJECT_CHARS = 100

# (inode, size, mtime, ctime): any atomic write, edit or removal changes it.
Signature = tuple[int, int, int, int] | None
_ABSENT = object()

# Operations under way in this process, by id: a journal naming one of them is not stale.
_LIVE: set[str] = set()
_LIVE_GUARD = threading.Lock()


@dataclass_own_init
class Operation:
    """One operation that writes: what it is called, who asked for it, what it changed."""

    name: str
    actor: str
    summary: str = ""
    details: list[str] = field(default_factory=list)
    id: str = field(default_factory=lambda: random_hex(6))
    # True when the operation lets go of the vault lock between its steps (an ingest).
    spans: bool = False
    # The commit it made, once made; None while under way, or when nothing was committed.
    commit: str | None = None
    started: str = field(default_factory=utc_now)
    snapshot: dict[str, Signature] = field(default_factory=dict)
    recording: bool = False
    # Notes it renamed, (old path, new path): git alone would take a rename for a removal,
    # since the old text's exact copy goes to trash/.
    renamed: list[tuple[str, str]] = field(default_factory=list)
    journaled_summary: str | None = None
    # Left uncommitted before it began, committed ahead of its own commit: files written by
    # operations that died first (their journals, finished or not), and edits made outside.
    interrupted: list[dict[str, Any]] = field(default_factory=list)
    finished: list[dict[str, Any]] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)

    def describe(self, summary: str | None = None, details: Iterable[str] = ()) -> None:
        """Set what the commit message says the operation did."""
        if summary is not None:
            self.summary = summary
        self.details.extend(details)

    def message(self, failure: str | None = None) -> str:
        notes = list(self.details)
        if failure:
            notes.insert(0, f"It stopped before it finished ({failure}).")
        return commit_message(
            self.name, self.summary, self.actor, [self.id], notes, renamed=self.renamed
        )


def _one_line(text: str) -> str:
    return " ".join(text.split())


def commit_message(
    operation: str,
    summary: str,
    actor: str,
    ids: list[str],
    details: list[str],
    *,
    renamed: Iterable[tuple[str, str]] = (),
) -> str:
    subject = _one_line(f"{operation}: {summary}" if summary else operation)
    if len(subject) > MAX_SUBJECT_CHARS:
        subject = subject[: MAX_SUBJECT_CHARS - 3].rstrip() + "..."
    lines = [_one_line(detail) for detail in details if detail.strip()]
    if len(lines) > MAX_LISTED:
        lines = [*lines[:MAX_LISTED], f"... and {len(lines) - MAX_LISTED} more"]
    trailers = [f"Lore-Operation: {_one_line(operation)}", f"Lore-Actor: {_one_line(actor)}"]
    trailers += [f"Lore-Id: {one}" for one in ids]
    trailers += [f"Lore-Renamed: {old} -> {new}" for old, new in renamed if old != new]
    parts = [subject]
    if lines:
        parts.append("\n".join(lines))
    parts.append("\n".join(trailers))
    # A title may hold any character; a commit message cannot hold NUL or escapes.
    return _CONTROL.sub("", "\n\n".join(parts) + "\n")


def _signature(path: Path) -> Signature:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _process_stamp(pid: int) -> str | None:
    """Something that tells this process from a later one given the same pid; None if gone."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
        return data.rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return "running"


# -- the repository --------------------------------------------------------------------------


def scope(repo: Repository) -> tuple[str, ...]:
    return OWNED_SCOPE if repo.owned else USER_SCOPE


def uncommitted(repo: Repository, root: Path) -> dict[str, Signature]:
    """Every uncommitted file Lore may commit, by vault-relative path, with its signature."""
    done = repo.git.run(
        [
            "status",
            "--porcelain=v1",
            "-z",
            "--no-renames",
            "--untracked-files=all",
            "--ignore-submodules=all",
            "--",
            *scope(repo),
        ]
    )
    found: dict[str, Signature] = {}
    for entry in done.stdout.split(b"\x00"):
        if len(entry) < 4:
            continue
        path = os.fsdecode(entry[3:])
        if repo.prefix:
            if not path.startswith(repo.prefix):
                continue
            path = path[len(repo.prefix) :]
        found[path] = _signature(root / path)
    return found


def commit(repo: Repository, paths: list[str], message: str, *, only: bool = True) -> bool:
    """Commit `paths` as they are on disk now, and nothing else; False if none changed.

    With `only`, whatever else is staged in the index (a person's own work) stays staged
    and out of the commit. Without it the whole index is committed, which is quicker for
    thousands of paths: for when nothing else can be staged.
    """
    if not paths:
        return False
    listed = b"\x00".join(os.fsencode(path) for path in paths)
    git = repo.git
    _store_blobs_ahead(repo, paths)
    # update-index, unlike add, takes a path that is gone from both disk and index as done.
    git.run(["update-index", "--add", "--remove", "-z", "--stdin"], input=listed)
    arguments = ["--literal-pathspecs", "commit", "--quiet", "--no-verify", "-m", message]
    if only:
        arguments += ["--only", "--pathspec-from-file=-", "--pathspec-file-nul"]
    done = git.run(arguments, input=listed if only else None, accept=(0, 1))
    if done.returncode == 0:
        return True
    said = (done.stdout + done.stderr).decode("utf-8", errors="replace")
    if "nothing to commit" in said or "nothing added to commit" in said or "no changes" in said:
        return False
    raise GitFailed(f"git commit: {first_line(done.stderr) or first_line(done.stdout)}")


# Files to commit of at least this many bytes in all have their blobs written ahead.
BLOBS_AHEAD_BYTES = 4 << 20


def _store_blobs_ahead(repo: Repository, paths: list[str]) -> None:
    """Write the blobs of the files about to be committed in two `git hash-object`
    processes at once, when they hold megabytes and a second core is there to take half.

    Compressing blobs is most of a large commit's time (the 15 MB a compaction of 100,000
    turns seals: 0.28 s), and `update-index` does it on one core; finding a blob already
    stored, it only hashes the file. Nothing depends on this: a blob not written here is
    written by `update-index`, and one written for nothing is an unused object `git gc`
    removes."""
    if len(os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else ()) < 2:
        return
    files: list[tuple[int, str]] = []
    for path in paths:
        if "\n" in path or "\r" in path or path.startswith('"'):
            continue  # --stdin-paths reads a line a path, and unquotes one in quotes
        try:
            info = os.lstat(repo.git.cwd / path)
        except OSError:
            continue  # removed: nothing to store
        if stat.S_ISREG(info.st_mode):
            files.append((info.st_size, path))
    if sum(size for size, _ in files) < BLOBS_AHEAD_BYTES:
        return
    # The largest first, each to the process with less to do so far.
    groups: tuple[list[str], list[str]] = ([], [])
    loads = [0, 0]
    for size, path in sorted(files, reverse=True):
        lighter = 0 if loads[0] <= loads[1] else 1
        groups[lighter].append(path)
        loads[lighter] += size
    store = ["hash-object", "-w", "--stdin-paths"]
    repo.git.run_together(
        [
            (store, b"".join(os.fsencode(path) + b"\n" for path in group))
            for group in groups
            if group
        ]
    )


def ensure_gitignore(root: Path) -> None:
    """A .gitignore that keeps Lore's logs and derived state out of the repository."""
    path = root / ".gitignore"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        atomic_write_text(path, GITIGNORE)
        return
    except (OSError, UnicodeDecodeError):
        return
    present = {line.strip() for line in text.splitlines()}
    wanted = [line for line in GITIGNORE.splitlines() if line and not line.startswith("#")]
    missing = [line for line in wanted if line not in present]
    if missing:
        joined = "\n".join(["# Added by Lore: not versioned.", *missing]) + "\n"
        atomic_write_text(path, text + ("" if text.endswith("\n") or not text else "\n") + joined)


def start_versioning(root: Path, name: str) -> None:
    """Make a vault that is in no git repository a repository of its own, and commit it.

    A vault inside a repository already (Lore's, or the person's own) is left as it is;
    without git installed nothing happens (`describe_versioning` says so).
    """
    from lore.core.lock import VaultLock
    from lore.core.vault import VaultLayout

    if in_work_tree(root):
        return
    repo = create_repository(root)
    if repo is None:
        return
    ensure_gitignore(root)
    with VaultLock(VaultLayout(root).lock).hold():
        commit(repo, sorted(uncommitted(repo, root)), commit_message("init", name, "user", [], []))


# -- operations ------------------------------------------------------------------------------


class VaultVersions:
    """The versioning of one vault: its repository, its operations, its catalog."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self._local = threading.local()
        self._guard = threading.Lock()
        self._looked = False
        self._repository: Repository | None = None
        # Why the vault is not versioned, when there is a reason worth saying.
        self.unversioned_reason: str | None = None
        self._catalog: VersionCatalog | None = None
        self._warned: set[str] = set()

    # -- state ---------------------------------------------------------------------------

    def repository(self) -> Repository | None:
        with self._guard:
            if not self._looked:
                try:
                    self._repository, self.unversioned_reason = open_repository(self.vault.root)
                except VaultError as exc:
                    self._repository, self.unversioned_reason = None, str(exc)
                self._looked = True
            return self._repository

    def forget(self) -> None:
        """Look for the repository again (after `lore init` made one)."""
        with self._guard:
            self._looked = False

    def committing(self, repo: Repository) -> bool:
        """Whether operations commit: in Lore's own repository unless turned off, and in a
        person's repository only when they asked for it."""
        wanted = self.vault.config.versioning.auto_commit
        return repo.owned if wanted is None else wanted

    def catalog(self) -> VersionCatalog:
        with self._guard:
            if self._catalog is None:
                from lore.core.versioning.catalog import VersionCatalog

                self._catalog = VersionCatalog(self.vault.layout.state / "versions.sqlite3")
            return self._catalog

    def close(self) -> None:
        with self._guard:
            if self._catalog is not None:
                self._catalog.close()
                self._catalog = None

    def _stack(self) -> list[Operation]:
        stack: list[Operation] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def current(self) -> Operation | None:
        """The operation this thread is inside, if any."""
        stack = self._stack()
        return stack[0] if stack else None

    @contextlib.contextmanager
    def acting_as(self, actor: str) -> Iterator[None]:
        """Operations this thread begins meanwhile name `actor`, unless they name another:
        how a session tells the vault who it acts for."""
        before = getattr(self._local, "actor", None)
        self._local.actor = actor
        try:
            yield
        finally:
            self._local.actor = before

    def acting(self) -> str | None:
        """Whom this thread acts for (see `acting_as`), or None."""
        actor: str | None = getattr(self._local, "actor", None)
        return actor

    def _warn(self, problem: str) -> None:
        if problem not in self._warned:
            self._warned.add(problem)
            self.vault.warnings.append(f"versions: {problem}")

    # -- the context manager -------------------------------------------------------------

    @contextlib.contextmanager
    def operation(
        self,
        name: str,
        *,
        actor: str,
        summary: str = "",
        hold_lock: bool = True,
        adopt: Iterable[str] = (),
    ) -> Iterator[Operation]:
        """Run one operation that writes, and commit what it wrote.

        With `hold_lock` the vault lock is held throughout; without it, only while the
        operation begins and while it commits, and the operation takes the lock for each of
        its writes itself. `adopt` names files already changed that are this operation's
        (a note saved by the person's editor before Lore was told). An operation begun
        inside another folds into it: the outer one commits both.
        """
        stack = self._stack()
        if stack:
            outer = stack[0]
            stack.append(outer)
            try:
                with self.vault.lock() if hold_lock else contextlib.nullcontext():
                    yield outer
                if summary and name != outer.name:
                    outer.details.append(f"{name}: {summary}")
            finally:
                stack.pop()
            return
        op = Operation(name, actor, summary, spans=not hold_lock)
        adopted = set(adopt)
        stack.append(op)
        try:
            if hold_lock:
                with self.vault.lock():
                    self._begin(op, adopted)
                    with self._finishing(op):
                        yield op
            else:
                with self.vault.lock():
                    self._begin(op, adopted)
                with self._finishing(op, take_lock=True):
                    yield op
        finally:
            stack.pop()
            with _LIVE_GUARD:
                _LIVE.discard(op.id)

    @contextlib.contextmanager
    def _finishing(self, op: Operation, take_lock: bool = False) -> Iterator[None]:
        failure: str | None = None
        try:
            yield
        except BaseException as exc:
            failure = _describe_failure(exc)
            raise
        finally:
            if op.recording:
                try:
                    with self.vault.lock() if take_lock else contextlib.nullcontext():
                        self._finish(op, failure)
                except VaultError as exc:
                    self._warn(f"{exc}; the changes are saved and will be committed later")

    def _begin(self, op: Operation, adopted: set[str]) -> None:
        repo = self.repository()
        if repo is None:
            if self.unversioned_reason:
                self._warn(self.unversioned_reason)
            return
        if not self.committing(repo):
            return
        try:
            dirty = uncommitted(repo, self.vault.root)
            op.snapshot = {path: sig for path, sig in dirty.items() if path not in adopted}
            journals = self._journals()
            # While another operation is between two of its steps, what is uncommitted may
            # be its unfinished work: nothing is taken as recovered or external then.
            if not any(_is_live(journal) for journal in journals):
                if journals:
                    self._find_interrupted(repo, op, journals)
                if repo.owned:
                    op.external = sorted(set(op.snapshot) - set(op.recovered))
            with _LIVE_GUARD:
                _LIVE.add(op.id)
            self._write_journal(op)
            op.recording = True
        except VaultError as exc:
            self._warn(f"{exc}; this change will be committed later")

    def _find_interrupted(
        self, repo: Repository, op: Operation, journals: list[dict[str, Any]]
    ) -> None:
        """Which uncommitted files operations that died before their commit wrote."""
        catalog = self.catalog()
        catalog.sync(repo)
        for journal in journals:
            if catalog.commit_for_operation(str(journal.get("id", ""))) is None:
                op.interrupted.append(journal)
            else:
                op.finished.append(journal)
        recovered: set[str] = set()
        for journal in op.interrupted:
            before = journal.get("snapshot") or {}
            for path, sig in op.snapshot.items():
                was = before.get(path, _ABSENT)
                if was is _ABSENT or _as_signature(was) != sig:
                    recovered.add(path)
        op.recovered = sorted(recovered)

    def _finish(self, op: Operation, failure: str | None) -> None:
        """Commit what the operation wrote; first, in commits of their own, what others
        left uncommitted before it began, as it was then. What operations that died wrote
        is committed even when this one wrote nothing; edits made outside Lore wait for an
        operation that writes."""
        repo = self._repository
        assert repo is not None
        dirty = uncommitted(repo, self.vault.root)
        mine = sorted(path for path, sig in dirty.items() if op.snapshot.get(path, _ABSENT) != sig)
        if mine and op.summary != op.journaled_summary:
            # Said once the work was done: a crash in the commit still names it.
            self._write_journal(op)
        # Files the operation itself changed since go into its own commit.
        as_left = {path for path in dirty if path not in mine}
        for journal in op.finished:
            self._drop_journal(str(journal.get("id", "")))
        if op.interrupted:
            recovered = [path for path in op.recovered if path in as_left]
            self._commit_recovered(repo, op.interrupted, recovered)
        if mine:
            external = [path for path in op.external if path in as_left]
            if external:
                self._commit_external(repo, external)
            message = op.message(failure)
            # Lore's own repository holds nothing staged but what Lore stages for a commit.
            if commit(repo, mine, message, only=not repo.owned):
                op.commit = self._committed(repo, [op.id], op.actor, message)
        self._drop_journal(op.id)

    # -- what was left uncommitted ---------------------------------------------------------

    def _commit_recovered(
        self, repo: Repository, interrupted: list[dict[str, Any]], paths: list[str]
    ) -> None:
        """Commit what operations that died before their commit wrote."""
        ids = [str(journal.get("id", "")) for journal in interrupted]
        first = interrupted[0]
        if len(interrupted) == 1:
            summary = _one_line(f"{first.get('name', '')}: {first.get('summary', '')}")
            summary = summary.rstrip(": ")
        else:
            summary = f"{len(interrupted)} operations"
        details = [
            "Written by an operation that stopped before it could commit:",
            *(
                f"{journal.get('name', '')} by {journal.get('actor', '')}, "
                f"started {journal.get('started', '')}"
                + (f": {journal.get('summary')}" if journal.get("summary") else "")
                for journal in interrupted
            ),
        ]
        actor = str(first.get("actor") or "lore")
        message = commit_message("recovered", summary, actor, ids, details)
        if commit(repo, paths, message, only=not repo.owned):
            self._committed(repo, ids, actor, message)
        for one in ids:
            self._drop_journal(one)

    def _commit_external(self, repo: Repository, paths: list[str]) -> None:
        noun = "file" if len(paths) == 1 else "files"
        summary = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        message = commit_message(
            "external edits",
            f"{len(paths)} {noun} changed outside Lore: {summary}",
            "external",
            [],
            paths,
        )
        if commit(repo, paths, message, only=not repo.owned):
            self._committed(repo, [], "external", message)

    def _committed(self, repo: Repository, ids: list[str], actor: str, message: str) -> str:
        """After a commit: the catalog learns of it, the audit log records its id."""
        from lore.core.audit import COMMIT_GATE, AuditEntry, AuditLog

        head = repo.git.output(["rev-parse", "HEAD"])
        try:
            self.catalog().sync(repo, head)
        except VaultError as exc:  # derived state: it is rebuilt when next read
            self._warn(f"the version catalog could not be updated ({exc})")
        if ids:
            subject = message.split("\n", 1)[0]
            AuditLog(self.vault).append_many(
                [
                    AuditEntry(
                        "",
                        "",
                        COMMIT_GATE,
                        "committed",
                        [subject],
                        actor,
                        operation=one,
                        commit=head,
                    )
                    for one in ids
                ]
            )
        return head

    # -- journals --------------------------------------------------------------------------

    @property
    def _journal_folder(self) -> Path:
        return self.vault.layout.state / "operations"

    def _write_journal(self, op: Operation) -> None:
        record = {
            "id": op.id,
            "name": op.name,
            "actor": op.actor,
            "summary": op.summary,
            "started": op.started,
            "pid": os.getpid(),
            "process": _process_stamp(os.getpid()),
            "spans": op.spans,
            "snapshot": {path: list(sig) if sig else None for path, sig in op.snapshot.items()},
        }
        # Without its journal an operation still commits; only a crash before that would
        # be called "external edits" instead of "recovered".
        with contextlib.suppress(VaultError, OSError):
            atomic_write_json(self._journal_folder / f"{op.id}.json", record)
            op.journaled_summary = op.summary

    def _journals(self) -> list[dict[str, Any]]:
        found = []
        try:
            entries = sorted(self._journal_folder.glob("*.json"))
        except OSError:
            return []
        for path in entries:
            try:
                record = decode_json(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(record, dict):
                found.append(record)
        return found

    def _drop_journal(self, op_id: str) -> None:
        if op_id:
            with contextlib.suppress(OSError):
                (self._journal_folder / f"{op_id}.json").unlink()


def _as_signature(value: object) -> Signature:
    if isinstance(value, list) and len(value) == 4:
        return (int(value[0]), int(value[1]), int(value[2]), int(value[3]))
    return None


def _is_live(journal: dict[str, Any]) -> bool:
    """Whether the operation a journal names is still under way. The caller holds the lock."""
    pid = journal.get("pid")
    if not isinstance(pid, int):
        return False
    if pid == os.getpid() and journal.get("process") == _process_stamp(pid):
        with _LIVE_GUARD:
            return journal.get("id") in _LIVE
    if not journal.get("spans"):
        # It held the lock throughout, and the lock is ours now: it is not running.
        return False
    stamp = _process_stamp(pid)
    return stamp is not None and stamp == journal.get("process")


def _describe_failure(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
