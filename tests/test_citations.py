"""Citations are checked against the notes actually delivered; the rest are removed."""

from __future__ import annotations

from lore.core.citations import check_citations, parse_citations

DELIVERED = {1: "n-jupiter", 2: "n-saturn", 3: "n-mars"}


def test_valid_citations_are_kept_and_mapped_to_notes() -> None:
    check = check_citations("Jupiter is largest [1]. Saturn has rings [2].", DELIVERED)
    assert check.text == "Jupiter is largest [1]. Saturn has rings [2]."
    assert check.cited_note_ids == ["n-jupiter", "n-saturn"]
    assert (check.kept, check.removed) == (2, 0)


def test_a_number_that_was_never_delivered_is_removed_and_counted() -> None:
    check = check_citations("Pluto is a planet [7]. Mars is red [3].", DELIVERED)
    assert "[7]" not in check.text
    assert check.text == "Pluto is a planet. Mars is red [3]."
    assert check.removed == 1
    assert check.removed_numbers == [7]
    assert check.cited_note_ids == ["n-mars"]


def test_groups_and_ranges_keep_only_their_valid_numbers() -> None:
    check = check_citations("Gas giants [1, 2, 9] and rocky worlds [2-4].", DELIVERED)
    assert check.text == "Gas giants [1][2] and rocky worlds [2][3]."
    assert check.removed == 2
    assert check.cited_numbers == [1, 2, 3]


def test_code_links_and_indexing_are_not_citations() -> None:
    text = (
        "Use `moons[5]` or\n```\nx = data[9]\n```\nsee [the docs](https://example.org) and list[4]."
    )
    check = check_citations(text, DELIVERED)
    assert check.text == text
    assert check.removed == 0
    assert parse_citations(text) == []


def test_repeated_citations_count_each_time_but_list_a_note_once() -> None:
    check = check_citations("A [1]. B [1]. C [1][2].", DELIVERED)
    assert check.kept == 4
    assert check.cited_note_ids == ["n-jupiter", "n-saturn"]


def test_nothing_delivered_means_every_citation_goes() -> None:
    check = check_citations("Made up [1] and [2].", {})
    assert check.text == "Made up and."
    assert check.removed == 2
