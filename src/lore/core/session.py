"""One vault opened for use: the single way the faces reach the core.

A `LoreSession` owns the vault, the one provider answers come from, the stores (history,
metrics, quarantine), the ask engine (one conversation) and the change watcher. The app, the
REPL, the command line and the MCP server each hold one and call its operations; none of
them builds a core object itself, so each operation behaves the same from every face: the
review gate judges with the configured model whether the ingest came from `lore ingest` or
from `/ingest` in the app, and `/model` reaches compaction as it reaches answers.

Nothing is opened or imported until it is first used: a command that only lists notes never
loads the ask engine, and the first frame of the app waits for none of it.

Threads: the stores are safe to share between threads, and each operation takes the vault
lock itself, so faces may call operations from worker threads. An ask streams on the
caller's event loop; work that calls a model off that loop (ingest, compaction) gets a
provider of its own, since an HTTP client belongs to one event loop.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.core.vault import Vault

if TYPE_CHECKING:
    from lore.config import LoreConfig, TrustLevel
    from lore.core.ask import AskEngine, AskEvent
    from lore.core.audit import AuditEntry
    from lore.core.changes import VaultWatcher
    from lore.core.commands import CommandRegistry, CommandResult
    from lore.core.compaction import CompactionReport
    from lore.core.conversations import Continuation
    from lore.core.doctor import DoctorReport
    from lore.core.history import HistoryStore
    from lore.core.ingest import IngestReport
    from lore.core.ingest.pipeline import ProgressCallback
    from lore.core.memory_status import MemoryStatus
    from lore.core.metrics import MetricsStore
    from lore.core.notes import Note
    from lore.core.pack import ContextPack
    from lore.core.providers.base import Provider
    from lore.core.quarantine import HeldClaim, Promotion, Quarantine
    from lore.core.search import ReconcileReport, SearchHit
    from lore.core.trust_rules import TrustChange
    from lore.core.turns import Turn
    from lore.core.vault import RemoveResult, RenameResult
    from lore.core.versioning import LoggedOperation, NoteAtVersion, NoteVersion, RestoreResult


class LoreSession:
    """A vault, its provider and stores, and the operations every face offers."""

    def __init__(
        self,
        vault: Vault,
        provider: Provider | None = None,
        *,
        conversation: str | None = None,
        actor: str = "user",
    ) -> None:
        self.vault = vault
        # Who the person at this face is, in the audit log ("user", "mcp:<client>").
        self.actor = actor
        self._provider = provider
        self._conversation = conversation
        self._continuation: Continuation | None = None
        self._made: dict[str, Any] = {}
        self._making = threading.RLock()
        self._change_listeners: list[Callable[[frozenset[str]], None]] = []
        self._listeners_guard = threading.Lock()

    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        *,
        provider_name: str | None = None,
        model: str | None = None,
        provider: Provider | None = None,
        conversation: str | None = None,
        actor: str = "user",
    ) -> LoreSession:
        """The vault at `path`, or the one the current folder is in, or the default vault.

        The default vault is made on first use, so a newcomer's first command just works.
        `provider_name` and `model` override lore.yaml for this session only.
        """
        from lore.paths import discover_vault

        root, reason = discover_vault(str(path) if path is not None else None)
        vault = Vault.open(root, create=reason == "default vault")
        if provider_name:
            vault.config.provider.name = provider_name  # type: ignore[assignment]
        if model:
            vault.config.provider.model = model
        return cls(vault, provider, conversation=conversation, actor=actor)

    @staticmethod
    def create(root: Path, name: str | None = None) -> Path:
        """Make a new vault at `root` (or fill in what an existing one lacks)."""
        from lore.core.vault import init_vault

        return init_vault(root, name)

    def close(self) -> None:
        self.vault.close()

    def __enter__(self) -> LoreSession:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- what the vault is -------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.vault.name

    @property
    def root(self) -> Path:
        return self.vault.root

    @property
    def config(self) -> LoreConfig:
        return self.vault.config

    def take_warnings(self) -> list[str]:
        """Problems met while reading the vault (skipped files), each reported once."""
        warnings = list(self.vault.warnings)
        self.vault.warnings.clear()
        return warnings

    def relpath(self, path: Path) -> str:
        return self.vault.relpath(path)

    def resolve_inside(self, relpath: str) -> Path:
        return self.vault.resolve_inside(relpath)

    @property
    def drafts_folder(self) -> Path:
        """Where a face keeps a draft the person edits (inside the vault, never shared)."""
        return self.vault.layout.state

    def ensure_writable(self) -> None:
        self.vault.ensure_writable()

    # -- collaborators, made on first use ----------------------------------------------------

    def _once(self, name: str, make: Callable[[], Any]) -> Any:
        """The collaborator `name`, made by the first thread to ask for it (workers do)."""
        made = self._made.get(name)
        if made is None:
            with self._making:
                made = self._made.get(name)
                if made is None:
                    made = self._made[name] = make()
        return made

    @property
    def engine(self) -> AskEngine:
        return self._once("engine", self._make_engine)

    def _make_engine(self) -> AskEngine:
        from lore.core.ask import AskEngine

        return AskEngine(
            self.vault, self._provider, conversation=self._conversation, history=self.history
        )

    @property
    def provider(self) -> Provider:
        """The provider answers stream from (one per session; `use_model` replaces it)."""
        return self.engine.provider

    @property
    def history(self) -> HistoryStore:
        """The one history store of the session: the engine records into it too."""
        return self._once("history", self._make_history)

    def _make_history(self) -> HistoryStore:
        from lore.core.history import HistoryStore

        return HistoryStore(self.vault)

    @property
    def metrics(self) -> MetricsStore:
        return self._once("metrics", self._make_metrics)

    def _make_metrics(self) -> MetricsStore:
        from lore.core.metrics import MetricsStore

        return MetricsStore(self.vault)

    @property
    def quarantine(self) -> Quarantine:
        return self._once("quarantine", self._make_quarantine)

    def _make_quarantine(self) -> Quarantine:
        from lore.core.quarantine import Quarantine

        return Quarantine(self.vault)

    @property
    def watcher(self) -> VaultWatcher:
        return self._once("watcher", self._make_watcher)

    def _make_watcher(self) -> VaultWatcher:
        from lore.core.changes import VaultWatcher

        return VaultWatcher(self.vault)

    @property
    def commands(self) -> CommandRegistry:
        return self._once("commands", self._make_commands)

    def _make_commands(self) -> CommandRegistry:
        from lore.core.commands import build_registry

        return build_registry()

    def _background_provider(self) -> Provider | None:
        """A provider like the session's, for work on a thread with its own event loop."""
        from lore.core.providers.factory import background_provider

        return background_provider(self.config.provider)

    # -- changes -----------------------------------------------------------------------------

    def on_change(self, listener: Callable[[frozenset[str]], None]) -> None:
        """Call `listener(kinds)` after each write this session makes (from that thread)."""
        with self._listeners_guard:
            self._change_listeners.append(listener)

    def wrote(self, kinds: Iterable[str]) -> None:
        """Record that this session changed `kinds`: the watcher will not report them back,
        and listeners hear of them at once."""
        changed = frozenset(kinds)
        if not changed:
            return
        if "watcher" in self._made:  # only a face that watches has one to tell
            self.watcher.absorb(changed)
        with self._listeners_guard:
            listeners = list(self._change_listeners)
        for listener in listeners:
            listener(changed)

    def poll_changes(self) -> frozenset[str]:
        """What changed on disk since the last poll, made by anyone but this session."""
        return self.watcher.poll()

    # -- asking ------------------------------------------------------------------------------

    def follow_terminal_conversation(
        self, *, continue_latest: bool = False, new: bool = False
    ) -> None:
        """Ask within the conversation this terminal was having, as `lore ask` does: each
        command is a process of its own, so the conversation is remembered between them."""
        from lore.core import conversations

        self._continuation = conversations.choose(
            self.vault, continue_latest=continue_latest, new=new
        )
        self._conversation = self._continuation.conversation
        with self._making:
            self._made.pop("engine", None)

    def check_question(self, question: str) -> str:
        return self.engine.check_question(question)

    async def ask(self, question: str) -> AsyncIterator[AskEvent]:
        """Ask `question`; the events of `AskEngine.ask`. The turn is recorded whatever
        happens, cancellation included."""
        try:
            async for event in self.engine.ask(question):
                yield event
        finally:
            if self._continuation is not None and self.engine.last_turn is not None:
                from lore.core import conversations

                conversations.remember(self.vault, self._continuation)
            self.wrote(("history", "metrics", "memory"))

    async def aclose(self) -> None:
        """Close the answering provider's connections (on the loop that used them)."""
        if "engine" in self._made:
            await self.engine.aclose()

    def preview(self, question: str = "") -> ContextPack:
        """Exactly what the next ask of `question` would send."""
        return self.engine.preview(question)

    def last_completed_turn(self) -> Turn | None:
        return self.engine.last_completed_turn()

    def save_answer(self, turn: Turn, *, title: str | None = None) -> dict[str, Any]:
        from lore.core.ask import save_answer

        with self._acting():
            data = save_answer(self.vault, turn, title=title)
        self.wrote(("notes", "quarantine", "audit"))
        return data

    def use_model(self, provider_name: str | None = None, model: str | None = None) -> None:
        """Answer with another provider or model from now on, compaction and review too."""
        settings = self.config.provider
        if provider_name:
            settings.name = provider_name  # type: ignore[assignment]
        if model:
            settings.model = model
        self.engine.use_provider(None)

    @property
    def model_label(self) -> tuple[str, str]:
        """(provider name, model) as lore.yaml and `/model` set them."""
        settings = self.config.provider
        return settings.name, settings.model

    # -- slash commands ----------------------------------------------------------------------

    def run_command(self, line: str) -> CommandResult:
        """Run one slash-command line (`/search ocean`); never raises for a user's mistake."""
        from lore.core.commands import CommandContext

        context = CommandContext(session=self)
        return self.commands.dispatch(context, line)

    # -- notes -------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        limit: int | None = None,
        *,
        status: str | None = None,
        snippets: bool = True,
    ) -> list[SearchHit]:
        """Notes matching `query`, best first; `status` keeps one status only (None: all)."""
        wanted = limit if limit is not None else self.config.search.default_limit
        return self.vault.index.search(query, limit=wanted, status=status, snippets=snippets)

    def note_documents(self) -> list[dict[str, Any]]:
        """Stored fields of every note (may open the index: call it off the event loop)."""
        return self.vault.note_listing()

    def lookup(self, **fields: str) -> list[dict[str, Any]]:
        """Stored fields of the notes whose `fields` match exactly (id=…, path=…)."""
        return self.vault.index.lookup(**fields)

    def open_index(self) -> bool:
        """Open the note index, catching up with edits; True when notes changed meanwhile."""
        _ = self.vault.index
        report = self.vault.last_reconcile
        return bool(report and report.touched)

    def find_note(self, ref: str) -> Note:
        """The note `ref` names: a title, id or path (NoteNotFound when none does)."""
        return self.vault.find(ref)

    def read_note(self, relpath: str) -> Note:
        return self.vault.read_note(relpath)

    def load_note(self, relpath: str) -> tuple[Note | None, str | None]:
        """The note at `relpath`, or None and why it could not be read."""
        return self.vault.load_note(relpath)

    def backlinks(self, title: str) -> list[str]:
        return self.vault.backlinks(title)

    def create_note(self, title: str, **fields: Any) -> Note:
        with self._acting():
            note = self.vault.create_note(title, **fields)
        self.wrote(("notes",))
        return note

    def rename_note(self, ref: str, new_title: str) -> RenameResult:
        with self._acting():
            result = self.vault.rename_note(ref, new_title)
        self.wrote(("notes",))
        return result

    def remove_note(self, ref: str) -> RemoveResult:
        with self._acting():
            result = self.vault.remove_note(ref)
        self.wrote(("notes",))
        return result

    def reconcile(self) -> ReconcileReport:
        report = self.vault.reconcile()
        if report.touched:
            self.wrote(("notes",))
        return report

    def reindex(self) -> ReconcileReport:
        report = self.vault.reindex()
        self.wrote(("notes",))
        return report

    def iter_notes(self) -> Iterator[Note]:
        return self.vault.iter_notes()

    # -- ingest and the quarantine -----------------------------------------------------------

    def ingest(
        self,
        targets: list[str],
        *,
        trust: TrustLevel | None = None,
        recursive: bool = False,
        dry_run: bool = False,
        progress: ProgressCallback | None = None,
    ) -> IngestReport:
        """Read files, folders or URLs through the admission gates, the review gate judging
        with the session's model."""
        from lore.core.ingest import ingest

        with self._acting():
            report = ingest(
                self.vault,
                targets,
                trust=trust,
                recursive=recursive,
                dry_run=dry_run,
                provider=None if dry_run else self._background_provider(),
                progress=progress,
            )
        if not dry_run:
            self.wrote(("notes", "quarantine", "audit"))
        return report

    def ingest_text(
        self, text: str, *, uri: str, title: str, trust: TrustLevel, dry_run: bool = False
    ) -> IngestReport:
        """File `text` as if it were a document at `uri`, through the same gates."""
        from lore.core.ingest import ingest_text

        with self._acting():
            report = ingest_text(
                self.vault,
                text,
                uri=uri,
                title=title,
                trust=trust,
                provider=None if dry_run else self._background_provider(),
                dry_run=dry_run,
            )
        if not dry_run:
            self.wrote(("notes", "quarantine", "audit"))
        return report

    def promote(
        self, claim_id: str, *, trust: TrustLevel | None = None, text: str | None = None
    ) -> Promotion:
        """File a held claim (`text` edited by the person, if given) into a note."""
        promotion = self.quarantine.promote_and_report(
            claim_id, trust=trust, text=text, actor=self.actor
        )
        self.wrote(("notes", "quarantine", "audit"))
        return promotion

    def promote_source(self, uri: str, *, trust: TrustLevel | None = None) -> Promotion:
        promotion = self.quarantine.promote_source_and_report(uri, trust=trust, actor=self.actor)
        self.wrote(("notes", "quarantine", "audit"))
        return promotion

    def reject(self, claim_id: str, *, reason: str = "") -> HeldClaim:
        rejected = self.quarantine.reject(claim_id, reason=reason, actor=self.actor)
        self.wrote(("quarantine", "audit"))
        return rejected

    def reject_source(self, uri: str, *, reason: str = "") -> list[HeldClaim]:
        rejected = self.quarantine.reject_source(uri, reason=reason, actor=self.actor)
        self.wrote(("quarantine", "audit"))
        return rejected

    def undo(self) -> dict[str, Any]:
        """Undo the last promotion or rejection."""
        done = self.quarantine.undo(actor=self.actor)
        self.wrote(("notes", "quarantine", "audit"))
        return done

    def retier(self, *, dry_run: bool = False) -> list[TrustChange]:
        """Apply trust_rules.yaml to the notes already filed."""
        from lore.core.trust_rules import retier

        changes = retier(self.vault, dry_run=dry_run, actor=self.actor)
        if changes and not dry_run:
            self.wrote(("notes", "audit"))
        return changes

    def audit_entries(self, since: str | None = None) -> list[AuditEntry]:
        from lore.core.audit import AuditLog

        return AuditLog(self.vault).read(since=since)

    # -- history and memory ------------------------------------------------------------------

    def compact(self, *, dry_run: bool = False, then_exit: bool = False) -> CompactionReport:
        """Fold older turns into memory with the session's model (none offline).

        `then_exit`: the process ends once this returns, and leaves what the compaction
        read in memory to its exit."""
        from lore.core.compaction import compact

        provider = None if dry_run else self._background_provider()
        report = compact(
            self.vault, provider=provider, dry_run=dry_run, release_words=not then_exit
        )
        if not dry_run:
            self.wrote(("memory",))
        return report

    def memory_status(self) -> MemoryStatus:
        from lore.core.memory_status import memory_status

        return memory_status(self.vault)

    def export_history(
        self, target: Path, fmt: str | None = None, *, turns: Iterable[Turn] | None = None
    ) -> int:
        """Write the history (or `turns`) to `target`; the number of turns written."""
        from lore.core.history_export import export_turns

        chosen = turns if turns is not None else self.history.iter_turns()
        return export_turns(chosen, target, fmt, title=f"{self.name}: history")  # type: ignore[arg-type]

    # -- versions ----------------------------------------------------------------------------

    def _acting(self) -> AbstractContextManager[None]:
        """The commits of the operations run meanwhile name this session's actor."""
        return self.vault.versions.acting_as(self.actor)

    def recent_operations(self, limit: int = 20) -> list[LoggedOperation]:
        """The latest commits to the vault, newest first (runs git: off the event loop)."""
        from lore.core.versioning import recent_operations

        return recent_operations(self.vault, limit)

    def note_versions(self, ref: str) -> list[NoteVersion]:
        """Every version of the note `ref` names, a removed one too, newest first."""
        from lore.core.versioning import note_versions

        return note_versions(self.vault, ref)

    def note_at(self, ref: str, rev: str) -> NoteAtVersion:
        """The note as it was in version `rev` (a commit id from `note_versions`)."""
        from lore.core.versioning import note_at

        return note_at(self.vault, ref, rev)

    def restore_note(self, ref: str, rev: str) -> RestoreResult:
        """Bring the note back as it was in `rev`: one commit; the replaced text to trash/."""
        from lore.core.versioning import restore_note

        result = restore_note(self.vault, ref, rev, actor=self.actor)
        self.wrote(("notes",))
        return result

    def record_edit(self, note: Note) -> str | None:
        """Commit what the person's editor saved to `note` as their edit of it."""
        from lore.core.versioning import record_edit

        return record_edit(self.vault, note.path, note.title, actor=self.actor)

    def describe_versioning(self) -> str:
        """One line: whether and how the vault is versioned."""
        from lore.core.versioning import describe_versioning

        return describe_versioning(self.vault)

    # -- health ------------------------------------------------------------------------------

    def doctor(self, *, fix: bool = False) -> DoctorReport:
        from lore.core.doctor import examine

        return examine(self.vault, fix=fix)

    # -- serving other programs (the MCP server) ---------------------------------------------

    def as_actor(self, actor: str) -> LoreSession:
        """Another session on this vault and provider that acts as `actor` in the audit log
        and asks in a conversation of its own: what each client of a server is given."""
        return LoreSession(self.vault, self._provider, actor=actor)

    def record_submission(self, report: IngestReport, details: Iterable[str] = ()) -> None:
        """Audit that `self.actor` submitted the sources of `report`. The gates' verdicts
        on each claim are audited by the ingest itself; this line says who asked for it."""
        from lore.core.audit import AuditEntry, AuditLog

        if report.dry_run:
            return
        entries = [
            AuditEntry(
                claim_id=",".join(source.held_ids),
                source=source.uri or source.target,
                gate="submitted",
                verdict=source.outcome,
                reasons=[
                    *details,
                    f"{source.admitted} admitted, {source.merged} merged, {source.held} held",
                ],
                actor=self.actor,
            )
            for source in report.sources
        ]
        AuditLog(self.vault).append_many(entries)
        self.wrote(("audit",))

    def secret_path(self, name: str) -> Path:
        """Where the secret `name` is kept: under `.lore/`, which is never shared or synced."""
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"not a secret's file name: {name!r}")
        return self.vault.layout.state / name

    def keep_secret(self, name: str, make: Callable[[], str]) -> str:
        """The secret `name` (a bearer token), made with `make()` on first use.

        Made under the vault lock and written atomically, readable by this user alone, so
        two processes starting at once agree on one value.
        """
        import os

        from lore.core.storage import atomic_write_stream
        from lore.errors import VaultError

        path = self.secret_path(name)

        def kept() -> str | None:
            try:
                text = path.read_text(encoding="utf-8").strip()
            except FileNotFoundError:
                return None
            except (OSError, UnicodeDecodeError) as exc:
                raise VaultError(f"cannot read {path}: {exc}") from None
            if text and path.stat().st_mode & 0o077:
                os.chmod(path, 0o600)
            return text or None

        found = kept()
        if found is not None:
            return found
        self.ensure_writable()
        with self.vault.lock():
            found = kept()
            if found is None:
                made = make().strip()

                def write(handle: Any) -> None:
                    os.fchmod(handle.fileno(), 0o600)
                    handle.write(made + "\n")

                atomic_write_stream(path, write)
                found = made
        return found


__all__ = ["LoreSession"]
