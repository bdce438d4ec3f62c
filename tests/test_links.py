"""Wiki links: found in any of their forms, rewritten exactly when a note is renamed."""

from __future__ import annotations

from lore.core.links import link_key, link_targets, rewrite_links


def test_link_targets_in_every_form() -> None:
    body = (
        "See [[Mars]], [[Jupiter#Moons]], [[ io |Io the moon]], [[Saturn#Rings|rings]], [[mars]]."
    )
    assert link_targets(body) == ["Mars", "Jupiter", "io", "Saturn"]


def test_not_links() -> None:
    assert link_targets("[single] [[]] [[a\nb]] `code` [[ ]]") == []


def test_link_key_ignores_case_and_spacing() -> None:
    assert link_key("  Great   Red Spot ") == link_key("great red spot")


def test_rewrite_every_form_and_keep_sections_and_aliases() -> None:
    body = (
        "[[Red Planet]] and [[red planet|the red one]] and [[Red Planet#Moons]] "
        "and [[Red Planet#Moons|its moons]] but not [[Red Planets]] or [Red Planet]."
    )
    rewritten, count = rewrite_links(body, "Red Planet", "Mars")
    assert count == 4
    assert rewritten == (
        "[[Mars]] and [[Mars|the red one]] and [[Mars#Moons]] "
        "and [[Mars#Moons|its moons]] but not [[Red Planets]] or [Red Planet]."
    )


def test_rewrite_with_regex_characters_in_titles() -> None:
    body = "[[C++ (language)]] and [[a.b*c]]"
    rewritten, count = rewrite_links(body, "C++ (language)", "C plus plus $1 \\g<0>")
    assert count == 1
    assert rewritten == "[[C plus plus $1 \\g<0>]] and [[a.b*c]]"


def test_rewrite_nothing_when_no_link() -> None:
    assert rewrite_links("Mars is red", "Mars", "Ares") == ("Mars is red", 0)
