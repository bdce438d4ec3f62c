"""The vault: one folder the user owns, holding notes, history and everything Lore keeps.

Data a user would grieve (notes, history, memory, audit, quarantine, raw copies, trash) lives
in plain files at the top of the vault. Derived state that can be rebuilt (the index, caches,
the lock) lives under `.lore/`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from lore.config import CONFIG_TEMPLATE, LoreConfig, TrustLevel, load_config
from lore.core.dataclass_lite import dataclass_lite
from lore.core.links import link_key, link_targets, rewrite_links
from lore.core.lock import VaultLock
from lore.core.notes import (
    Note,
    Source,
    new_note_id,
    parse_note,
    render_note,
    split_front_matter,
    utc_now,
)
from lore.core.settings_cache import SettingsCache
from lore.core.slug import slugify, unique_name
from lore.core.storage import atomic_write_bytes, atomic_write_text
from lore.errors import (
    AmbiguousNote,
    ConfigError,
    NoteExists,
    NoteNotFound,
    UsageError,
    VaultError,
    VaultLocked,
    VaultNotFound,
)
from lore.paths import CONFIG_FILE_NAME

if TYPE_CHECKING:
    # Imported where the index is opened: they load whoosh, which the app's first screen and
    # the commands that never search do not need.
    from lore.core.search import FileStat, NoteIndex, ReconcileReport

    # Imported by the first operation that writes (or asks about versions): a command that
    # only reads never runs git, and need not load what runs it.
    from lore.core.versioning.recorder import Operation, VaultVersions

NOTE_SUFFIXES = (".md", ".markdown")
_BINARY_PROBE_BYTES = 8192


class VaultLayout:
    """Where each part of the vault at `root` lives."""

    __slots__ = ("root",)

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def config(self) -> Path:
        return self.root / CONFIG_FILE_NAME

    @property
    def trust_rules(self) -> Path:
        return self.root / "trust_rules.yaml"

    @property
    def notes(self) -> Path:
        return self.root / "notes"

    @property
    def history(self) -> Path:
        return self.root / "history.jsonl"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @property
    def audit(self) -> Path:
        return self.root / "audit.jsonl"

    @property
    def memory(self) -> Path:
        return self.root / "memory"

    @property
    def quarantine(self) -> Path:
        return self.root / "quarantine"

    @property
    def raw(self) -> Path:
        return self.root / "raw"

    @property
    def trash(self) -> Path:
        return self.root / "trash"

    @property
    def state(self) -> Path:
        return self.root / ".lore"

    @property
    def index(self) -> Path:
        return self.state / "index"

    @property
    def lock(self) -> Path:
        return self.state / "lock"


@dataclass_lite
class RenameResult:
    """A note renamed, and how many links to it were rewritten in each note that had them."""

    note: Note
    relinked: dict[str, int] = field(default_factory=dict)


@dataclass_lite
class RemoveResult:
    """A note removed, where its copy is kept, and the notes that still link to it."""

    note: Note
    tombstone: Path
    linked_from: list[str] = field(default_factory=list)


def init_vault(root: Path, name: str | None = None) -> Path:
    """Create a vault folder with a commented lore.yaml; an existing one is left as it is."""
    root = root.expanduser().resolve()
    from lore.core.versioning.recorder import GITIGNORE, start_versioning

    layout = VaultLayout(root)
    wrote_settings = False
    try:
        layout.notes.mkdir(parents=True, exist_ok=True)
        if not layout.config.exists():
            shown = name or root.name or "Lore"
            atomic_write_text(layout.config, CONFIG_TEMPLATE.format(name=_yaml_scalar(shown)))
            wrote_settings = True
        gitignore = root / ".gitignore"
        if not gitignore.exists():
            atomic_write_text(gitignore, GITIGNORE)
    except OSError as exc:
        raise VaultError(f"cannot create a vault in {root}: {exc.strerror}") from None
    # A vault git cannot version still works; `lore init` says why it is not versioned.
    with contextlib.suppress(VaultError):
        start_versioning(root, name or root.name or "Lore")
    if wrote_settings:
        # Validated once here and left in the vault's cache, so that the vault's first
        # command starts as fast as any other. Settings that do not validate (a broken
        # config.yaml of the user's) are reported by that command instead.
        with contextlib.suppress(ConfigError):
            load_config(
                layout.config, cache=SettingsCache(layout.state / "settings.json", layout.lock)
            )
    return root


def _write_problem(exc: OSError | VaultError) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


def _yaml_scalar(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)


class Vault:
    """Notes on disk plus their index, written atomically under the vault lock."""

    def __init__(self, root: Path, config: LoreConfig) -> None:
        self.root = root
        self.layout = VaultLayout(root)
        self.config = config
        self.warnings: list[str] = []
        # Files under notes/ that were found but refused, with why: for `lore doctor`.
        self.refused_files: dict[str, str] = {}
        self._lock = VaultLock(self.layout.lock)
        self._index: NoteIndex | None = None
        self._index_opening = threading.Lock()
        self.last_reconcile: ReconcileReport | None = None
        # Why the index was opened read-only (a full or read-only disk), or None.
        self.index_read_only: str | None = None
        # Who the commits of this vault's operations name when an operation names no one.
        self.actor = "user"
        self._versions: VaultVersions | None = None
        self._versions_making = threading.Lock()

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, root: Path, *, create: bool = False) -> Vault:
        root = root.expanduser().resolve()
        if not root.exists():
            if not create:
                raise VaultNotFound(f"no vault at {root} (create one with: lore init {root})")
            init_vault(root)
        if not root.is_dir():
            raise VaultNotFound(f"{root} is not a folder")
        if not os.access(root, os.R_OK | os.X_OK):
            raise VaultError(f"the vault {root} cannot be read (permission denied)")
        layout = VaultLayout(root)
        cache = SettingsCache(layout.state / "settings.json", layout.lock)
        return cls(root, load_config(layout.config, cache=cache))

    @property
    def name(self) -> str:
        return self.config.vault.name or self.root.name

    @property
    def versions(self) -> VaultVersions:
        """The vault's versioning (lore.core.versioning), made when first asked for."""
        if self._versions is None:
            with self._versions_making:
                if self._versions is None:
                    from lore.core.versioning.recorder import VaultVersions

                    self._versions = VaultVersions(self)
        return self._versions

    def lock(self) -> AbstractContextManager[None]:
        return self._lock.hold()

    def operation(
        self,
        name: str,
        *,
        summary: str = "",
        actor: str | None = None,
        hold_lock: bool = True,
        adopt: Iterable[str] = (),
    ) -> AbstractContextManager[Operation]:
        """One operation that writes: under the vault lock, then one commit of what it wrote
        (see lore.core.versioning). Operations begun inside it fold into it."""
        return self.versions.operation(
            name,
            actor=actor or self.versions.acting() or self.actor,
            summary=summary,
            hold_lock=hold_lock,
            adopt=adopt,
        )

    def ensure_writable(self) -> None:
        if not os.access(self.root, os.W_OK):
            raise VaultError(f"the vault {self.root} is read-only; nothing was changed")

    # -- files -----------------------------------------------------------------------------

    def relpath(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def resolve_inside(self, relpath: str) -> Path:
        """The absolute path of `relpath`, refusing anything that would leave the vault."""
        pure = PurePosixPath(relpath)
        if pure.is_absolute() or ".." in pure.parts or "\x00" in relpath:
            raise UsageError(f"{relpath!r} is not a path inside the vault")
        path = self.root / pure
        if not path.resolve().is_relative_to(self.root):
            raise UsageError(f"{relpath!r} points outside the vault")
        return path

    def scan_note_files(self) -> list[FileStat]:
        """Every Markdown file under notes/ with its size and mtime, hidden folders skipped."""
        found: list[FileStat] = []
        self.refused_files = {}
        notes_dir = self.layout.notes
        if not notes_dir.is_dir():
            return found
        prefix_len = len(str(self.root)) + 1
        stack = [str(notes_dir)]
        while stack:
            folder = stack.pop()
            try:
                entries = os.scandir(folder)
            except OSError as exc:
                self.warnings.append(f"cannot read folder {folder}: {exc.strerror}")
                continue
            with entries:
                for entry in entries:
                    if entry.name.startswith("."):
                        continue
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.is_symlink() and not self._safe_link(entry.path):
                            continue
                        elif entry.name.endswith(NOTE_SUFFIXES) and entry.is_file():
                            info = entry.stat()
                            relpath = entry.path[prefix_len:].replace(os.sep, "/")
                            found.append((relpath, info.st_size, info.st_mtime_ns))
                    except OSError:
                        continue
        found.sort()
        return found

    def _safe_link(self, path: str) -> bool:
        """Whether a symlink under notes/ may be read: it must end inside the vault.

        A cloned vault could otherwise carry a link to ~/.ssh/id_rsa into the index and
        into a prompt sent to a remote provider. Refusals are kept for `lore doctor`.
        """
        relpath = path[len(str(self.root)) + 1 :].replace(os.sep, "/")
        reason = self._link_problem(Path(path))
        if reason is None:
            return True
        if relpath not in self.refused_files:
            self.refused_files[relpath] = reason
            if relpath.endswith(NOTE_SUFFIXES) or "loop" in reason:
                self.warnings.append(f"refused {relpath}: {reason}")
        return False

    def _link_problem(self, path: Path) -> str | None:
        try:
            os.stat(path)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return "a symlink loop"
            return None  # a dangling link is simply not a note
        real = Path(os.path.realpath(path))
        if not real.is_relative_to(self.root):
            return "a symlink to somewhere outside the vault (not read)"
        if path.parent.resolve().is_relative_to(real):
            return "a symlink loop (it links to a folder that holds it)"
        return None

    def load_note(self, relpath: str) -> tuple[Note | None, str | None]:
        """Read one note; (None, reason) for a file that must be skipped (binary, huge, gone)."""
        path = self.root / relpath
        try:
            # notes/ is scanned without following linked folders, so only the file itself
            # can be a link; one lstat tells.
            if stat.S_ISLNK(os.lstat(path).st_mode):
                problem = self._link_problem(path)
                if problem:
                    return None, problem
            info = path.stat()
            if not stat.S_ISREG(info.st_mode):
                return None, "not a regular file (a pipe or device is never read)"
            if info.st_size > self.config.vault.max_note_bytes:
                return None, f"larger than {self.config.vault.max_note_bytes:,} bytes"
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            with open(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return None, "not a regular file (a pipe or device is never read)"
                data = handle.read()
        except OSError as exc:
            return None, f"cannot be read ({exc.strerror})"
        if b"\x00" in data[:_BINARY_PROBE_BYTES]:
            return None, "binary file"
        try:
            text = data.decode("utf-8")
            invalid = False
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="replace")
            invalid = True
        if text.startswith("\ufeff"):
            text = text[1:]
        note = parse_note(text, relpath)
        if invalid:
            note.problems.append("invalid UTF-8 (read with replacement characters)")
        return note, None

    def read_note(self, relpath: str) -> Note:
        note, reason = self.load_note(relpath)
        if note is None:
            raise VaultError(f"{relpath}: {reason}")
        return note

    def iter_notes(self) -> Iterator[Note]:
        for relpath, _, _ in self.scan_note_files():
            note, _ = self.load_note(relpath)
            if note is not None:
                yield note

    # -- the index -------------------------------------------------------------------------

    @property
    def index(self) -> NoteIndex:
        if self._index is None:
            # Workers may ask for the index at the same moment: open it once. A thread that
            # already holds the vault lock must not wait here, or it could wait on a thread
            # that is itself waiting for the vault lock; it opens the index itself instead.
            waited = self._index_opening.acquire(blocking=not self._lock.held_by_this_thread())
            try:
                if self._index is None:
                    index, self.last_reconcile = self._open_index()
                    for relpath, reason in self.last_reconcile.skipped.items():
                        self.warnings.append(f"skipped {relpath}: {reason}")
                    self._index = index
            finally:
                if waited:
                    self._index_opening.release()
        return self._index

    def note_listing(self) -> list[dict[str, Any]]:
        """Stored fields of every note in the index (as `NoteIndex.all_documents` has them).

        While no note file changed since the index was last brought up to date, they are
        read from its manifest alone, without opening the index: listing notes is a command
        a person runs often, and whoosh took most of its time.
        """
        if self._index is None:
            from lore.core.index_manifest import Manifest

            manifest = Manifest(self._index_folder())
            if manifest.load() and not manifest.compare(list(self.scan_note_files())).touched:
                listing = manifest.listing()
                if listing is not None:
                    return listing
        return self.index.note_listing()

    def _open_index(self) -> tuple[NoteIndex, ReconcileReport]:
        """Open and update the index; on a disk that takes no writes, open it read-only.

        Searching, listing and `doctor` only read: a full or read-only disk must not stop
        them because bringing the index up to date could not be written.
        """
        from lore.core.search import NoteIndex

        folder = self._index_folder()
        index = NoteIndex(folder, self.load_note)
        try:
            return index, index.open(self.scan_note_files, self.lock)
        except VaultLocked:
            raise
        except (OSError, VaultError) as exc:
            problem = _write_problem(exc)
        index.close()
        index = NoteIndex(folder, self.load_note)
        report = index.open_read_only(self.scan_note_files())
        self.index_read_only = problem
        self.warnings.append(
            f"the search index could not be updated ({problem}); "
            + ("it was built in memory for now" if report.rebuilt else "searching it as it was")
        )
        return index, report

    def _index_folder(self) -> Path:
        state = self.layout.state
        try:
            state.mkdir(exist_ok=True)
            if os.access(state, os.W_OK):
                return self.layout.index
        except OSError:
            pass
        # A read-only vault can still be searched: keep its index in the user's cache.
        import hashlib

        from lore.paths import user_dirs

        key = hashlib.sha1(str(self.root).encode()).hexdigest()[:16]
        self._lock = VaultLock(user_dirs().cache / f"lock-{key}")
        return user_dirs().cache / f"index-{key}"

    def reconcile(self) -> ReconcileReport:
        """Pick up changes other processes or editors made since the index was opened."""
        from lore.core.search import ReconcileReport

        if self._index is None:
            _ = self.index
            assert self.last_reconcile is not None
            return self.last_reconcile
        if self.index_read_only is not None:
            return self.last_reconcile or ReconcileReport()
        try:
            self.last_reconcile = self._index.open(self.scan_note_files, self.lock)
        except VaultLocked:
            raise
        except (OSError, VaultError) as exc:
            self.index_read_only = _write_problem(exc)
            self.warnings.append(
                f"the search index could not be updated ({self.index_read_only}); "
                "it catches up once the disk takes writes again"
            )
            return self.last_reconcile or ReconcileReport()
        return self.last_reconcile

    def reindex(self) -> ReconcileReport:
        from lore.core.search import NoteIndex

        with self.lock():
            index = NoteIndex(self._index_folder(), self.load_note)
            report = index.rebuild(self.scan_note_files())
        if self._index is not None:
            self._index.close()
        self._index = index
        self.last_reconcile = report
        return report

    # -- finding notes -----------------------------------------------------------------------

    def find(self, ref: str) -> Note:
        """A note by id, exact title (case-insensitive) or path inside the vault."""
        ref = ref.strip()
        if not ref:
            raise UsageError("name a note by its title, id or path")
        index = self.index
        for terms in ({"id": ref}, {"title_key": ref.casefold()}, {"path": ref}):
            matches = index.lookup(**terms)
            if len(matches) == 1:
                return self.read_note(matches[0]["path"])
            if len(matches) > 1:
                paths = ", ".join(sorted(match["path"] for match in matches))
                raise AmbiguousNote(
                    f"{len(matches)} notes match {ref!r}: {paths}; use a path or id"
                )
        raise NoteNotFound(f"no note titled {ref!r} (try: lore search {ref})")

    def title_taken(self, title: str) -> str | None:
        matches = self.index.lookup(title_key=title.casefold())
        return matches[0]["path"] if matches else None

    def backlinks(self, title: str) -> list[str]:
        """Paths of notes whose body links to `title`."""
        key = link_key(title)
        candidates = self.index.paths_mentioning(title)
        if candidates is None:
            candidates = sorted(self.index.indexed_paths())
        linking = []
        for relpath in candidates:
            note, _ = self.load_note(relpath)
            if note and any(link_key(target) == key for target in link_targets(note.body)):
                linking.append(note.path)
        return sorted(set(linking))

    # -- writing -----------------------------------------------------------------------------

    def _write(self, note: Note) -> Note:
        """Write `note` atomically and update the index. The caller holds the lock."""
        path = self.resolve_inside(note.path)
        atomic_write_text(path, render_note(note))
        info = path.stat()
        try:
            self.index.upsert(note, info.st_size, info.st_mtime_ns)
        except VaultLocked:
            raise
        except (OSError, VaultError) as exc:
            # The note itself is whole on disk; the index notices it at its next open.
            self.warnings.append(
                f"{note.path} was saved but the search index could not be updated "
                f"({_write_problem(exc)}); it catches up when the disk takes writes again"
            )
        return note

    def save(self, note: Note) -> Note:
        """Write a changed note back. Refuses to rewrite a file whose front matter is broken."""
        self.ensure_writable()
        if not note.writable:
            raise VaultError(
                f"{note.path} has broken front matter (line {note.problem_line}); "
                "fix it by hand first, Lore will not overwrite it"
            )
        with self.operation("edit", summary=note.title):
            note.updated = utc_now()
            return self._write(note)

    def create_note(
        self,
        title: str,
        body: str = "",
        *,
        tags: list[str] | None = None,
        sources: list[Source] | None = None,
        trust: TrustLevel = "trusted",
        folder: str = "",
        extra: dict[str, object] | None = None,
    ) -> Note:
        title = " ".join(title.split())
        if not title:
            raise UsageError("a note needs a title")
        self.ensure_writable()
        with self.operation("create", summary=title):
            taken_by = self.title_taken(title)
            if taken_by:
                raise NoteExists(f"a note titled {title!r} already exists: {taken_by}")
            target_dir = self.layout.notes
            if folder:
                target_dir = self.resolve_inside(f"notes/{folder.strip('/')}")
            target_dir.mkdir(parents=True, exist_ok=True)
            name = unique_name(slugify(title), lambda name: (target_dir / name).exists())
            now = utc_now()
            note = Note(
                path=self.relpath(target_dir / name),
                id=new_note_id(),
                title=title,
                body=body,
                tags=sorted({tag.strip().lstrip("#").lower() for tag in tags or [] if tag.strip()}),
                created=now,
                updated=now,
                sources=list(sources or []),
                trust=trust,
                status="active",
                extra=dict(extra or {}),
            )
            return self._write(note)

    def rename_note(self, ref: str, new_title: str) -> RenameResult:
        """Give a note a new title and file name, and rewrite every link that pointed to it."""
        new_title = " ".join(new_title.split())
        if not new_title:
            raise UsageError("the new title is empty")
        self.ensure_writable()
        with self.operation("rename") as op:
            note = self.find(ref)
            op.describe(f"{note.title} -> {new_title}")
            if not note.writable:
                raise VaultError(f"{note.path} has broken front matter; fix it before renaming")
            taken_by = self.title_taken(new_title)
            if taken_by and taken_by != note.path:
                raise NoteExists(f"a note titled {new_title!r} already exists: {taken_by}")
            old_title, old_path = note.title, note.path
            linking = [path for path in self.backlinks(old_title) if path != old_path]
            folder = self.resolve_inside(old_path).parent
            old_name = PurePosixPath(old_path).name
            name = unique_name(
                slugify(new_title),
                lambda name: name != old_name and (folder / name).exists(),
            )
            result = RenameResult(note=note)
            self._keep_in_trash(old_path)
            note.body, self_links = rewrite_links(note.body, old_title, new_title)
            note.title = new_title
            note.path = self.relpath(folder / name)
            note.updated = utc_now()
            self._write(note)
            if self_links:
                result.relinked[note.path] = self_links
            if note.path != old_path:
                self.resolve_inside(old_path).unlink(missing_ok=True)
                self.index.remove(old_path)
                op.renamed.append((old_path, note.path))
            for relpath in linking:
                count = self._relink_file(relpath, old_title, new_title)
                if count:
                    result.relinked[relpath] = count
            return result

    def _relink_file(self, relpath: str, old_title: str, new_title: str) -> int:
        """Rewrite the links in one note's body in place, touching no other byte of the file.

        The file keeps its own encoding (a Latin-1 note stays Latin-1), its front matter and
        its comments; the original goes to trash/ first so the change can be undone.
        """
        path = self.resolve_inside(relpath)
        try:
            original = path.read_bytes()
        except OSError as exc:
            self.warnings.append(f"{relpath}: links not updated ({exc.strerror})")
            return 0
        encoding = "utf-8"
        try:
            text = original.decode(encoding)
        except UnicodeDecodeError:
            # Latin-1 maps every byte to one character, so unchanged bytes round-trip exactly.
            encoding = "latin-1"
            text = original.decode(encoding)
        bom = "\ufeff" if text.startswith("\ufeff") else ""
        _front, body, closed = split_front_matter(text[len(bom) :])
        if not closed or parse_note(text[len(bom) :], relpath).problem_line is not None:
            return 0
        head = text[: len(text) - len(body)]
        new_body, count = rewrite_links(body, old_title, new_title)
        if not count:
            return 0
        try:
            data = (head + new_body).encode(encoding)
        except UnicodeEncodeError:
            self.warnings.append(
                f"{relpath}: links not updated ({new_title!r} cannot be written in {encoding})"
            )
            return 0
        self._keep_in_trash(relpath, original)
        atomic_write_bytes(path, data)
        linker, _ = self.load_note(relpath)
        if linker is not None:
            info = path.stat()
            self.index.upsert(linker, info.st_size, info.st_mtime_ns)
        return count

    def _keep_in_trash(self, relpath: str, original: bytes | None = None) -> Path:
        """A copy of the file's bytes, exactly, in trash/: how a change or removal is undone."""
        source = self.resolve_inside(relpath)
        if original is None:
            try:
                original = source.read_bytes()
            except OSError as exc:
                raise VaultError(f"cannot read {relpath}: {exc.strerror}") from None
        stamp = utc_now().replace(":", "").replace("-", "")
        trash = self.layout.trash
        name = unique_name(
            f"{stamp}-{PurePosixPath(relpath).stem}", lambda name: (trash / name).exists()
        )
        tombstone = trash / name
        atomic_write_bytes(tombstone, original)
        return tombstone

    def remove_note(self, ref: str) -> RemoveResult:
        """Move a note to trash/ (a tombstone copy) and report the notes that linked to it."""
        self.ensure_writable()
        with self.operation("remove") as op:
            note = self.find(ref)
            op.describe(note.title)
            source = self.resolve_inside(note.path)
            tombstone = self._keep_in_trash(note.path)
            linked_from = [path for path in self.backlinks(note.title) if path != note.path]
            source.unlink()
            self.index.remove(note.path)
            return RemoveResult(note=note, tombstone=tombstone, linked_from=linked_from)

    def close(self) -> None:
        if self._versions is not None:
            self._versions.close()
        if self._index is not None:
            self._index.close()
