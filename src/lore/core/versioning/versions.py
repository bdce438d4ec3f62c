"""Reading the history: the versions of a note, a note as it was, restoring it, recent operations.

Every face calls these: `lore notes log`, `lore notes show --at`, `lore notes restore`,
`lore log`, and the app's Notes pane. Reads never take the vault lock; a restore is itself
an operation, committed through the lock like any other write.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from lore.core.dataclass_lite import dataclass_own_init
from lore.core.notes import Note, parse_note
from lore.core.slug import slugify, unique_name
from lore.core.storage import atomic_write_bytes
from lore.core.versioning.catalog import CommitInfo, FileChange, VersionCatalog
from lore.core.versioning.git import Repository, find_git
from lore.errors import NoteExists, NoteNotFound, UsageError, VaultError

if TYPE_CHECKING:
    from lore.core.vault import Vault

SHORT_REV = 8
CHANGE_WORDS = {"A": "added", "M": "edited", "T": "edited", "D": "removed", "R": "renamed"}
# How many removed files named like a missing note are opened to find it by its title.
_REMOVED_CANDIDATES = 30


class NotVersioned(VaultError):
    """The vault has no history to read: it is not a git repository, or git is missing."""


class UnknownRevision(UsageError):
    """A revision that names no commit, or one at which the note did not exist."""


@dataclass_own_init(frozen=True)
class LoggedOperation:
    """One commit in the vault's history: an operation Lore made, or a commit made with git."""

    rev: str
    time: str
    operation: str
    actor: str
    summary: str

    @property
    def short(self) -> str:
        return self.rev[:SHORT_REV]

    def to_dict(self) -> dict[str, Any]:
        return {
            "rev": self.rev,
            "time": self.time,
            "operation": self.operation,
            "actor": self.actor,
            "summary": self.summary,
        }


@dataclass_own_init(frozen=True)
class NoteVersion(LoggedOperation):
    """A commit that changed one note, and how: added, edited, renamed, removed."""

    path: str = ""
    change: str = ""
    old_path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "path": self.path, "change": self.change}


@dataclass_own_init(frozen=True)
class NoteAtVersion:
    """A note's file as it was at one version, as bytes, readable as text or as a note."""

    version: NoteVersion
    data: bytes

    @property
    def text(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        return text[1:] if text.startswith("\ufeff") else text

    def note(self) -> Note:
        return parse_note(self.text, self.version.path)


@dataclass_own_init(frozen=True)
class RestoreResult:
    """What restoring a note to a version did: the note now, where the replaced text was kept,
    and the commit."""

    note: Note
    version: NoteVersion
    # Where the replaced text was kept (None when the note had been removed).
    tombstone: Path | None
    # The restore's own commit (None when nothing was committed: see `changed`).
    commit: str | None
    # False when the note was already exactly as it was in that version.
    changed: bool = True


# -- the repository, brought up to date --------------------------------------------------------


def _history(vault: Vault) -> tuple[Repository, VersionCatalog]:
    versions = vault.versions
    repo = versions.repository()
    if repo is None:
        raise NotVersioned(f"this vault is not versioned: {_unversioned_reason(vault)}")
    catalog = versions.catalog()
    catalog.sync(repo)
    return repo, catalog


def _unversioned_reason(vault: Vault) -> str:
    reason = vault.versions.unversioned_reason
    if reason and "git is not installed" in reason:
        return "git is not installed"
    if reason:
        return reason
    if find_git() is None:
        return "git is not installed"
    return f"it is not a git repository (start versioning it with: lore init {vault.root})"


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _logged(info: CommitInfo) -> tuple[str, str, str, str, str]:
    operation = info.operation or "commit"
    summary = info.subject
    if info.operation and summary.startswith(f"{info.operation}: "):
        summary = summary[len(info.operation) + 2 :]
    elif info.operation and summary == info.operation:
        summary = ""
    return info.sha, _iso(info.time), operation, info.actor or info.author, summary


def _version(change: FileChange) -> NoteVersion:
    return NoteVersion(
        *_logged(change.commit),
        path=change.path,
        change=CHANGE_WORDS.get(change.status, change.status),
        old_path=change.old_path,
    )


def recent_operations(vault: Vault, limit: int = 20) -> list[LoggedOperation]:
    """The latest commits to the vault, newest first."""
    if limit <= 0:
        raise UsageError("--limit must be a positive number")
    _, catalog = _history(vault)
    return [LoggedOperation(*_logged(info)) for info in catalog.recent(limit)]


# -- one note --------------------------------------------------------------------------------


def _follow(catalog: VersionCatalog, path: str) -> list[FileChange]:
    """Every change to the note at `path`, newest first, through its renames."""
    found: list[FileChange] = []
    current, before = path, None
    seen = {path}
    while True:
        changes = catalog.changes_to(current, before)
        renamed_from = None
        for change in changes:
            found.append(change)
            if change.status == "R" and change.old_path and change.old_path not in seen:
                renamed_from, before = change.old_path, change.commit.seq
                break
        if renamed_from is None:
            return found
        seen.add(renamed_from)
        current = renamed_from


def _blob(repo: Repository, rev: str, path: str) -> bytes | None:
    done = repo.git.run(["cat-file", "blob", f"{rev}:./{path}"], accept=(0, 128))
    return done.stdout if done.returncode == 0 else None


def _removed_note(repo: Repository, catalog: VersionCatalog, ref: str) -> str | None:
    """The path a removed note had, found by its path, or its title, in the history."""
    ref = ref.strip()
    if ref.endswith((".md", ".markdown")) and catalog.changes_to(ref):
        return ref
    key, stem = ref.casefold(), slugify(ref)
    candidates = [
        change
        for change in catalog.removed("notes")
        if PurePosixPath(change.path).stem.startswith(stem)
    ][:_REMOVED_CANDIDATES]
    for change in candidates:
        data = _blob(repo, f"{change.commit.sha}^", change.path)
        if data is None:
            continue
        note = parse_note(data.decode("utf-8", errors="replace"), change.path)
        if key in {note.title.casefold(), note.id.casefold()}:
            return change.path
    return None


def _by_file_name(vault: Vault, ref: str) -> Note | None:
    """The note named by its path, or by a title its file is named after: found without
    opening the search index, which costs more than the rest of `lore notes log`."""
    ref = ref.strip()
    relpath = ref if ref.endswith((".md", ".markdown")) else f"notes/{slugify(ref)}.md"
    try:
        if not vault.resolve_inside(relpath).is_file():
            return None
    except UsageError:
        return None
    note, _ = vault.load_note(relpath)
    if note is None or (relpath != ref and note.title.casefold() != ref.casefold()):
        return None
    return note


def _locate(vault: Vault, ref: str) -> tuple[Repository, VersionCatalog, str, Note | None]:
    """The repository, catalog, the note's path and the note itself (None once removed)."""
    repo, catalog = _history(vault)
    note = _by_file_name(vault, ref)
    if note is None:
        try:
            note = vault.find(ref)
        except NoteNotFound:
            note = None
    if note is not None:
        return repo, catalog, note.path, note
    path = _removed_note(repo, catalog, ref)
    if path is None:
        raise NoteNotFound(f"no note titled {ref!r}, now or in the vault's history")
    return repo, catalog, path, None


def note_versions(vault: Vault, ref: str, limit: int | None = None) -> list[NoteVersion]:
    """Every version of the note `ref` names (a title, id or path; a removed note too),
    newest first, with the operation and actor that made each."""
    if limit is not None and limit <= 0:
        raise UsageError("--limit must be a positive number")
    _, catalog, path, _ = _locate(vault, ref)
    changes = _follow(catalog, path)
    return [_version(change) for change in changes[:limit]]


def _resolve(repo: Repository, rev: str) -> str:
    rev = rev.strip()
    if not rev or rev.startswith("-"):
        raise UnknownRevision(f"{rev!r} is not a version (see: lore notes log TITLE)")
    done = repo.git.run(
        ["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], accept=(0, 1, 128)
    )
    sha = done.stdout.decode().strip()
    if done.returncode != 0 or not sha:
        raise UnknownRevision(f"no version {rev!r} in this vault (see: lore notes log TITLE)")
    return sha


def note_at(vault: Vault, ref: str, rev: str) -> NoteAtVersion:
    """The note `ref` names as it was in the version `rev` (a commit id from its log)."""
    repo, catalog, path, _ = _locate(vault, ref)
    sha = _resolve(repo, rev)
    changes = _follow(catalog, path)
    info = catalog.commit(sha)
    chosen: FileChange | None = None
    for change in changes:
        if change.commit.sha == sha or (info is not None and change.commit.seq <= info.seq):
            chosen = change
            break
    if chosen is None and info is None:
        # A commit that changed nothing in the vault: the note is as its paths show it.
        for candidate in dict.fromkeys(change.path for change in changes):
            data = _blob(repo, sha, candidate)
            if data is not None:
                return NoteAtVersion(_at_commit(repo, sha, candidate), data)
    if chosen is None:
        raise UnknownRevision(f"{ref!r} did not exist yet in version {rev}")
    if chosen.status == "D":
        raise UnknownRevision(
            f"{ref!r} was removed in version {rev}; choose an earlier one "
            f"(see: lore notes log {ref})"
        )
    data = _blob(repo, sha, chosen.path)
    if data is None:
        raise UnknownRevision(f"{ref!r} cannot be read at version {rev}")
    if chosen.commit.sha == sha:
        return NoteAtVersion(_version(chosen), data)
    # A commit that left the note as an earlier one made it.
    assert info is not None
    return NoteAtVersion(NoteVersion(*_logged(info), path=chosen.path, change="unchanged"), data)


def _at_commit(repo: Repository, sha: str, path: str) -> NoteVersion:
    """A version shown at a commit that did not change the note itself."""
    done = repo.git.run(["log", "-1", "--format=%ct%x1f%an%x1f%s", sha])
    fields = done.stdout.decode("utf-8", errors="replace").strip().split("\x1f")
    time, author, subject = [*fields, "", "", ""][:3]
    return NoteVersion(
        sha, _iso(int(time or 0)), "commit", author, subject, path=path, change="unchanged"
    )


def restore_note(vault: Vault, ref: str, rev: str, *, actor: str | None = None) -> RestoreResult:
    """Bring back the note `ref` names as it was in version `rev`: its exact bytes.

    The text it replaces is kept in trash/ first, as every change that discards text is.
    A removed note comes back where it was (or beside it, if that name is taken now).
    The restore is itself one commit.
    """
    vault.ensure_writable()
    with vault.operation("restore", actor=actor) as op:
        shown = note_at(vault, ref, rev)
        restored = shown.note()
        try:
            current: Note | None = vault.find(ref)
        except NoteNotFound:
            current = None
        tombstone = None
        if current is not None:
            target = current.path
            path = vault.resolve_inside(target)
            try:
                unchanged = path.read_bytes() == shown.data
            except OSError as exc:
                raise VaultError(f"cannot read {target}: {exc.strerror}") from None
        else:
            target = shown.version.path
            folder = vault.resolve_inside(target).parent
            if (folder / PurePosixPath(target).name).exists():
                name = unique_name(PurePosixPath(target).stem, lambda n: (folder / n).exists())
                target = vault.relpath(folder / name)
            unchanged = False
        taken_by = vault.title_taken(restored.title)
        if taken_by and taken_by != target:
            raise NoteExists(
                f"a note titled {restored.title!r} already exists: {taken_by}; "
                "rename it first, then restore"
            )
        if not unchanged:
            if current is not None:
                tombstone = vault._keep_in_trash(current.path)
            atomic_write_bytes(vault.resolve_inside(target), shown.data)
            vault.reconcile()
        op.describe(f"{restored.title} as of {shown.version.short}")
    note, reason = vault.load_note(target)
    if note is None:
        raise VaultError(f"{target} was restored but cannot be read back ({reason})")
    return RestoreResult(note, shown.version, tombstone, op.commit, changed=not unchanged)


def record_edit(vault: Vault, relpath: str, title: str, *, actor: str | None = None) -> str | None:
    """Commit the note at `relpath` as an edit of it, once the person's editor saved it.

    The editor wrote the file, not Lore, so without this the change would be committed as
    an external edit by the next operation. Returns the commit, or None if unchanged.
    """
    with vault.operation("edit", summary=title, actor=actor, adopt=[relpath]) as op:
        pass
    return op.commit


def describe_versioning(vault: Vault) -> str:
    """One line saying how the vault is versioned, for `lore init`."""
    versions = vault.versions
    versions.forget()
    repo = versions.repository()
    if repo is None:
        reason = _unversioned_reason(vault)
        if reason == "git is not installed":
            return "Not versioned: git is not installed (install it, then run lore init again)."
        return f"Not versioned: {reason}."
    if repo.owned:
        if versions.committing(repo):
            return "Versions: every change is a git commit (see: lore log, lore notes log TITLE)."
        return "Versions: off (versioning.auto_commit is false in lore.yaml)."
    where = repo.toplevel
    if versions.committing(repo):
        return f"Versions: Lore commits only the files it writes to your repository at {where}."
    return (
        f"Versions: the vault is in your git repository at {where}; Lore commits to it only "
        "with versioning.auto_commit: true in lore.yaml."
    )


__all__ = [
    "LoggedOperation",
    "NotVersioned",
    "NoteAtVersion",
    "NoteVersion",
    "RestoreResult",
    "UnknownRevision",
    "describe_versioning",
    "note_at",
    "note_versions",
    "recent_operations",
    "record_edit",
    "restore_note",
]
