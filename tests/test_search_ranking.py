"""Ranking a term at a time: each word scored as BM25F over its fields, everything else as
whoosh scores it, checked hit for hit against a slow reading of the same index."""

from __future__ import annotations

import math
import random
from collections import defaultdict
from typing import Any

import pytest
from whoosh.query import Query, Term

from lore.core.search.columns import StoredColumn
from lore.core.search.phrase import AdjacentPhrase
from lore.core.search.ranking import GROUP_K1, TITLE_POWER, WordGroup, _parts, top_hits
from lore.core.search.terms import memo_term_lookups
from lore.core.vault import Vault

WORDS = [
    *("red", "spot", "storm", "giant", "planet", "ring", "moon", "ice", "comet", "orbit"),
    *("dust", "tail", "field", "charged", "particle", "volcanic", "ocean", "crust", "core"),
    *("magnet", "wind", "solar", "flare"),
]

QUERIES = [
    "red",
    "red spot",
    '"red spot"',
    '"red spot storm" moon',
    "title:note",
    "tag:alpha",
    "tag:alpha storm",
    "storm AND moon",
    "storm NOT moon",
    "storm^3 moon",
    "(ring OR comet) AND ice",
    "orbit* dust",
    "nothing-here-at-all",
]


def _fill(vault: Vault, notes: int, seed: int) -> None:
    rng = random.Random(seed)
    for number in range(notes):
        length = rng.randint(3, 60)
        body = " ".join(rng.choice(WORDS) for _ in range(length))
        tags = [rng.choice(["alpha", "beta", "red spot"])] if number % 3 == 0 else []
        vault.create_note(f"Note {number} {rng.choice(WORDS)}", body, tags=tags)


def _assert_same(ours: list[tuple[float, int]], theirs: list[tuple[float, int]], text: str) -> None:
    assert [docnum for _, docnum in ours] == [docnum for _, docnum in theirs], text
    for (mine, _), (reference, _) in zip(ours, theirs, strict=True):
        assert math.isclose(mine, reference, rel_tol=1e-9, abs_tol=1e-12), text


def _word_scores(searcher: Any, group: WordGroup) -> tuple[dict[int, float], set[int], float]:
    """BM25F of one word, read a posting at a time through whoosh's public API: (scores,
    notes holding it in their title, the most it can add)."""
    weighting, schema = searcher.weighting, searcher.schema
    idfs = []
    combined: dict[int, float] = defaultdict(float)
    titled: set[int] = set()
    for term in group.terms:
        text = schema[term.fieldname].to_bytes(term.text)
        if not searcher.doc_frequency(term.fieldname, text):
            continue
        idfs.append(searcher.idf(term.fieldname, text))
        B = weighting._field_B.get(term.fieldname, weighting.B)
        average = searcher.avg_field_length(term.fieldname) or 1
        matcher = searcher.postings(term.fieldname, text)
        while matcher.is_active():
            docnum = matcher.id()
            length = searcher.doc_field_length(docnum, term.fieldname, 1) or 1
            combined[docnum] += matcher.weight() / ((1 - B) + B * length / average)
            if term.fieldname == "title":
                titled.add(docnum)
            matcher.next()
    if not idfs:
        return {}, set(), 0.0
    worth = min(idfs) * (GROUP_K1 + 1) * group.boost
    return {d: worth * tf / (tf + GROUP_K1) for d, tf in combined.items()}, titled, worth


def _reference(
    searcher: Any, query: Query, limit: int, restrict: Query | None, mask: Query | None
) -> list[tuple[float, int]]:
    """The ranking top_hits must give, computed the slow, obvious way."""
    totals: dict[int, float] = defaultdict(float)
    in_title: dict[int, float] = defaultdict(float)
    all_words = 0.0
    for part in _parts(query):
        if isinstance(part, WordGroup):
            scores, titled, worth = _word_scores(searcher, part)
            all_words += worth
            for docnum in titled:
                in_title[docnum] += worth
        else:
            scores = {d: s for s, d in searcher.search(part, limit=None).top_n}
        for docnum, score in scores.items():
            totals[docnum] += score
    for docnum, named in in_title.items():
        totals[docnum] += named * (named / all_words) ** TITLE_POWER
    allowed = set(searcher.docs_for_query(restrict)) if restrict is not None else None
    masked = set(searcher.docs_for_query(mask)) if mask is not None else set()
    kept = [
        (score, docnum)
        for docnum, score in totals.items()
        if docnum not in masked and (allowed is None or docnum in allowed)
    ]
    kept.sort(key=lambda item: (-item[0], item[1]))
    return kept[:limit]


def _compare(vault: Vault, mask: Query | None = None, restrict: Query | None = None) -> int:
    index = vault.index
    searcher = index._current_searcher()
    compared = 0
    for text in QUERIES:
        query = index.parse(text)
        for limit in (1, 3, 10, 500):
            with memo_term_lookups(searcher):
                ours = top_hits(
                    searcher,
                    query,
                    limit,
                    allow=set(searcher.docs_for_query(restrict)) if restrict else None,
                    exclude=set(searcher.docs_for_query(mask)) if mask else None,
                )
            assert ours is not None, text
            _assert_same(ours, _reference(searcher, query, limit, restrict, mask), text)
            compared += 1
    return compared


def test_rankings_match_the_slow_reading_across_segments_and_deletions(vault: Vault) -> None:
    _fill(vault, 40, seed=1)
    for number in (3, 17, 28):
        vault.remove_note(_path_of(vault, number))
    _fill(vault, 25, seed=2)
    assert len(vault.index._current_searcher().leaf_searchers()) > 1
    assert _compare(vault) >= 4 * 9


def test_rankings_match_the_slow_reading_with_a_status_mask_or_filter(vault: Vault) -> None:
    _fill(vault, 30, seed=3)
    for number in (1, 2, 5, 8):
        note = vault.read_note(_path_of(vault, number))
        note.status = "superseded"
        vault.save(note)
    assert _compare(vault, mask=Term("status", "superseded")) >= 4 * 9
    assert _compare(vault, restrict=Term("status", "superseded")) >= 4 * 9


def test_a_word_looked_up_in_several_fields_is_one_bm25f_term(vault: Vault) -> None:
    _fill(vault, 5, seed=4)
    parts = _parts(vault.index.parse("Storms? of the red planet^2"))
    groups = [part for part in parts if isinstance(part, WordGroup)]
    assert [[t.fieldname for t in g.terms] for g in groups] == [["title", "tags", "body"]] * 3
    assert [g.boost for g in groups] == [1.0, 1.0, 2.0]
    # A phrase, and terms of different words, are not one word.
    parts = _parts(vault.index.parse('"red spot" title:storm tag:alpha'))
    assert not any(isinstance(part, WordGroup) for part in parts)
    assert sum(isinstance(part, AdjacentPhrase) for part in parts) == 2


def test_a_weighting_it_cannot_follow_is_left_to_whoosh(vault: Vault) -> None:
    _fill(vault, 10, seed=4)
    index = vault.index
    searcher = index._current_searcher()
    searcher.weighting.use_final = True
    try:
        assert top_hits(searcher, index.parse("storm moon"), 10) is None
    finally:
        searcher.weighting.use_final = False


def test_a_title_holding_one_word_of_a_long_question_does_not_outrank_the_answer(
    vault: Vault,
) -> None:
    vault.create_note(
        "Tabs and spaces",
        "Editors differ in how they show a tab. This note is about layout in general.",
    )
    vault.create_note(
        "faq 17",
        "To keep editors from inserting tabs into Python source, set the editor to insert "
        "spaces: every Python editor can keep tabs out of the source it saves.",
    )
    for number in range(8):
        vault.create_note(f"Filler {number}", "Python source files hold code.")
    question = "How do I keep editors from inserting tabs into my Python source?"
    assert vault.index.search(question, limit=2)[0].title == "faq 17"
    # A short question naming a title still finds that note first.
    assert vault.index.search("tabs and spaces", limit=1)[0].title == "Tabs and spaces"


def test_index_search_returns_the_hits_top_hits_ranks(sample_vault: Vault) -> None:
    index = sample_vault.index
    searcher = index._current_searcher()
    mask = Term("status", "superseded")
    for text in ["great red spot", '"red spot" jupiter', "moons of saturn", "tag:moon ice"]:
        expected = [
            searcher.stored_fields(docnum)["path"]
            for _, docnum in _reference(searcher, index.parse(text), 10, None, mask)
        ]
        found = [hit.path for hit in index.search(text, limit=10, status="active")]
        assert found == expected, text
    assert index.search('"red spot" jupiter', limit=1)[0].title == "Jupiter"


def test_stored_columns_read_what_whoosh_stored(vault: Vault) -> None:
    _fill(vault, 12, seed=5)
    vault.remove_note(_path_of(vault, 4))
    _fill(vault, 6, seed=6)
    searcher = vault.index._current_searcher()
    reader = searcher.reader()
    for name in ("card", "body_text"):
        column = StoredColumn(searcher, name)
        whooshs = reader.column_reader(name, translate=False)
        try:
            for docnum in range(reader.doc_count_all()):
                assert column[docnum] == bytes(whooshs[docnum])
        finally:
            column.close()


def test_stored_columns_fall_back_when_a_file_cannot_be_mapped(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mmap

    _fill(vault, 5, seed=7)

    def refuse(*args: Any, **kwargs: Any) -> mmap.mmap:
        raise OSError("no mapping here")

    monkeypatch.setattr(mmap, "mmap", refuse)
    searcher = vault.index._current_searcher()
    column = StoredColumn(searcher, "body_text")
    reader = searcher.reader()
    whooshs = reader.column_reader("body_text", translate=False)
    assert [column[d] for d in range(reader.doc_count_all())] == [
        bytes(whooshs[d]) for d in range(reader.doc_count_all())
    ]


def _path_of(vault: Vault, number: int) -> str:
    for document in vault.index.all_documents():
        if document["title"].startswith(f"Note {number} "):
            return str(document["path"])
    raise AssertionError(f"no note {number}")


def test_superseded_notes_come_after_current_ones_unless_asked_for(vault: Vault) -> None:
    old = vault.create_note("Pluto (as a planet)", "Pluto, Pluto, Pluto: the ninth planet.")
    old.status = "superseded"
    vault.save(old)
    vault.create_note("Pluto", "A dwarf planet in the Kuiper Belt.")
    vault.create_note("Charon", "The largest moon of Pluto.")
    assert [hit.title for hit in vault.index.search("pluto")] == [
        "Pluto",
        "Charon",
        "Pluto (as a planet)",
    ]
    assert [hit.title for hit in vault.index.search("pluto", limit=2)] == ["Pluto", "Charon"]
    assert [hit.title for hit in vault.index.search("pluto", status="superseded")] == [
        "Pluto (as a planet)"
    ]
