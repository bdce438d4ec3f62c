"""The whoosh full-text index of a vault's notes: derived state that can always be rebuilt.

The index lives in `.lore/index` beside a manifest of each note file's size and mtime (see
lore.core.index_manifest). On open the manifest is compared with the disk, so notes added,
edited or deleted outside Lore are picked up without a rebuild; every write through the vault
updates both at once.
"""

from __future__ import annotations

import pickle
import re
import threading
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from whoosh import index as whoosh_index
from whoosh.columns import VarBytesColumn
from whoosh.fields import COLUMN, ID, KEYWORD, STORED, TEXT, Schema
from whoosh.filedb.filestore import RamStorage
from whoosh.query import And, NullQuery, Query, Term
from whoosh.scoring import BM25F

from lore.core.dataclass_lite import dataclass_lite
from lore.core.index_manifest import FileStat, Manifest, Signature, card_of
from lore.core.notes import Note
from lore.core.search import whoosh_private
from lore.core.search.columns import StoredColumn
from lore.core.search.phrase import AdjacentPhrase, whoosh_phrases
from lore.core.search.query import (
    ANALYZER,
    MAX_QUERY_TERMS,
    MAX_QUERY_WORDS,
    SEARCH_FIELDS,
    analyse,
    body_terms,
    build_simple_query,
    phrases_in_text_fields,
    plain_words,
    prefer_union_matchers,
    term_lookups,
    typed_query,
    words_query,
)
from lore.core.search.ranking import top_hits
from lore.core.search.scoring import TableBM25F
from lore.core.search.snippets import make_snippet
from lore.core.search.terms import memo_term_lookups
from lore.core.stemming import stem_word
from lore.errors import VaultError

if TYPE_CHECKING:
    # Imported when a query is first parsed: words, "phrases", tag:x and title:x are built
    # without it, and whoosh's parser is several modules that a plain search never uses.
    from whoosh import qparser

MERGE_AT_SEGMENTS = 4
# How many MB of postings (as whoosh counts them, below what they take) a writer adding many
# notes holds before it sorts them into a run on disk. Past it, memory stays flat however
# many notes are added: building the index of the Python documentation (4,400 notes) peaks
# 60 MB lower with 64 than with 256, and takes about a third longer.
WRITER_POOL_MB = 64
# Pasted text is searched by its rarest words among the first PASTED_WORDS_READ, as many as
# fit PASTED_POSTINGS (the rarest always): pasted code is mostly `self`, `return` and
# `import`, words nearly every note of code holds, and its rare names are what find its note.
PASTED_WORDS_READ = 256
PASTED_POSTINGS = 20_000
_FIELD_SYNTAX = re.compile(r"\b(tag|tags|title):", re.IGNORECASE)
_ODD_SYNTAX = re.compile(r"[\[\]{}()^~*?\\]|\b(?:AND|OR|NOT|TO)\s*$|^\s*(?:AND|OR|NOT)\b")


# What a search hit shows, in this order, pickled into the uncompressed `card` column: whoosh
# keeps stored fields zlib-compressed one note at a time, and inflating them cost a search
# about 25 µs a hit. The body is a column of its own, read only when a snippet is wanted.
_CARD_FIELDS = ("path", "id", "title", "tags", "updated", "trust", "status")


def _schema() -> Schema:
    analyzer = ANALYZER
    return Schema(
        path=ID(stored=True, unique=True),
        id=ID(stored=True),
        title=TEXT(stored=True, field_boost=3.0, analyzer=analyzer),
        title_key=ID,
        tags=KEYWORD(stored=True, commas=True, lowercase=True, scorable=True, field_boost=2.0),
        body=TEXT(analyzer=analyzer),
        updated=STORED,
        trust=ID(stored=True),
        status=ID(stored=True),
        card=COLUMN(VarBytesColumn(write_offsets_cutoff=0)),
        body_text=COLUMN(VarBytesColumn(write_offsets_cutoff=0)),
    )


@dataclass_lite
class SearchHit:
    """One note a search found: what a list of results shows, its score and where the words
    it matched are in its snippet."""

    path: str
    id: str
    title: str
    score: float
    snippet: str
    highlights: list[tuple[int, int]]
    tags: list[str]
    updated: str | None
    trust: str
    status: str
    # The note's body, read from the index only when the search asked for it.
    body: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "id": self.id,
            "title": self.title,
            "score": round(self.score, 4),
            "snippet": self.snippet,
            "tags": self.tags,
            "updated": self.updated,
            "trust": self.trust,
            "status": self.status,
        }


class _SearchRequest(NamedTuple):
    """What one search asks for, as `NoteIndex.search` was called."""

    text: str
    query: Query
    limit: int
    restrict: Query | None
    mask: Query | None
    current_first: bool
    snippets: bool
    with_body: bool


@dataclass_lite
class ReconcileReport:
    """What bringing the index up to date with the notes did, file by file."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    rebuilt: bool = False

    @property
    def touched(self) -> int:
        return len(self.added) + len(self.changed) + len(self.removed)


def _is_null(query: Query) -> bool:
    return query is NullQuery or isinstance(query, type(NullQuery))


def _plain_words(query: str) -> list[str]:
    """The words of a query with every piece of syntax removed: the fallback parse."""
    return plain_words(_FIELD_SYNTAX.sub(" ", query))


def _odd_syntax(query: str) -> bool:
    """Brackets, operators or an unclosed quote: syntax a user rarely means on purpose."""
    return bool(_ODD_SYNTAX.search(query)) or query.count('"') % 2 == 1


def _whoosh_top(
    searcher: Any, query: Query, limit: int, restrict: Query | None, mask: Query | None
) -> list[tuple[float, int]]:
    """The best (score, docnum) pairs as whoosh's own public search ranks them."""
    return list(searcher.search(query, limit=limit, filter=restrict, mask=mask).top_n)


def _top_hits(
    searcher: Any,
    query: Query,
    limit: int,
    restrict: Query | None,
    mask: Query | None,
    current_first: bool = False,
    *,
    fast: bool = True,
) -> list[tuple[float, int]]:
    """The best (score, docnum) pairs, ranked a term at a time or, failing that, by whoosh.

    With `current_first`, superseded notes come after every current one, however they score.
    Without `fast`, whoosh ranks them all.
    """
    if current_first:
        superseded = Term("status", "superseded")
        current = _top_hits(searcher, query, limit, None, superseded, fast=fast)
        if len(current) < limit:
            current += _top_hits(searcher, query, limit - len(current), superseded, None, fast=fast)
        return current
    if fast:
        allow = set(searcher.docs_for_query(restrict)) if restrict is not None else None
        exclude = set(searcher.docs_for_query(mask)) if mask is not None else None
        top = top_hits(searcher, query, limit, allow=allow, exclude=exclude)
        if top is not None:
            return top
    return _whoosh_top(searcher, query, limit, restrict, mask)


def _commit_small(writer: Any) -> None:
    """Commit a one-note change without the merge whoosh would otherwise do every time.

    Merging small segments costs several times the write itself; each commit adds a segment,
    so they are merged once MERGE_AT_SEGMENTS have piled up (search slows a little per segment).
    """
    if len(writer.segments) < MERGE_AT_SEGMENTS:
        writer.commit(merge=False)
    else:
        writer.commit()


# Loads a note for indexing; returns None (with a reason) for files that must be skipped.
NoteLoader = Callable[[str], tuple[Note | None, str | None]]


class _MemoryStorage(RamStorage):  # type: ignore[misc]
    """An index wholly in memory: whoosh's own keeps its scratch files in the temp folder."""

    def temp_storage(self, name: str | None = None) -> RamStorage:
        return RamStorage()


def _abandon(writer: Any) -> None:
    """Give up a writer that failed, and always let go of whoosh's write lock.

    whoosh's `cancel` closes the segment first and releases the lock last; on a disk that
    refused the segment's files the close fails too, and the lock stayed held by this
    process until the writer happened to be collected, so the next write failed with
    "index locked".
    """
    try:
        writer.cancel()
    except Exception:
        lock = writer.writelock
        if lock is not None:
            lock.release()
            writer.writelock = None


class NoteIndex:
    def __init__(self, folder: Path, loader: NoteLoader) -> None:
        self.folder = folder
        self.manifest = Manifest(folder)
        self._loader = loader
        self._index: Any = None
        self._searcher: Any = None
        self._searcher_signature: Signature | None = None
        self._column_readers: tuple[Any, Any, Any] | None = None
        self._parser: qparser.MultifieldParser | None = None
        self._search_lock = threading.Lock()
        # False while the open searcher lacks a whoosh private the fast path reads.
        self.fast_path = True
        self._reported_missing: list[str] = []
        # Searches answered by whoosh's own searcher instead of the fast path.
        self.fallbacks = 0

    # -- opening -------------------------------------------------------------------------

    def _open_existing(self) -> bool:
        if not self.manifest.load():
            return False
        try:
            if not whoosh_index.exists_in(str(self.folder)):
                return False
            self._index = whoosh_index.open_dir(str(self.folder))
        except Exception:
            return False
        # An index written before the search columns existed is rebuilt once.
        return set(self._index.schema.names()) == set(_schema().names())

    def open(
        self, scan: Callable[[], Iterable[FileStat]], under_lock: Callable[[], Any]
    ) -> ReconcileReport:
        """Open the index and bring it in line with the notes `scan` lists.

        Takes the lock only to write, and lists the notes again once it holds it: a note
        another process wrote in between would otherwise be taken for one removed.
        """
        if self._open_existing():
            report = self._diff(list(scan()))
            if report.touched == 0 and self.manifest.has_every_card:
                return report
            with under_lock():
                self.manifest.load()
                report = self._apply(self._diff(list(scan())))
                if not self.manifest.has_every_card:
                    self.manifest.add_cards(self.all_documents())
                    self.manifest.save()
                return report
        with under_lock():
            stats = list(scan())
            if self._open_existing():
                return self._apply(self._diff(stats))
            return self.rebuild(stats)

    def open_read_only(self, files: Iterable[FileStat]) -> ReconcileReport:
        """Open without writing a byte, for a full or read-only disk.

        An index on disk is searched as it was written: what changed since is reported, not
        applied. With no usable index on disk, one is built in memory for this process only.
        """
        stats = list(files)
        if self._open_existing():
            return self._diff(stats)
        self._index = _MemoryStorage().create_index(_schema())
        self.manifest.files = {}
        self._forget_searcher()
        writer = self._index.writer()
        report = self._fill(writer, stats)
        writer.commit()
        return report

    def _diff(self, stats: list[FileStat]) -> ReconcileReport:
        changes = self.manifest.compare(stats)
        self._pending_stats = changes.stats
        return ReconcileReport(
            added=changes.added, changed=changes.changed, removed=changes.removed
        )

    def _writer(self, **options: Any) -> Any:
        """whoosh's writer; its lock still held by a writer that failed is one clear error,
        which a read-only command answers by searching the index as it is."""
        try:
            return self._index.writer(**options)
        except whoosh_index.LockError:
            raise VaultError(
                f"the search index in {self.folder} is locked by a write that did not finish"
            ) from None

    def _apply(self, report: ReconcileReport) -> ReconcileReport:
        if report.touched == 0:
            return report
        writer = self._writer(timeout=30.0, limitmb=WRITER_POOL_MB, compound=False)
        try:
            for relpath in report.removed:
                writer.delete_by_term("path", relpath)
                self.manifest.files.pop(relpath, None)
            for relpath in [*report.added, *report.changed]:
                size, mtime = self._pending_stats[relpath]
                note, skipped = self._loader(relpath)
                card = None
                if note is None:
                    writer.delete_by_term("path", relpath)
                    report.skipped[relpath] = skipped or "skipped"
                else:
                    document = self._document(note)
                    writer.update_document(**document)
                    card = card_of(document)
                self.manifest.files[relpath] = [size, mtime, skipped, card]
            writer.commit()
        except BaseException:
            _abandon(writer)
            raise
        self.manifest.save()
        self._forget_searcher()
        return report

    def rebuild(self, files: Iterable[FileStat]) -> ReconcileReport:
        """Build a fresh index from `files`. The caller holds the vault lock."""
        stats = list(files)
        try:
            if self.folder.exists():
                # Here, not at the top: shutil brings the compression modules, which
                # every search would load for the rare rebuild.
                import shutil

                shutil.rmtree(self.folder)
            self.folder.mkdir(parents=True)
            self._index = whoosh_index.create_in(str(self.folder), _schema())
        except OSError as exc:
            raise VaultError(
                f"cannot create the search index in {self.folder}: {exc.strerror}"
            ) from None
        self.manifest.files = {}
        self._forget_searcher()
        writer = self._writer(procs=1, limitmb=WRITER_POOL_MB, compound=False)
        try:
            report = self._fill(writer, stats)
            writer.commit(optimize=True)
        except BaseException:
            _abandon(writer)
            raise
        self.manifest.save()
        return report

    def _fill(self, writer: Any, stats: list[FileStat]) -> ReconcileReport:
        """Add every loadable note of `stats` to a new index's writer; the manifest follows."""
        report = ReconcileReport(rebuilt=True)
        for relpath, size, mtime in stats:
            note, skipped = self._loader(relpath)
            card = None
            if note is None:
                report.skipped[relpath] = skipped or "skipped"
            else:
                document = self._document(note)
                writer.add_document(**document)
                card = card_of(document)
                report.added.append(relpath)
            self.manifest.files[relpath] = [size, mtime, skipped, card]
        return report

    # -- single-note updates (the caller holds the vault lock) ---------------------------

    @staticmethod
    def _document(note: Note) -> dict[str, Any]:
        document: dict[str, Any] = {
            "path": note.path,
            "id": note.id,
            "title": note.title,
            "title_key": note.title.casefold(),
            "tags": ",".join(note.tags),
            "body": note.body,
            "updated": note.updated,
            "trust": note.trust,
            "status": note.status,
        }
        card = tuple(document[name] for name in _CARD_FIELDS)
        document["card"] = pickle.dumps(card, protocol=pickle.HIGHEST_PROTOCOL)
        document["body_text"] = note.body.encode("utf-8")
        return document

    def upsert(self, note: Note, size: int, mtime_ns: int) -> None:
        self.manifest.reload_if_changed()
        document = self._document(note)
        writer = self._writer(timeout=30.0, compound=False)
        try:
            writer.update_document(**document)
            _commit_small(writer)
        except BaseException:
            _abandon(writer)
            raise
        self.manifest.record(note.path, [size, mtime_ns, None, card_of(document)])

    def remove(self, relpath: str) -> None:
        self.manifest.reload_if_changed()
        writer = self._writer(timeout=30.0, compound=False)
        try:
            writer.delete_by_term("path", relpath)
            _commit_small(writer)
        except BaseException:
            _abandon(writer)
            raise
        self.manifest.record(relpath, None)

    # -- reading ---------------------------------------------------------------------------

    def skipped_files(self) -> dict[str, str]:
        return {path: entry[2] for path, entry in self.manifest.files.items() if entry[2]}

    def indexed_paths(self) -> set[str]:
        return {path for path, entry in self.manifest.files.items() if not entry[2]}

    def _current_searcher(self) -> Any:
        # Every commit, from this process or another, is followed by a new manifest, so one
        # stat tells whether the searcher may be stale; whoosh's own check lists the folder.
        signature = self.manifest.signature()
        if self._searcher is None:
            self._searcher = self._open_searcher()
        elif signature != self._searcher_signature:
            # Not `searcher.refresh()`: whoosh-reloaded's reader reuse adds the old segments
            # back to the new list, so merged or deleted documents would come back.
            self._drop_searcher()
            self._searcher = self._open_searcher()
        self._searcher_signature = signature
        return self._searcher

    def _open_searcher(self) -> Any:
        """A searcher for the fast path or, when whoosh lacks what it reads, a plain one."""
        searcher = self._index.searcher(weighting=TableBM25F())
        missing = whoosh_private.missing_privates(searcher)
        self.fast_path = not missing
        if not missing:
            return searcher
        searcher.close()
        if missing != self._reported_missing or whoosh_private.debugging():
            self._reported_missing = missing
            whoosh_private.report_missing(missing)
        return self._index.searcher(weighting=BM25F())

    def _columns(self, searcher: Any) -> tuple[StoredColumn, StoredColumn]:
        """The `card` and `body_text` columns of `searcher`, opened once per searcher."""
        if self._column_readers is None or self._column_readers[0] is not searcher:
            self._close_columns()
            self._column_readers = (
                searcher,
                StoredColumn(searcher, "card", mapped=self.fast_path),
                StoredColumn(searcher, "body_text", mapped=self.fast_path),
            )
        return self._column_readers[1], self._column_readers[2]

    def _close_columns(self) -> None:
        if self._column_readers is not None:
            self._column_readers[1].close()
            self._column_readers[2].close()
            self._column_readers = None

    def _query_parser(self) -> qparser.MultifieldParser:
        if self._parser is None:
            from whoosh import qparser

            # Only the searched fields can be named (`tag:`, `title:`): `path:`, `id:` or
            # `status:` in a pasted line are words, as they are to the person who pasted it.
            full = _schema()
            parser = qparser.MultifieldParser(
                list(SEARCH_FIELDS),
                Schema(**{name: full[name] for name in SEARCH_FIELDS}),
                group=qparser.OrGroup,
                phraseclass=AdjacentPhrase,
            )
            parser.add_plugin(qparser.FieldAliasPlugin({"tags": ["tag"]}))
            # What a person rarely types on purpose and often pastes (`[...]`, `x*`, `*:*`)
            # would stand for every term it covers: those characters are read as words.
            for plugin in (qparser.WildcardPlugin, qparser.RangePlugin, qparser.EveryPlugin):
                parser.remove_plugin_class(plugin)
            self._parser = parser
        return self._parser

    def parse(self, text: str) -> Query:
        """The query `text` asks for; it never looks up more than MAX_QUERY_TERMS terms."""
        return prefer_union_matchers(self._parse(text))

    def _parse(self, text: str) -> Query:
        if not typed_query(text):
            return words_query(self._rarest_words(plain_words(text, PASTED_WORDS_READ)))
        simple = build_simple_query(text)
        if simple is not None:
            return simple
        try:
            query = self._query_parser().parse(text)
        except Exception:  # whoosh's parser trips on some runs of operators (`NOT NOT … x`)
            query = None
        if query is None or _is_null(query) or term_lookups(query) > MAX_QUERY_TERMS:
            return words_query(_plain_words(text))
        return phrases_in_text_fields(query)

    def _rarest_words(self, words: list[str]) -> list[str]:
        """The rarest of `words` that fit PASTED_POSTINGS, at most MAX_QUERY_WORDS, in order."""
        frequency = self.document_frequency(words)
        held = sorted((word for word in words if frequency[word]), key=frequency.__getitem__)
        kept: set[str] = set()
        spent = 0
        for word in held[:MAX_QUERY_WORDS]:
            if kept and spent + frequency[word] > PASTED_POSTINGS:
                break
            kept.add(word)
            spent += frequency[word]
        return [word for word in words if word in kept]

    def search(
        self,
        text: str,
        limit: int = 10,
        *,
        status: str | None = None,
        snippets: bool = True,
        with_body: bool = False,
    ) -> list[SearchHit]:
        if not text.strip():
            return []
        query = self.parse(text)
        # Superseded notes are few: masking them out is far cheaper than filtering on the
        # many active ones.
        mask = Term("status", "superseded") if status == "active" else None
        restrict = Term("status", status) if status and status != "active" else None
        request = _SearchRequest(
            text, query, limit, restrict, mask, status is None, snippets, with_body
        )
        with self._search_lock:
            searcher = self._current_searcher()
            if self.fast_path:
                try:
                    return self._answer(searcher, request, fast=True)
                except Exception as error:
                    whoosh_private.report_failure(error)
                self.fallbacks += 1
                # A searcher of whoosh's own for this one search: the open one's weighting
                # is part of the fast path that just failed.
                with self._index.searcher(weighting=BM25F()) as public:
                    cards = StoredColumn(public, "card", mapped=False)
                    bodies = StoredColumn(public, "body_text", mapped=False)
                    return self._answer(public, request, fast=False, columns=(cards, bodies))
            self.fallbacks += 1
            return self._answer(searcher, request, fast=False)

    def _answer(
        self,
        searcher: Any,
        request: _SearchRequest,
        *,
        fast: bool,
        columns: tuple[StoredColumn, StoredColumn] | None = None,
    ) -> list[SearchHit]:
        """The hits of one search, ranked by the fast path or by whoosh's public search."""

        def ranked(query: Query) -> list[tuple[float, int]]:
            return _top_hits(
                searcher,
                query if fast else whoosh_phrases(query),
                request.limit,
                request.restrict,
                request.mask,
                request.current_first,
                fast=fast,
            )

        query = request.query
        with memo_term_lookups(searcher) if fast else nullcontext():
            top = ranked(query)
            # Syntax whoosh accepted but read oddly (`tag:[x`, `a TO}`) finds nothing: the
            # words alone are what the user most likely meant. (Pasted text was words already.)
            if not top and typed_query(request.text) and _odd_syntax(request.text):
                plain = _plain_words(request.text)
                if plain:
                    query = prefer_union_matchers(words_query(plain))
                    top = ranked(query)
        # An index with no documents has no columns to read hits from.
        if not top:
            return []
        snippets, with_body = request.snippets, request.with_body
        terms = body_terms(query) if snippets else set()
        cards, bodies = columns if columns is not None else self._columns(searcher)
        hits = []
        for score, docnum in top:
            path, note_id, title, tags, updated, trust, status = pickle.loads(cards[docnum])
            snippet: str = ""
            spans: list[tuple[int, int]] = []
            body = bodies[docnum].decode("utf-8") if snippets or with_body else ""
            if snippets:
                snippet, spans = make_snippet(body, terms, stem_word)
            hits.append(
                SearchHit(
                    path=path,
                    id=note_id,
                    title=title,
                    score=float(score or 0.0),
                    snippet=snippet,
                    highlights=spans,
                    tags=[tag for tag in (tags or "").split(",") if tag],
                    updated=updated,
                    trust=trust or "",
                    status=status or "",
                    body=body if with_body else "",
                )
            )
        return hits

    def document_frequency(self, words: Iterable[str]) -> dict[str, int]:
        """For each word, how many titles and bodies hold it (0 for a stopword): the number
        of postings a search for it must score, so callers can keep a query affordable.
        """
        with self._search_lock:
            reader = self._current_searcher().reader()
            counts = {}
            for word in words:
                counts[word] = sum(
                    reader.doc_frequency(field_name, token.text)
                    for token in ANALYZER(word)
                    for field_name in ("title", "body")
                )
            return counts

    def note_count(self) -> int:
        """How many notes the index holds."""
        with self._search_lock:
            return int(self._current_searcher().doc_count())

    def paths_mentioning(self, text: str) -> list[str] | None:
        """Paths of the notes whose body holds every indexed word of `text`, in any order.

        None when `text` has no indexed word at all (`C++`, `A`): then any note may mention it.
        """
        terms = analyse(text)
        if not terms:
            return None
        query = And([Term("body", term) for term in terms])
        with self._search_lock:
            searcher = self._current_searcher()
            return [
                searcher.stored_fields(docnum)["path"] for docnum in searcher.docs_for_query(query)
            ]

    def lookup(self, **terms: str) -> list[dict[str, Any]]:
        """Stored fields of the notes whose exact fields equal `terms` (id, path, title_key)."""
        with self._search_lock:
            searcher = self._current_searcher()
            return [dict(fields) for fields in searcher.documents(**terms)]

    def note_listing(self) -> list[dict[str, Any]]:
        """Stored fields of every note, as `all_documents` gives them, read from the manifest
        when it holds every note's card (the index itself is read only when it does not)."""
        self.manifest.reload_if_changed()
        listing = self.manifest.listing()
        return self.all_documents() if listing is None else listing

    def all_documents(self) -> list[dict[str, Any]]:
        """Stored fields of every note, read from the index itself (doctor checks them)."""
        with self._search_lock:
            searcher = self._current_searcher()
            docs = []
            for fields in searcher.all_stored_fields():
                fields = dict(fields)
                fields.pop("body", None)
                docs.append(fields)
            return docs

    def _drop_searcher(self) -> None:
        if self._searcher is not None:
            self._close_columns()
            self._searcher.close()
            self._searcher = None

    def _forget_searcher(self) -> None:
        """Drop the searcher from outside the read path: under the lock, as another thread
        may be reading through it, or dropping it itself."""
        with self._search_lock:
            self._drop_searcher()

    def close(self) -> None:
        self._forget_searcher()
