"""`lore doctor`: what is wrong with a vault, and what can be mended safely."""

from __future__ import annotations

import os
import re
import time
from dataclasses import field
from pathlib import Path
from typing import Any

from lore.core.dataclass_lite import dataclass_own_init
from lore.core.history import HistoryStore
from lore.core.links import link_key, link_targets
from lore.core.memory import MemoryStore
from lore.core.vault import Vault
from lore.errors import ConfigError, VaultError

# The atomic-write helper's temporary files: `.<name>.<random>.tmp` beside the file it
# replaces. One left behind means a write was killed before its rename.
_TEMP_FILE = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")
STALE_TEMP_AGE_S = 60.0


@dataclass_own_init
class Finding:
    """One problem `lore doctor` found: its kind, the file (and line) and what is wrong."""

    kind: str
    path: str
    message: str
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "line": self.line, "message": self.message}


@dataclass_own_init
class DoctorReport:
    """What `lore doctor` found in a vault, how many notes it read, and what it mended."""

    findings: list[Finding] = field(default_factory=list)
    notes: int = 0
    fixed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(
            f.kind
            in {"front-matter", "index", "history", "memory", "symlink", "trust-rules", "config"}
            for f in self.findings
        )


def stale_temp_files(vault: Vault, older_than_s: float = STALE_TEMP_AGE_S) -> list[Path]:
    """Temporary files of interrupted writes anywhere in the vault, oldest first."""
    cutoff = time.time() - older_than_s
    found: list[tuple[float, Path]] = []
    for folder, dirs, files in os.walk(vault.root):
        dirs[:] = [name for name in dirs if name != ".git"]
        for name in files:
            if not _TEMP_FILE.match(name):
                continue
            path = Path(folder) / name
            try:
                info = path.lstat()
            except OSError:
                continue
            if info.st_mtime < cutoff:
                found.append((info.st_mtime, path))
    return [path for _, path in sorted(found)]


def _check_trust_rules(vault: Vault, report: DoctorReport) -> None:
    from lore.core.trust_rules import TrustRules

    path = vault.layout.trust_rules
    try:
        TrustRules.load(path)
    except ConfigError as exc:
        message = str(exc).removeprefix(f"{path}").lstrip(": ") or str(exc)
        report.findings.append(Finding("trust-rules", "trust_rules.yaml", message))


def _check_config(vault: Vault, report: DoctorReport) -> None:
    """Settings files broken since the vault opened, and vault keys hiding the user's own."""
    from lore.config import load_config, overridden_settings
    from lore.paths import user_dirs

    user_config = user_dirs().user_config
    try:
        load_config(vault.layout.config, user_config=user_config)
        overridden = overridden_settings(vault.layout.config, user_config)
    except ConfigError as exc:
        # The message opens with the file or variable at fault.
        where, _, problem = str(exc).partition(": ")
        report.findings.append(Finding("config", where, problem or where))
        return
    for key, in_vault, in_user in overridden:
        message = f"{key}: {in_vault!r} here overrides {in_user!r} from {user_config}"
        report.findings.append(Finding("config-override", "lore.yaml", message))


def _check_temp_files(vault: Vault, report: DoctorReport, fix: bool) -> None:
    stale = stale_temp_files(vault)
    if not stale:
        return
    if not fix:
        for path in stale:
            report.findings.append(
                Finding("temp-file", vault.relpath(path), "left by an interrupted write")
            )
        return
    removed = 0
    # Writers make their temporary files while holding the lock: under it, none is live.
    with vault.lock():
        for path in stale:
            try:
                path.unlink()
                removed += 1
            except FileNotFoundError:
                continue
            except OSError as exc:
                report.findings.append(
                    Finding("temp-file", vault.relpath(path), f"cannot remove: {exc.strerror}")
                )
    if removed:
        report.fixed.append(f"removed {removed} temporary file{'s' if removed != 1 else ''}")


def examine(vault: Vault, *, fix: bool = False) -> DoctorReport:
    report = DoctorReport()
    files = vault.scan_note_files()
    index = vault.index
    reconcile = vault.last_reconcile
    if reconcile and reconcile.touched and not reconcile.rebuilt:
        report.fixed.append(
            f"index caught up with the disk: {len(reconcile.added)} added, "
            f"{len(reconcile.changed)} changed, {len(reconcile.removed)} removed"
        )
    for relpath, refusal in sorted(vault.refused_files.items()):
        report.findings.append(Finding("symlink", relpath, refusal))
    indexed = {doc["path"] for doc in index.all_documents()}
    skipped = index.skipped_files()
    titles: dict[str, str] = {}
    link_map: dict[str, list[str]] = {}
    for relpath, _, _ in files:
        note, reason = vault.load_note(relpath)
        if note is None:
            report.findings.append(Finding("skipped", relpath, reason or "skipped"))
            continue
        report.notes += 1
        if relpath not in indexed and relpath not in skipped:
            report.findings.append(Finding("index", relpath, "on disk but not in the index"))
        for problem in note.problems:
            line = note.problem_line if "front matter" in problem else None
            report.findings.append(Finding("front-matter", relpath, problem, line))
        titles.setdefault(link_key(note.title), relpath)
        link_map[relpath] = link_targets(note.body)
    on_disk = {relpath for relpath, _, _ in files}
    for relpath in sorted(indexed - on_disk):
        report.findings.append(Finding("index", relpath, "in the index but not on disk"))
    linked: set[str] = set()
    for relpath, targets in link_map.items():
        for target in targets:
            found = titles.get(link_key(target))
            if found is None:
                report.findings.append(
                    Finding("broken-link", relpath, f"links to missing [[{target}]]")
                )
            else:
                linked.add(found)
    for relpath in sorted(link_map):
        if relpath not in linked and not link_map[relpath]:
            report.findings.append(Finding("orphan", relpath, "no links in or out"))
    try:
        history = HistoryStore(vault).check()
    except VaultError as exc:
        # Not a file Lore can read at all (a pipe or a folder in its place): a finding too.
        report.findings.append(Finding("history", "history.jsonl", str(exc)))
    else:
        if history.bad_lines:
            shown = ", ".join(str(n) for n in history.bad_lines[:5])
            tail = " (a torn last line from an interrupted write)" if history.torn_tail else ""
            report.findings.append(
                Finding("history", "history.jsonl", f"unreadable lines skipped: {shown}{tail}")
            )
    memory = MemoryStore(vault)
    memory.state()
    if memory.problem:
        report.findings.append(Finding("memory", "memory/memory.json", memory.problem))
    _check_trust_rules(vault, report)
    _check_config(vault, report)
    _check_temp_files(vault, report, fix)
    if fix and any(f.kind == "index" for f in report.findings):
        rebuilt = vault.reindex()
        report.fixed.append(f"index rebuilt from {len(rebuilt.added)} notes")
        report.findings = [f for f in report.findings if f.kind != "index"]
    return report
