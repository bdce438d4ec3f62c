"""The search fast path reads whoosh internals; when they change, whoosh's own search answers."""

from __future__ import annotations

import logging
import types
from typing import Any

import pytest
from whoosh.codec import whoosh3

from lore.core.search import index as index_module
from lore.core.search import whoosh_private
from lore.core.vault import Vault

QUERIES = ["kuiper belt", "europa ocean", "great red spot", '"red spot" jupiter', "tag:moon ice"]


def _paths(vault: Vault, query: str) -> list[str]:
    return [hit.path for hit in vault.index.search(query, limit=50)]


def _lore_search_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == "lore.search"]


def _without_lenfield(monkeypatch: pytest.MonkeyPatch) -> str:
    """whoosh as the fast path would see it had a release renamed `_lenfield`."""
    renamed = types.SimpleNamespace(
        **{name: value for name, value in vars(whoosh3).items() if name != "_lenfield"}
    )
    monkeypatch.setattr(whoosh_private, "whoosh3", renamed)
    return "_lenfield"


def _without_segment_terms(monkeypatch: pytest.MonkeyPatch) -> str:
    """A segment reader whose terms reader went by another name."""
    monkeypatch.setattr(whoosh_private, "_SEGMENT_READER", ("_perdoc", "_terms_renamed"))
    return "_terms_renamed"


def test_a_normal_vault_is_searched_by_the_fast_path(
    sample_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    def whoosh_search(*args: Any, **kwargs: Any) -> list[tuple[float, int]]:
        raise AssertionError("whoosh's own search answered")

    monkeypatch.setattr(index_module, "_whoosh_top", whoosh_search)
    assert sample_vault.index.search("kuiper belt", limit=1)[0].title == "Kuiper Belt"
    for query in QUERIES:
        assert _paths(sample_vault, query), query
    assert sample_vault.index.fast_path
    assert sample_vault.index.fallbacks == 0


@pytest.mark.parametrize("take_away", [_without_lenfield, _without_segment_terms])
def test_a_missing_private_is_logged_and_whoosh_finds_the_same_notes(
    sample_vault: Vault,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    take_away: Any,
) -> None:
    expected = {query: sorted(_paths(sample_vault, query)) for query in QUERIES}
    sample_vault.index.close()
    missing = take_away(monkeypatch)
    caplog.set_level(logging.WARNING, logger="lore.search")

    assert sample_vault.index.search("kuiper belt", limit=1)[0].title == "Kuiper Belt"
    [hit] = sample_vault.index.search("europa ocean", limit=1)
    assert hit.title == "Europa" and "ocean" in hit.snippet.lower()
    for query in QUERIES:
        assert sorted(_paths(sample_vault, query)) == expected[query], query
    assert not sample_vault.index.fast_path
    assert sample_vault.index.fallbacks == 2 + len(QUERIES)
    [record] = _lore_search_records(caplog)  # said once, not at every search
    assert record.levelno == logging.WARNING and missing in record.getMessage()

    # A note written meanwhile opens a new searcher, still without the fast path.
    sample_vault.create_note("Arrokoth", "a contact binary in the kuiper belt")
    assert "Arrokoth" in [hit.title for hit in sample_vault.index.search("kuiper belt")]
    assert len(_lore_search_records(caplog)) == 1


def test_a_missing_private_raises_under_lore_debug(
    sample_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    sample_vault.index.close()
    _without_lenfield(monkeypatch)
    monkeypatch.setenv("LORE_DEBUG", "1")
    with pytest.raises(whoosh_private.WhooshInternalsChanged, match="_lenfield"):
        sample_vault.index.search("kuiper belt")


def test_a_fast_path_that_raises_is_logged_and_whoosh_answers(
    sample_vault: Vault, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    expected = sorted(_paths(sample_vault, "great red spot"))

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a posting block it could not read")

    caplog.set_level(logging.WARNING, logger="lore.search")
    with monkeypatch.context() as patch:
        patch.setattr(index_module, "top_hits", broken)
        hits = sample_vault.index.search("great red spot", limit=50)
    assert sorted(hit.path for hit in hits) == expected  # once, this was no hits at all
    assert "Jupiter" in [hit.title for hit in hits[:2]]
    [record] = _lore_search_records(caplog)
    assert "a posting block it could not read" in record.getMessage()
    assert record.exc_info is not None
    assert sample_vault.index.fallbacks == 1

    # The next search is the fast path's again, on readers left as they were.
    assert sorted(_paths(sample_vault, "great red spot")) == expected
    assert sample_vault.index.fast_path and sample_vault.index.fallbacks == 1


def test_a_fast_path_that_raises_raises_under_lore_debug(
    sample_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a posting block it could not read")

    monkeypatch.setattr(index_module, "top_hits", broken)
    monkeypatch.setenv("LORE_DEBUG", "1")
    with pytest.raises(RuntimeError, match="posting block"):
        sample_vault.index.search("great red spot")


def test_an_empty_index_is_not_taken_for_a_changed_whoosh(
    vault: Vault, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lore.search")
    assert vault.index.search("anything") == []
    vault.create_note("First", "the first note")
    assert [hit.title for hit in vault.index.search("first")] == ["First"]
    assert vault.index.fast_path and vault.index.fallbacks == 0
    assert _lore_search_records(caplog) == []


def test_the_probe_finds_nothing_missing_in_the_whoosh_installed(sample_vault: Vault) -> None:
    sample_vault.index.search("kuiper")
    searcher = sample_vault.index._current_searcher()
    assert searcher.leaf_searchers()
    assert whoosh_private.missing_privates(searcher) == []
