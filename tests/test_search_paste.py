"""Whatever is typed or pasted into a search is safe: syntax nobody meant is read as words, and
no query looks up more than MAX_QUERY_TERMS terms, however many the index holds."""

from __future__ import annotations

import random
from typing import Any

import pytest
from whoosh import qparser
from whoosh.query import Every, MultiTerm, Query

from lore.core.retrieval import retrieve
from lore.core.search.index import _schema
from lore.core.search.query import MAX_QUERY_TERMS, term_lookups, typed_query
from lore.core.vault import Vault

SETUP_CODE = (
    "if (hasattr(core, 'setup_keywords') and 'classifiers' in core.setup_keywords): "
    "kw['classifiers'] = \\ ['Topic :: Internet', 'License :: OSI Approved :: Python "
    "Software Foundation License']"
)
ISSUE_LINE = "if (hasattr(core, 'setup_keywords') and kw['classifiers'] = \\ [...]"


@pytest.fixture
def code_vault(vault: Vault) -> Vault:
    """A note holding SETUP_CODE among notes holding many distinct words, so that a range or
    a prefix really would stand for hundreds of terms."""
    vault.create_note(
        "Distutils classifiers",
        "Register the package with its trove classifiers:\n\n    " + SETUP_CODE + "\n",
    )
    vault.create_note("Jupiter", "The great red spot is a storm on the giant planet.")
    vault.create_note("Clocks", "Print the time, ctime and the date of the day.")
    rng = random.Random(5)
    letters = "abcdefghijklmnop"
    for number in range(12):
        words = {"".join(rng.choice(letters) for _ in range(rng.randint(4, 8))) for _ in range(60)}
        vault.create_note(f"Filler {number}", " ".join(sorted(words)))
    return vault


def _expansion(vault: Vault, query: Query) -> int:
    """How many terms whoosh would look up for `query` in this index: a range or a prefix
    counts every term it covers (whoosh's public `expanded_terms`)."""
    reader = vault.index._current_searcher().reader()
    return sum(sum(1 for _ in leaf.expanded_terms(reader)) for leaf in query.leaves())


def _assert_bounded(vault: Vault, text: str) -> Query:
    query = vault.index.parse(text)
    assert not any(isinstance(leaf, (MultiTerm, Every)) for leaf in query.leaves()), text[:80]
    assert term_lookups(query) <= MAX_QUERY_TERMS, text[:80]
    assert _expansion(vault, query) <= MAX_QUERY_TERMS, text[:80]
    return query


def _titles(vault: Vault, text: str, **options: Any) -> list[str]:
    return [hit.title for hit in vault.index.search(text, **options)]


def test_pasted_code_is_words_and_finds_its_note(code_vault: Vault) -> None:
    # As whoosh's parser reads it by default, the line is a range over most of the index.
    default = qparser.MultifieldParser(["title", "tags", "body"], _schema()).parse(SETUP_CODE)
    assert _expansion(code_vault, default) > MAX_QUERY_TERMS
    for text in [SETUP_CODE, ISSUE_LINE, "kw['classifiers'] = \\ [...]"]:
        _assert_bounded(code_vault, text)
        assert _titles(code_vault, text)[0] == "Distutils classifiers", text


@pytest.mark.parametrize(
    "text",
    [
        "[a TO p]",
        "{a TO}",
        "title:[a TO z]",
        "tag:[pluto",
        "abc* classifiers",
        "*classifiers",
        "cl?ssifiers",
        "classifiers~2",
        "x[1:] = {'a': [1, 2]}",
        "]]]] [[[[ classifiers ))((",
    ],
)
def test_brackets_and_wildcards_are_words(code_vault: Vault, text: str) -> None:
    _assert_bounded(code_vault, text)
    if "classifiers" in text:
        assert "Distutils classifiers" in _titles(code_vault, text), text


def test_match_everything_syntax_matches_nothing(code_vault: Vault) -> None:
    _assert_bounded(code_vault, "*:*")
    assert _titles(code_vault, "*:*") == []


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ('"unclosed red spot', "Jupiter"),
        ('red "spot', "Jupiter"),
        ('"""great red spot', "Jupiter"),
        ("hasattr(core, 'setup_keywords", "Distutils classifiers"),
        ('"time, ctime"', "Clocks"),  # a comma made whoosh raise on the tags, and find nothing
    ],
)
def test_unbalanced_quotes_still_find_the_note(code_vault: Vault, text: str, title: str) -> None:
    _assert_bounded(code_vault, text)
    assert _titles(code_vault, text)[0] == title


def test_runs_of_operators_are_words(code_vault: Vault) -> None:
    # whoosh's parser raises IndexError on these; once, so did the search.
    for text in ["NOT NOT jupiter", "NOT " * 40 + "jupiter", "jupiter AND AND OR"]:
        _assert_bounded(code_vault, text)
        assert _titles(code_vault, text) == ["Jupiter"], text


def test_a_pasted_block_of_lines_is_words(code_vault: Vault) -> None:
    block = "great red spot\nNOT jupiter\ntitle:[a TO z] AND"
    assert not typed_query(block)
    _assert_bounded(code_vault, block)
    assert _titles(code_vault, block)[0] == "Jupiter"


def test_a_20_kb_paste_is_bounded_and_finds_its_note(code_vault: Vault) -> None:
    note = code_vault.find("Distutils classifiers")
    paste = (note.body * (20_000 // len(note.body) + 1))[:20_000]
    assert len(paste) == 20_000
    _assert_bounded(code_vault, paste)
    assert _titles(code_vault, paste)[0] == "Distutils classifiers"
    # Twenty kilobytes of fresh words: more than any query may look up.
    rng = random.Random(9)
    words = " ".join(f"w{rng.randrange(10**9)}" for _ in range(2_000))[:20_000]
    _assert_bounded(code_vault, words + " classifiers")
    junk = "([{'\"^~*?:\\" * 2_000
    _assert_bounded(code_vault, junk)
    assert _titles(code_vault, junk) == []


def test_the_syntax_people_type_is_still_syntax(code_vault: Vault) -> None:
    assert _titles(code_vault, '"red spot"') == ["Jupiter"]
    assert _titles(code_vault, '"spot red"') == []
    assert _titles(code_vault, "title:jupiter") == ["Jupiter"]
    assert _titles(code_vault, "storm AND planet") == ["Jupiter"]
    assert _titles(code_vault, "storm AND NOT planet") == []
    query = code_vault.index.parse("storm^3 planet")
    assert {leaf.boost for leaf in query.leaves()} == {3.0, 1.0}


def test_a_question_is_never_taken_for_a_paste(code_vault: Vault) -> None:
    # A pasted page as a question: retrieval sends the index its rarest words, as many as
    # it can afford, and the index must read them as typed, not cut them again.
    page = " ".join(code_vault.find(f"Filler {number}").body for number in range(4))
    retrieval = retrieve(code_vault, page + "?")
    assert len(retrieval.query.split()) >= 40
    assert typed_query(retrieval.query)


def test_random_syntax_never_fails_and_stays_bounded(code_vault: Vault) -> None:
    pieces = [*"()[]{}\"'^~*?:\\=,.;-+!&|<>/ ", "AND ", "OR ", "NOT ", "TO ", "tag:"]
    pieces += ["title:", "path:", "status:", "red", "spot", "classifiers", "\n", "^99", "x"]
    rng = random.Random(3)
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
        _assert_bounded(code_vault, text)
        for status in (None, "active"):
            code_vault.index.search(text, status=status)
    assert code_vault.index.fallbacks == 0


def test_words_are_stemmed_outside_the_search_package_as_the_index_stems_them() -> None:
    # Compaction and the evidence of an ask stem words without importing the search package.
    from lore.core.search.query import analyse
    from lore.core.stemming import stem_word

    for word in ["running", "moons", "orbital", "volcanoes", "europa", "studies", "caring"]:
        assert [stem_word(word)] == analyse(word), word
