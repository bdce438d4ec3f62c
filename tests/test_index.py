"""The whoosh index: ranking, query syntax, snippets, and never being stale."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lore.core.search import NoteIndex
from lore.core.vault import Vault


def _titles(vault: Vault, query: str, limit: int = 10) -> list[str]:
    return [hit.title for hit in vault.index.search(query, limit=limit)]


def _touch_later(path: Path, seconds: int = 5) -> None:
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + seconds * 1_000_000_000))


def test_sample_vault_search_finds_the_right_note(sample_vault: Vault) -> None:
    assert "Jupiter" in _titles(sample_vault, "Great Red Spot", 2)
    assert _titles(sample_vault, "great red spot jupiter storm", 1) == ["Jupiter"]
    assert _titles(sample_vault, "kuiper belt", 1) == ["Kuiper Belt"]
    assert _titles(sample_vault, "europa ocean", 1) == ["Europa"]


def test_title_is_boosted_over_body(vault: Vault) -> None:
    vault.create_note("Gardening", "Tomatoes like sun. Magnetosphere is mentioned once here.")
    vault.create_note("Magnetosphere", "A field around a planet that deflects charged particles.")
    assert _titles(vault, "magnetosphere")[0] == "Magnetosphere"


def test_bm25_prefers_the_note_about_the_word(vault: Vault) -> None:
    vault.create_note("A", "comet " * 8 + "ice dust tail")
    vault.create_note("B", "a long text about many things " * 20 + "and one comet")
    assert _titles(vault, "comet") == ["A", "B"]


def test_stemming_matches_word_forms(vault: Vault) -> None:
    vault.create_note("Orbits", "Planets are orbiting the star.")
    assert _titles(vault, "orbit") == ["Orbits"]


def test_quoted_phrase_needs_the_words_together(vault: Vault) -> None:
    vault.create_note("Together", "the red spot is a storm")
    vault.create_note("Apart", "a spot of tea and a red door")
    assert _titles(vault, '"red spot"') == ["Together"]
    assert sorted(_titles(vault, "red spot")) == ["Apart", "Together"]


def test_tag_and_title_fields(vault: Vault) -> None:
    vault.create_note("Io", "volcanic moon", tags=["moon", "galilean"])
    vault.create_note("Venus", "a volcanic planet", tags=["planet"])
    vault.create_note("Moon landing", "Apollo 11 in 1969", tags=["mission"])
    assert _titles(vault, "tag:moon") == ["Io"]
    assert _titles(vault, "tags:planet") == ["Venus"]
    assert _titles(vault, "title:moon") == ["Moon landing"]
    assert _titles(vault, "volcanic tag:planet")[0] == "Venus"


def test_snippet_highlights_the_matched_words(vault: Vault) -> None:
    body = (
        "Intro words. " * 40 + "The heliopause marks the edge of the heliosphere. " + "Tail. " * 40
    )
    vault.create_note("Edge", body)
    [hit] = vault.index.search("heliopause")
    assert "heliopause" in hit.snippet.lower()
    assert hit.highlights
    assert all(hit.snippet[start:end].lower() == "heliopause" for start, end in hit.highlights)
    assert len(hit.snippet) < len(body)


def test_snippet_falls_back_to_the_start_when_only_the_title_matches(vault: Vault) -> None:
    vault.create_note("Callisto", "Heavily cratered and old.")
    [hit] = vault.index.search("callisto")
    assert hit.snippet.startswith("Heavily cratered")
    assert hit.highlights == []


def test_unparseable_queries_fall_back_to_plain_terms(vault: Vault) -> None:
    vault.create_note("Pluto", "a dwarf planet in the Kuiper belt")
    for query in [
        '"unclosed pluto',
        "pluto AND",
        "(pluto",
        "title:",
        "pluto)))",
        "tag:[pluto",
        "NOT",
        "pluto^^^",
        "kuiper~~",
        "*",
        "pluto OR OR",
        "{pluto TO}",
        ":::",
    ]:
        hits = vault.index.search(query)
        if any(
            ch.isalpha() for ch in query.replace("title", "").replace("tag", "").replace("NOT", "")
        ):
            assert [hit.title for hit in hits] == ["Pluto"], query


def test_a_field_query_with_no_match_does_not_fall_back(vault: Vault) -> None:
    vault.create_note("Pluto", "moon of nothing")
    assert _titles(vault, "tag:moon") == []
    assert _titles(vault, '"pluto moon"') == []


def test_empty_query_returns_nothing(vault: Vault) -> None:
    vault.create_note("Pluto", "dwarf")
    assert vault.index.search("   ") == []


def test_limit_and_status_filter(vault: Vault) -> None:
    for number in range(5):
        vault.create_note(f"Asteroid {number}", "rocky asteroid")
    assert len(vault.index.search("asteroid", limit=3)) == 3
    old = vault.find("Asteroid 0")
    old.status = "superseded"
    vault.save(old)
    active = vault.index.search("asteroid", status="active")
    assert "Asteroid 0" not in [hit.title for hit in active]
    everything = vault.index.search("asteroid", status=None)
    assert "Asteroid 0" in [hit.title for hit in everything]


# -- never stale -------------------------------------------------------------------------------


def test_create_save_rename_remove_update_the_index_at_once(vault: Vault) -> None:
    note = vault.create_note("Ceres", "largest object in the asteroid belt")
    assert _titles(vault, "asteroid") == ["Ceres"]
    note.body = "a dwarf planet with bright spots"
    vault.save(note)
    assert _titles(vault, "asteroid") == []
    assert _titles(vault, "bright spots") == ["Ceres"]
    vault.rename_note("Ceres", "Ceres (dwarf planet)")
    assert _titles(vault, "bright") == ["Ceres (dwarf planet)"]
    assert len(vault.index.all_documents()) == 1
    vault.remove_note("Ceres (dwarf planet)")
    assert _titles(vault, "bright") == []
    assert vault.index.all_documents() == []


def test_reconcile_picks_up_outside_edits_adds_and_deletes(vault: Vault) -> None:
    vault.create_note("Kept", "unchanged words")
    edited = vault.create_note("Edited", "original words")
    gone = vault.create_note("Gone", "doomed words")
    vault.close()

    (vault.root / gone.path).unlink()
    edited_path = vault.root / edited.path
    edited_path.write_text(edited_path.read_text().replace("original", "rewritten"))
    _touch_later(edited_path)
    (vault.layout.notes / "deep" / "er").mkdir(parents=True)
    (vault.layout.notes / "deep" / "er" / "added.md").write_text("# Added by hand\n\nnew words\n")
    (vault.layout.notes / ".hidden").mkdir()
    (vault.layout.notes / ".hidden" / "secret.md").write_text("# Secret\n")
    (vault.layout.notes / "readme.txt").write_text("not a note")

    reopened = Vault.open(vault.root)
    try:
        report = reopened.reconcile()
        assert not report.rebuilt
        assert report.added == ["notes/deep/er/added.md"]
        assert report.changed == [edited.path]
        assert report.removed == [gone.path]
        assert _titles(reopened, "rewritten") == ["Edited"]
        assert _titles(reopened, "original") == []
        assert _titles(reopened, "doomed") == []
        assert _titles(reopened, "new") == ["Added by hand"]
        assert _titles(reopened, "secret") == []
        again = Vault.open(vault.root)
        assert again.reconcile().touched == 0
        again.close()
    finally:
        reopened.close()


def test_reconcile_of_a_live_vault_sees_changes_made_by_another_process(vault: Vault) -> None:
    vault.create_note("First", "alpha")
    other = Vault.open(vault.root)
    other.create_note("Second", "beta")
    other.close()
    assert _titles(vault, "beta") == ["Second"]  # the same index folder, refreshed searcher
    (vault.layout.notes / "third.md").write_text("# Third\n\ngamma\n")
    vault.reconcile()
    assert _titles(vault, "gamma") == ["Third"]


def test_size_change_with_same_mtime_is_seen(vault: Vault) -> None:
    note = vault.create_note("Same time", "short")
    path = vault.root / note.path
    info = path.stat()
    vault.close()
    path.write_text(path.read_text().replace("short", "much longer text"))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    reopened = Vault.open(vault.root)
    assert _titles(reopened, "longer") == ["Same time"]
    reopened.close()


def test_deleted_index_is_rebuilt_and_corrupt_manifest_too(vault: Vault) -> None:
    vault.create_note("Durable", "words that survive")
    vault.close()
    manifest = vault.layout.index / "manifest.json"
    manifest.write_text("{not json")
    reopened = Vault.open(vault.root)
    assert _titles(reopened, "survive") == ["Durable"]
    assert reopened.last_reconcile is not None and reopened.last_reconcile.rebuilt
    reopened.close()
    import shutil

    shutil.rmtree(vault.layout.state)
    third = Vault.open(vault.root)
    assert _titles(third, "survive") == ["Durable"]
    third.close()


def test_reindex_rebuilds_from_scratch(sample_vault: Vault) -> None:
    before = {doc["path"] for doc in sample_vault.index.all_documents()}
    report = sample_vault.reindex()
    assert report.rebuilt and sorted(report.added) == sorted(before)
    assert _titles(sample_vault, "kuiper belt", 1) == ["Kuiper Belt"]


def test_skipped_files_are_remembered_and_retried_when_they_change(vault: Vault) -> None:
    path = vault.layout.notes / "blob.md"
    path.write_bytes(b"\x00\x01binary")
    report = vault.reconcile()
    assert report.skipped == {"notes/blob.md": "binary file"}
    assert vault.index.skipped_files() == {"notes/blob.md": "binary file"}
    path.write_text("# Blob\n\nnow text\n")
    _touch_later(path)
    vault.reconcile()
    assert _titles(vault, "now text") == ["Blob"]
    assert vault.index.skipped_files() == {}


def test_index_lives_in_derived_state(vault: Vault) -> None:
    vault.create_note("Where", "x")
    assert isinstance(vault.index, NoteIndex)
    assert vault.index.folder == vault.layout.state / "index"
    assert (vault.root / ".gitignore").read_text().count(".lore/") == 1


def test_a_live_index_never_shows_notes_another_process_removed_or_merged(vault: Vault) -> None:
    for number in range(12):
        vault.create_note(f"Comet {number}", "icy comet nucleus")
    assert len(vault.index.search("comet", limit=50)) == 12
    other = Vault.open(vault.root)
    for number in range(6):
        other.remove_note(f"Comet {number}")
    other.create_note("Comet 99", "icy comet nucleus")
    other.close()
    titles = sorted(_titles(vault, "comet", 50))
    assert titles == sorted([f"Comet {n}" for n in range(6, 12)] + ["Comet 99"])
    assert len(vault.index.all_documents()) == 7


def test_snippet_highlights_word_forms_and_dotted_names(vault: Vault) -> None:
    vault.create_note("Paths", "Joining with os.path is portable. Orbiting moons orbited.")
    [hit] = vault.index.search("orbit")
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["Orbiting", "orbited"]
    [hit] = vault.index.search('"os.path"')
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["os.path"]


def test_the_quick_query_path_builds_what_the_full_parser_builds(vault: Vault) -> None:
    from lore.core.search.query import build_simple_query

    parser = vault.index._query_parser()
    queries = [
        "magnetosphere", "great red spot", '"red spot"', '"the red spot"', "tag:moon",
        "tags:Ice-Giant", "title:moons", "the", "orbit tag:moon \"great red\"", "Jupiter",
        "x y", '"single"', "é café", "tag:moon title:io pluto", "snake_case", "co2 2026",
    ]  # fmt: skip
    for query in queries:
        quick = build_simple_query(query)
        assert quick is not None, query
        assert quick.normalize() == parser.parse(query).normalize(), query
    for query in ["a AND b", "(x)", "pl*", "os.path", "title:[a TO b]", 'odd "quote']:
        assert build_simple_query(query) is None, query


def test_manifest_journal_is_folded_and_survives_a_torn_line(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lore.core import index_manifest

    monkeypatch.setattr(index_manifest, "COMPACT_AFTER", 3)
    for number in range(7):
        vault.create_note(f"Moonlet {number}", "tiny moon")
    journal = vault.layout.index / "manifest.jsonl"
    assert len(journal.read_text().splitlines()) <= 3  # older lines went into the snapshot
    with open(journal, "ab") as handle:
        handle.write(b'{"path": "notes/moonlet-0.md", "entry": [1, 2')
    vault.close()
    reopened = Vault.open(vault.root)
    try:
        report = reopened.reconcile()
        assert report.touched == 0
        assert len(reopened.index.search("moon", limit=20)) == 7
    finally:
        reopened.close()


def _by_path(documents: list[dict[str, object]]) -> dict[object, dict[str, object]]:
    return {document["path"]: document for document in documents}


def test_notes_are_listed_from_the_manifest_as_the_index_holds_them(vault: Vault) -> None:
    vault.create_note("Callisto", "An old, cratered moon.", tags=["moon", "jupiter"])
    io_note = vault.create_note("Io", "Volcanoes.")
    io_note.body = "Volcanoes everywhere."
    vault.save(io_note)
    vault.rename_note("Io", "Io, the volcanic moon")
    broken = vault.layout.notes / "broken.md"
    broken.write_text("---\ntitle: [unclosed\n---\nbody\n", encoding="utf-8")
    vault.reconcile()
    from_index = _by_path(vault.index.all_documents())
    vault.close()
    reopened = Vault.open(vault.root)
    try:
        listed = reopened.note_listing()
        # Answered without opening the index at all.
        assert reopened.last_reconcile is None
        assert _by_path(listed) == from_index
        # A note whose front matter is broken is indexed, and listed, all the same.
        assert _by_path(listed)["notes/broken.md"]["title"] == "broken"
        assert {"Callisto", "Io, the volcanic moon"} <= {doc["title"] for doc in listed}
    finally:
        reopened.close()


def test_a_listing_sees_a_note_edited_outside_lore(vault: Vault) -> None:
    note = vault.create_note("Phobos", "A small moon of Mars.")
    vault.close()
    path = vault.root / note.path
    path.write_text(path.read_text().replace("title: Phobos", "title: Phobos and Deimos"))
    _touch_later(path)
    (vault.layout.notes / "added-outside.md").write_text("# Deimos\n\nThe outer moon.\n")
    reopened = Vault.open(vault.root)
    try:
        titles = {doc["title"] for doc in reopened.note_listing()}
        assert "Phobos and Deimos" in titles and "Phobos" not in titles
        assert "Deimos" in titles
        # The index caught up on the way.
        assert reopened.last_reconcile is not None and reopened.last_reconcile.touched == 2
    finally:
        reopened.close()


def test_a_manifest_without_cards_gets_them_without_a_rebuild(vault: Vault) -> None:
    import json

    vault.create_note("Titan", "Thick haze and methane lakes.", tags=["moon"])
    vault.create_note("Rhea", "Icy and cratered.")
    expected = _by_path(vault.index.all_documents())
    vault.close()
    manifest = vault.layout.index / "manifest.json"
    data = json.loads(manifest.read_text())
    written_before_cards = {
        "schema": 2,
        "files": {path: entry[:3] for path, entry in data["files"].items()},
    }
    manifest.write_text(json.dumps(written_before_cards))
    (vault.layout.index / "manifest.jsonl").unlink(missing_ok=True)

    upgraded = Vault.open(vault.root)
    try:
        assert _by_path(upgraded.note_listing()) == expected
        assert upgraded.last_reconcile is not None and not upgraded.last_reconcile.rebuilt
    finally:
        upgraded.close()
    assert json.loads(manifest.read_text())["schema"] == 3
    again = Vault.open(vault.root)
    try:
        assert _by_path(again.note_listing()) == expected
        assert again.last_reconcile is None
        assert _titles(again, "methane") == ["Titan"]
    finally:
        again.close()


def test_an_index_written_before_the_search_columns_is_rebuilt_on_open(vault: Vault) -> None:
    from whoosh import index as whoosh_index
    from whoosh.fields import ID, TEXT, Schema

    vault.create_note("Durable", "words that survive")
    vault.close()
    for entry in vault.layout.index.iterdir():
        if not entry.name.startswith("manifest"):
            entry.unlink()
    whoosh_index.create_in(
        str(vault.layout.index), Schema(path=ID(stored=True, unique=True), body=TEXT(stored=True))
    )
    reopened = Vault.open(vault.root)
    assert _titles(reopened, "survive") == ["Durable"]
    assert reopened.last_reconcile is not None and reopened.last_reconcile.rebuilt
    reopened.close()


def test_phrases_and_scores_are_whooshs_own(vault: Vault) -> None:
    from whoosh.query import Or, Phrase, Query
    from whoosh.scoring import BM25F

    from lore.core.search.phrase import AdjacentPhrase
    from lore.core.search.terms import memo_term_lookups

    bodies = [
        "red spot storm on the giant planet, a red spot that never ends",
        "the spot is red; a storm spot, red and old",
        "storm red spot red spot red spot",
        "nothing to see here but a red herring",
        "Red Spot: the great red spot of Jupiter, a red spot storm",
    ]
    for number, body in enumerate(bodies * 3):
        vault.create_note(f"Note {number}", body, tags=["red spot"] if number % 4 == 0 else [])
    vault.remove_note("Note 2")  # a deleted document in one of several segments

    def plain(query: Query) -> Query:
        if isinstance(query, AdjacentPhrase):
            return Phrase(query.fieldname, list(query.words))
        if isinstance(query, Or):
            query.subqueries = [plain(child) for child in query.subqueries]
        return query

    index = vault.index
    ours = index._current_searcher()
    with index._index.searcher(weighting=BM25F()) as theirs:
        for text in [
            '"red spot"',
            '"red spot storm"',
            "red spot",
            '"spot red" storm',
            "title:note",
        ]:
            expected = theirs.search(plain(index.parse(text)), limit=50).top_n
            assert ours.search(index.parse(text), limit=50).top_n == expected, text
            with memo_term_lookups(ours):
                assert ours.search(index.parse(text), limit=50).top_n == expected, text
            assert expected, text


def test_searching_an_empty_vault_finds_nothing_without_failing(vault: Vault) -> None:
    assert vault.index.search("anything at all", status=None) == []
    assert vault.index.search('"a phrase" tag:x', status="active") == []


def test_an_index_built_in_runs_on_disk_finds_and_scores_as_one_built_in_memory(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A writer past its memory pool sorts postings into runs on disk and merges them at the
    # end; with a pool of 1 MB, 400 notes take several runs, when they are added to an open
    # index and when it is rebuilt.
    import random

    from lore.core.notes import Note, render_note
    from lore.core.search import index as index_module

    rng = random.Random(3)
    words = [f"w{number}x" for number in range(3000)]
    vault.create_note("Anchor", "the first note, written through the vault")
    _ = vault.index
    bodies = [" ".join(rng.choice(words) for _ in range(120)) for _ in range(400)]
    for number, body in enumerate(bodies):
        note = Note(
            path=f"notes/generated-{number}.md",
            id=f"n{number:017x}",
            title=f"Generated {number} {words[number]}",
            body=body,
            created="2026-01-01T00:00:00Z",
            updated="2026-01-01T00:00:00Z",
        )
        (vault.root / note.path).write_text(render_note(note), encoding="utf-8")
    phrase = " ".join(bodies[17].split()[40:42])
    queries = ["w7x", "w42x w1999x", f'"{phrase}"', "w2999x", "generated", "anchor"]

    def answers() -> list[list[tuple[str, float]]]:
        return [
            [(hit.path, round(hit.score, 6)) for hit in vault.index.search(query, limit=20)]
            for query in queries
        ]

    monkeypatch.setattr(index_module, "WRITER_POOL_MB", 1)
    assert len(vault.reconcile().added) == 400
    added_in_runs = answers()
    vault.reindex()
    rebuilt_in_runs = answers()
    monkeypatch.setattr(index_module, "WRITER_POOL_MB", 256)
    vault.reindex()
    in_memory = answers()
    assert added_in_runs == rebuilt_in_runs == in_memory
    assert all(in_memory[:4]) and len(in_memory[4]) == 20


def test_the_searcher_is_dropped_only_under_the_search_lock(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A searcher dropped by a write while another thread's lookup drops it too was closed
    # twice: whoosh raises, and the lookup failed.
    vault.create_note("First", "alpha words")
    assert _titles(vault, "alpha") == ["First"]
    index = vault.index
    held: list[bool] = []
    drop = NoteIndex._drop_searcher

    def watched(self: NoteIndex) -> None:
        held.append(self._search_lock.locked())
        drop(self)

    monkeypatch.setattr(NoteIndex, "_drop_searcher", watched)
    (vault.layout.notes / "second.md").write_text("# Second\n\nalpha again\n", encoding="utf-8")
    vault.reconcile()
    assert sorted(_titles(vault, "alpha")) == ["First", "Second"]
    vault.reindex()
    index.close()
    assert held and all(held)
