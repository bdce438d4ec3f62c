"""Ranking a term at a time must agree with whoosh's own search, hit for hit."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from whoosh.query import Query, Term

from lore.core.search_columns import StoredColumn
from lore.core.search_ranking import top_hits
from lore.core.search_terms import memo_term_lookups
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
    for (mine, _), (whooshs, _) in zip(ours, theirs, strict=True):
        assert math.isclose(mine, whooshs, rel_tol=1e-12, abs_tol=1e-12), text


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
            theirs = searcher.search(query, limit=limit, filter=restrict, mask=mask).top_n
            if ours is None:
                continue  # a query shape left to whoosh: the caller uses `theirs`
            _assert_same(ours, theirs, f"{text} (limit {limit})")
            compared += 1
    return compared


def test_rankings_match_whoosh_across_segments_and_deletions(vault: Vault) -> None:
    _fill(vault, 40, seed=1)
    for number in (3, 17, 28):
        vault.remove_note(_path_of(vault, number))
    _fill(vault, 25, seed=2)
    assert len(vault.index._current_searcher().leaf_searchers()) > 1
    assert _compare(vault) >= 4 * 9


def test_rankings_match_whoosh_with_a_status_mask_or_filter(vault: Vault) -> None:
    _fill(vault, 30, seed=3)
    for number in (1, 2, 5, 8):
        note = vault.read_note(_path_of(vault, number))
        note.status = "superseded"
        vault.save(note)
    assert _compare(vault, mask=Term("status", "superseded")) >= 4 * 9
    assert _compare(vault, restrict=Term("status", "superseded")) >= 4 * 9


def test_shapes_it_cannot_score_the_same_way_are_left_to_whoosh(vault: Vault) -> None:
    _fill(vault, 10, seed=4)
    index = vault.index
    searcher = index._current_searcher()
    boosted = index.parse("storm^3 moon")
    assert top_hits(searcher, boosted, 10) is None
    assert [hit.title for hit in index.search("storm^3 moon", limit=50)] == [
        searcher.stored_fields(docnum)["title"]
        for _, docnum in searcher.search(boosted, limit=50).top_n
    ]


def test_index_search_returns_the_hits_whoosh_ranks(sample_vault: Vault) -> None:
    index = sample_vault.index
    searcher = index._current_searcher()
    for text in ["great red spot", '"red spot" jupiter', "moons of saturn", "tag:moon ice"]:
        expected = [
            searcher.stored_fields(docnum)["path"]
            for _, docnum in searcher.search(index.parse(text), limit=10).top_n
        ]
        assert [hit.path for hit in index.search(text, limit=10)] == expected, text


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
