"""Filing admitted claims into notes, and what the vault already holds that filing needs.

A claim goes into the note for its source section ("Title — Section"), or into an existing
note on the same subject when that note is at most as trusted as the claim. Each claim ends
with a `[^srcN]` footnote naming its source, so an answer quoting it can cite the source.
Notes are changed in memory and written at `flush()`, atomically, one file at a time.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from array import array
from collections import OrderedDict
from dataclasses import field
from functools import lru_cache
from pathlib import Path, PurePosixPath

from lore.config import TrustLevel
from lore.core.dataclass_lite import dataclass_own_init
from lore.core.display_text import clean_title
from lore.core.gates.similarity import SimilarityIndex, sketches
from lore.core.gates.types import TRUST_RANK, Claim
from lore.core.ingest.catalog_cache import CachedNote, CatalogCache, NoteInfo
from lore.core.note_parts import NAVIGATION, navigation, part_title, split_part
from lore.core.notes import Note, Source, new_note_id, parse_note, render_note, utc_now
from lore.core.slug import slugify, unique_name
from lore.core.storage import atomic_write_many
from lore.core.vault import Vault

_CACHE_ATTRIBUTE = "_lore_ingest_catalog"
_FOOTNOTE_DEF = re.compile(r"^\[\^src\d+\]:")
_HEADING = re.compile(r"^#{1,6}\s")
# Every claim of a section names the same section and source: each is cleaned once.
_clean_title = lru_cache(maxsize=4096)(clean_title)
# How much of the text of notes this run wrote the catalog keeps, so a later claim joining
# one need not read it back; past this the oldest are read from disk again when joined, and
# a long ingest holds no more than this, however many notes it writes.
WRITTEN_KEPT_CHARS = 2_000_000
# A first run in a large vault writes what it read to the cache this many notes at a time,
# so that it never holds the sketches of them all twice.
_CACHE_WRITE_NOTES = 2_000


def claim_paragraphs(body: str) -> list[str]:
    """The paragraphs of a note body that state something (headings and footnotes left out)."""
    found = []
    for block in re.split(r"\n\s*\n", body):
        block = block.strip()
        if not block or _HEADING.match(block) or _FOOTNOTE_DEF.match(block):
            continue
        if NAVIGATION.match(block):
            continue
        found.append(block)
    return found


class Catalog:
    """Titles, origins and similarity sketches of the notes in a vault, read in one pass."""

    def __init__(self) -> None:
        self.notes: dict[str, NoteInfo] = {}
        self.titles: dict[str, str] = {}
        self.by_origin: dict[str, list[str]] = {}
        self.index = SimilarityIndex()
        self.trusted_titles: dict[str, str] = {}
        # Notes this run wrote, with the (size, mtime) they were written with: a later claim
        # that joins one skips re-reading and re-parsing it unless the file changed since.
        # The most recently written, up to WRITTEN_KEPT_CHARS of text (see `remember`).
        self.written: OrderedDict[str, tuple[int, int, str, Note]] = OrderedDict()
        self._written_chars = 0
        # (size, mtime_ns) of every note file the catalog reflects.
        self.stats: dict[str, tuple[int, int]] = {}

    @classmethod
    def build(cls, vault: Vault, *, keep: bool = True) -> Catalog:
        """The catalog of the notes in `vault`; with `keep`, what it reads is cached for the
        next run (a dry run keeps nothing)."""
        catalog = cls()
        catalog.sync(vault, keep=keep)
        return catalog

    @classmethod
    def for_vault(cls, vault: Vault) -> Catalog:
        """The catalog kept with an open vault, brought up to date with the disk.

        A long-lived process (the app, the REPL) reads each note once; later ingests only
        re-read the notes whose size or mtime changed.
        """
        catalog = getattr(vault, _CACHE_ATTRIBUTE, None)
        if not isinstance(catalog, Catalog):
            catalog = cls.build(vault)
            setattr(vault, _CACHE_ATTRIBUTE, catalog)
        else:
            catalog.sync(vault)
        return catalog

    @staticmethod
    def forget(vault: Vault) -> None:
        """Drop the kept catalog (after a dry run or a failure left it ahead of the disk)."""
        if hasattr(vault, _CACHE_ATTRIBUTE):
            delattr(vault, _CACHE_ATTRIBUTE)

    def sync(self, vault: Vault, *, keep: bool = True) -> None:
        """Bring the catalog up to date with the notes on disk: each note whose file changed
        since it was last read is read again, from the cache where the cache has its file's
        size and modification time (see `lore.core.ingest.catalog_cache`)."""
        current = {path: (size, mtime) for path, size, mtime in vault.scan_note_files()}
        state = vault.layout.state
        if self.index.scratch is None and state.is_dir() and os.access(state, os.W_OK):
            # Where the similarity index moves claims past its memory budget.
            self.index.scratch = state
        fresh = not self.stats
        for path in [path for path in self.stats if path not in current]:
            self.remove(path)
        changed = [path for path, stat in current.items() if self.stats.get(path) != stat]
        cache = CatalogCache.of_vault(
            state,
            writable=keep and os.access(vault.root, os.W_OK),
            reading=reading_fingerprint(),
        )
        limit = vault.config.vault.max_note_bytes
        learnt: list[CachedNote] = []
        # Rows of notes that are gone, or that no longer read as a note.
        gone = [path for path in cache.paths() if path not in current] if fresh else []
        # In the order scanned, which is sorted: a whole catalog's rows are read as it goes.
        for path, known in zip(changed, cache.read(changed), strict=True):
            self.remove(path)
            size, mtime = current[path]
            # Past the size limit (lowered since), a note is refused, as reading it would be.
            fits = size <= limit
            if known is not None and fits and (known.size, known.mtime_ns) == (size, mtime):
                self._add_cached(known)
                continue
            note, _ = vault.load_note(path)
            if note is None:
                if known is not None:
                    gone.append(path)
                continue
            learnt.append(self._add_read(note, size, mtime))
            if len(learnt) >= _CACHE_WRITE_NOTES:
                cache.write(learnt, ())
                learnt.clear()
        self.stats = current
        cache.write(learnt, gone)

    def remove(self, path: str) -> None:
        info = self.notes.pop(path, None)
        self.index.remove_path(path)
        self._forget_written(path)
        self.stats.pop(path, None)
        if info is None:
            return
        self.forget_title(info.title, path)
        if info.origin_uri and path in self.by_origin.get(info.origin_uri, []):
            self.by_origin[info.origin_uri].remove(path)

    def add(self, note: Note, *, index_body: bool) -> None:
        self._add_info(_info_of(note))
        if index_body and note.status == "active":
            for paragraph in claim_paragraphs(note.body):
                self.index.add(paragraph, note.path, note.trust)

    def _add_info(self, info: NoteInfo) -> None:
        self.notes[info.path] = info
        self.titles.setdefault(info.title.casefold(), info.path)
        if info.origin_uri:
            paths = self.by_origin.setdefault(info.origin_uri, [])
            if info.path not in paths:
                paths.append(info.path)
        if info.status == "active" and info.trust == "trusted":
            self.trusted_titles.setdefault(info.title.casefold(), info.path)

    def _add_read(self, note: Note, size: int, mtime_ns: int) -> CachedNote:
        """`add` a note read from its file, and what the cache keeps of it."""
        info = _info_of(note)
        self._add_info(info)
        claims: list[tuple[array[int], array[int], str | None]] = []
        if note.status == "active":
            kept = note.trust == "trusted"
            for paragraph in claim_paragraphs(note.body):
                sketched = self.index.add(paragraph, note.path, note.trust)
                if sketched is not None:
                    words, shingles = sketched
                    claims.append(
                        (array("q", words), array("q", shingles), paragraph if kept else None)
                    )
        return CachedNote(size, mtime_ns, info, claims)

    def _add_cached(self, cached: CachedNote) -> None:
        """`add` a note as the cache kept it, its claims' sketches as they were made."""
        info = cached.info
        self._add_info(info)
        if info.status == "active":
            for words, shingles, text in cached.claims:
                self.index.add_sketched(words, shingles, text or "", info.path, info.trust)

    def remember(self, path: str, size: int, mtime_ns: int, text: str, note: Note) -> None:
        """Keep a note this run wrote, as written; the oldest kept go past the limit."""
        self._forget_written(path)
        self.written[path] = (size, mtime_ns, text, note)
        self._written_chars += _written_chars(text, note)
        while self._written_chars > WRITTEN_KEPT_CHARS and len(self.written) > 1:
            self._forget_written(next(iter(self.written)))

    def _forget_written(self, path: str) -> None:
        kept = self.written.pop(path, None)
        if kept is not None:
            self._written_chars -= _written_chars(kept[2], kept[3])

    def forget_title(self, title: str, path: str) -> None:
        key = title.casefold()
        if self.titles.get(key) == path:
            del self.titles[key]
        if self.trusted_titles.get(key) == path:
            del self.trusted_titles[key]


# A note that exercises what the catalog makes of one: front matter, headings, footnotes,
# navigation, paragraphs, numbers, names and text outside ASCII.
_PROBE_NOTE = """---
title: Probe (part 2 of 3)
trust: trusted
status: active
origin:
  uri: file:///probe.md
  sha256: c0ffee
---
# Probe

Part 2 of 3 · previous: [[Probe (part 1 of 3)]] · next: [[Probe (part 3 of 3)]]

Mars has two small moons, Phobos and Deimos, found in 1877. [^src1]

Le café est à côté; 火星 has 2 moons.
With a second line.

[^src1]: Probe <file:///probe.md>
"""


@lru_cache(maxsize=1)
def reading_fingerprint() -> str:
    """What reading a note makes of it (its info, paragraphs and their sketches), in short:
    the catalog's cache is not used by code that reads notes differently."""
    # Here, not at the top: hashlib loads OpenSSL, which the commands that never file skip.
    import hashlib

    note = parse_note(_PROBE_NOTE, "notes/probe.md")
    paragraphs = claim_paragraphs(note.body)
    made = (vars(_info_of(note)), paragraphs, [sketches(text) for text in paragraphs])
    return hashlib.blake2b(repr(made).encode("utf-8"), digest_size=8).hexdigest()


def _info_of(note: Note) -> NoteInfo:
    origin = note.extra.get("origin")
    origin_uri = str(origin.get("uri")) if isinstance(origin, dict) and origin.get("uri") else None
    origin_sha = str(origin.get("sha256", "")) if isinstance(origin, dict) else None
    return NoteInfo(
        note.path, note.title, note.trust, note.status, origin_uri, origin_sha, note.writable
    )


def _written_chars(text: str, note: Note) -> int:
    # The rendered file and the parsed note's body: the bulk of what one entry holds.
    return len(text) + len(note.body)


@dataclass_own_init
class NoteChange:
    """One note a flush wrote, or would write: its text before (None: a new note) and after."""

    path: str
    before: str | None
    after: str


def section_title(claim: Claim) -> str:
    section = _clean_title(claim.section)
    title = _clean_title(claim.source_title) or "Untitled source"
    part = split_part(section)
    if part is not None and part[0].casefold() == title.casefold():
        return part_title(title, part[1], part[2])  # a part of the untitled opening
    if not section or section.casefold() == title.casefold():
        return title
    return f"{title} — {section}"


def _source_label(uri: str) -> str:
    parsed = urllib.parse.urlsplit(uri)
    if parsed.scheme in ("http", "https"):
        return parsed.hostname or uri
    return PurePosixPath(parsed.path or uri).name or uri


@dataclass_own_init
class Filer:
    """Files admitted claims into notes in memory, and writes every changed note at `flush`."""

    vault: Vault
    catalog: Catalog
    pending: dict[str, Note] = field(default_factory=dict)
    before: dict[str, str | None] = field(default_factory=dict)
    # Paragraphs to add per note, and notes whose footnotes changed: bodies are rebuilt once
    # at flush, not once per claim.
    appended: dict[str, list[str]] = field(default_factory=dict)
    touched: set[str] = field(default_factory=set)
    # The file names of `pending`, so a new note's name is checked against them at once.
    pending_names: set[str] = field(default_factory=set)

    # -- reading and staging -----------------------------------------------------------------

    def _load(self, path: str) -> Note:
        if path not in self.pending:
            file = self.vault.root / path
            cached = self.catalog.written.get(path)
            try:
                info = file.stat()
            except OSError:
                info = None
            if cached and info and (info.st_size, info.st_mtime_ns) == cached[:2]:
                self.before[path], self.pending[path] = cached[2], cached[3]
            else:
                self.before[path] = file.read_text(encoding="utf-8") if info else None
                self.pending[path] = self.vault.read_note(path)
            self.pending_names.add(PurePosixPath(path).name)
        return self.pending[path]

    def _new_note(self, title: str, claim: Claim, pinned: bool) -> Note:
        folder = self.vault.layout.notes
        taken = self.pending_names
        name = unique_name(slugify(title), lambda name: name in taken or (folder / name).exists())
        path = self.vault.relpath(folder / name)
        now = utc_now()
        extra: dict[str, object] = {
            "origin": {"uri": claim.source_uri, "sha256": claim.source_sha256}
        }
        if pinned:
            extra["trust_pinned"] = True
        note = Note(
            path=path,
            id=new_note_id(),
            title=title,
            body="",
            created=now,
            updated=now,
            sources=[
                Source(claim.source_uri, claim.source_sha256, _clean_title(claim.source_title))
            ],
            trust=claim.trust,
            status="active",
            extra=extra,
        )
        self.pending[path] = note
        self.pending_names.add(PurePosixPath(path).name)
        self.before[path] = None
        self.catalog.add(note, index_body=False)
        return note

    @staticmethod
    def _source_number(note: Note, claim: Claim) -> int:
        for number, source in enumerate(note.sources, 1):
            if source.uri == claim.source_uri and source.sha256 == claim.source_sha256:
                return number
        note.sources.append(
            Source(claim.source_uri, claim.source_sha256, _clean_title(claim.source_title))
        )
        return len(note.sources)

    @staticmethod
    def _rewrite_body(note: Note, new_paragraphs: list[str]) -> None:
        lines = [line for line in note.body.rstrip().split("\n") if not _FOOTNOTE_DEF.match(line)]
        # A part of a long section opens with the links to the parts beside it.
        links = navigation(note.title)
        lines = [line for line in lines if not NAVIGATION.match(line)]
        body = "\n\n".join(
            part for part in [links, "\n".join(lines).strip(), *new_paragraphs] if part
        )
        definitions = [
            f"[^src{number}]: {source.title or source.uri} <{source.uri}>"
            for number, source in enumerate(note.sources, 1)
        ]
        note.body = body + "\n\n" + "\n".join(definitions) + "\n"

    # -- filing --------------------------------------------------------------------------------

    def admit(self, claim: Claim, *, pinned: bool = False) -> tuple[str, bool]:
        """File a claim; (note path, whether it joined a note from another source)."""
        title = section_title(claim)
        note = self._target(title, claim)
        if note is None and title.casefold() in self.catalog.titles:
            # The title belongs to a note this claim may not join: file it beside that note.
            title = f"{title} ({_source_label(claim.source_uri)})"
            note = self._target(title, claim)
        if note is None:
            note = self._new_note(self._free_title(title), claim, pinned)
        info = self.catalog.notes.get(note.path)
        joined = bool(info and info.origin_uri != claim.source_uri)
        number = self._source_number(note, claim)
        separator = "\n" if "\n" in claim.text else " "
        self.appended.setdefault(note.path, []).append(f"{claim.text}{separator}[^src{number}]")
        self.touched.add(note.path)
        self.catalog.index.add(claim.text, note.path, note.trust)
        return note.path, joined

    def _target(self, title: str, claim: Claim) -> Note | None:
        """The existing note `claim` may join under `title`, if there is one."""
        for key in (title.casefold(), claim.section.casefold().strip()):
            path = self.catalog.titles.get(key) if key else None
            info = self.catalog.notes.get(path) if path else None
            if info is None or info.status != "active" or not info.writable:
                continue
            same_source = info.origin_uri == claim.source_uri
            if same_source and info.origin_sha != claim.source_sha256:
                continue  # an earlier version of this source: superseded, not extended
            if TRUST_RANK[claim.trust] >= TRUST_RANK.get(info.trust, 0):
                return self._load(info.path)
        return None

    def _free_title(self, title: str) -> str:
        candidate, number = title, 2
        while candidate.casefold() in self.catalog.titles:
            candidate = f"{title} ({number})"
            number += 1
        return candidate

    def merge(self, claim: Claim, path: str) -> str:
        """A near-duplicate: the note gains the claim's source, its text stays as it is."""
        note = self._load(path)
        before = len(note.sources)
        self._source_number(note, claim)
        if len(note.sources) != before:
            self.touched.add(path)
        return path

    def supersede(self, uri: str, new_sha: str) -> list[str]:
        """Mark the notes made from earlier versions of `uri` as superseded (kept, not deleted)."""
        changed = []
        for path in list(self.catalog.by_origin.get(uri, [])):
            info = self.catalog.notes.get(path)
            if info is None or info.status != "active" or info.origin_sha == new_sha:
                continue
            if not info.writable:
                continue
            note = self._load(path)
            self.catalog.forget_title(note.title, path)
            note.status = "superseded"
            note.title = f"{note.title} (superseded {(info.origin_sha or '')[:8]})"
            note.extra["superseded_by"] = new_sha
            note.updated = utc_now()
            info.status = "superseded"
            self.catalog.index.remove_path(path)
            changed.append(path)
        return changed

    def set_trust(self, path: str, trust: TrustLevel) -> None:
        note = self._load(path)
        note.trust = trust
        self.catalog.index.set_trust(path, trust)

    def flush(
        self, *, write: bool = True, extra: list[tuple[Path, bytes]] | None = None
    ) -> list[NoteChange]:
        """Write every changed note (and `extra` files first) in one batch."""
        changes = []
        now = utc_now()
        for path, note in self.pending.items():
            if path in self.touched:
                self._rewrite_body(note, self.appended.get(path, []))
                note.updated = now
            changes.append(NoteChange(path, self.before.get(path), render_note(note)))
        if write and (changes or extra):
            files = [(self.vault.resolve_inside(c.path), c.after.encode("utf-8")) for c in changes]
            atomic_write_many([*(extra or []), *files])
            for change in changes:
                try:
                    info = (self.vault.root / change.path).stat()
                except OSError:
                    continue
                note = self.pending[change.path]
                self.catalog.remember(
                    change.path, info.st_size, info.st_mtime_ns, change.after, note
                )
                self.catalog.stats[change.path] = (info.st_size, info.st_mtime_ns)

        self.pending.clear()
        self.pending_names.clear()
        self.before.clear()
        self.appended.clear()
        self.touched.clear()
        return changes
