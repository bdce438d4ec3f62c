"""Retrieval: top-k active notes, untrusted ones marked, follow-ups resolved."""

from __future__ import annotations

from lore.core.retrieval import (
    POSTINGS_BUDGET,
    affordable_terms,
    heading_match,
    is_followup,
    resolve_followup,
    retrieve,
)
from lore.core.turns import Turn
from lore.core.vault import Vault


def _turn(question: str, cited: list[str] | None = None, resolved: str = "") -> Turn:
    return Turn(
        time="2026-01-01T00:00:00Z",
        question=question,
        resolved_question=resolved,
        answer="an answer",
        cited=cited or [],
    )


def test_the_best_note_comes_first(sample_vault: Vault) -> None:
    # "Observing the Planets" mentions the Great Red Spot in passing and scores higher in
    # the index; Jupiter has a section headed "Great Red Spot" and comes first.
    found = retrieve(sample_vault, "What is the Great Red Spot?")
    assert found.candidates[0].title == "Jupiter"
    assert [c.rank for c in found.candidates] == list(range(1, len(found.candidates) + 1))
    assert len(found.candidates) <= sample_vault.config.ask.top_k
    assert found.elapsed_ms > 0


def test_untrusted_notes_are_retrieved_but_marked(sample_vault: Vault) -> None:
    found = retrieve(sample_vault, "Haumea rotation egg shape")
    haumea = next(c for c in found.candidates if c.title == "Haumea")
    assert haumea.untrusted


def test_superseded_notes_are_never_retrieved(sample_vault: Vault) -> None:
    found = retrieve(sample_vault, "Pluto ninth planet", top_k=50)
    assert found.candidates
    assert all(c.path != "notes/small-bodies/pluto-as-a-planet.md" for c in found.candidates)


def test_query_syntax_in_a_question_is_taken_as_words(sample_vault: Vault) -> None:
    for question in ('title:"Jupiter OR (', "NOT AND OR", "tag:planet* ~~ ^^ Jupiter?"):
        found = retrieve(sample_vault, question)
        assert found.query.count("(") == 0
    assert retrieve(sample_vault, "???").candidates == []


def test_short_or_pronoun_questions_are_follow_ups() -> None:
    for question in ("why?", "and the second one?", "What is it made of?", "How big are they?"):
        assert is_followup(question), question
    for question in ("What is the largest planet in the Solar System?", "Describe Saturn's rings"):
        assert not is_followup(question), question


def test_a_question_with_its_own_subject_stands_alone_however_it_opens() -> None:
    europa = _turn("What is Europa's ocean made of?")
    for question in (
        "Why does Io have volcanoes?",
        "So how hot is the Great Red Spot?",
        "How come Saturn's rings are so thin?",
    ):
        assert resolve_followup(question, europa) == (question, False), question
    # Without a subject of its own, or pointing back, or continuing with "and", it leans on
    # the earlier question.
    for question in (
        "Why does the surface look so young?",
        "Why does it have a magnetic field?",
        "And why does Io have volcanoes too?",
    ):
        resolved, followup = resolve_followup(question, europa)
        assert followup and "Europa" in resolved, question


def test_a_follow_up_is_resolved_against_the_previous_turn() -> None:
    previous = _turn("Which planet has the Great Red Spot?")
    resolved, followup = resolve_followup("How big is it?", previous)
    assert followup
    assert "Great Red Spot" in resolved
    assert resolve_followup("How big is it?", None) == ("How big is it?", False)


def test_a_chain_of_follow_ups_stays_flat() -> None:
    first = _turn("Which planet has the Great Red Spot?")
    second_resolved, _ = resolve_followup("How big is it?", first)
    second = _turn("How big is it?", resolved=second_resolved)
    third, _ = resolve_followup("and why?", second)
    assert third.count("following up on") == 1
    assert "Great Red Spot" in third


def test_a_follow_up_retrieves_what_the_previous_turn_was_about(sample_vault: Vault) -> None:
    jupiter = sample_vault.find("Jupiter")
    previous = _turn("Tell me about the Great Red Spot storm", cited=[jupiter.id])
    found = retrieve(sample_vault, "how old is it?", previous=previous)
    assert found.followup
    assert found.candidates[0].title == "Jupiter"
    assert "Great Red Spot" in found.resolved_question


def test_document_frequency_counts_titles_and_bodies(sample_vault: Vault) -> None:
    counts = sample_vault.index.document_frequency(["Jupiter", "moons", "the", "zzyzx"])
    assert counts["Jupiter"] > counts["zzyzx"] == 0
    assert counts["moons"] > 5
    assert counts["the"] == 0


def test_common_words_are_left_out_of_the_search_when_rarer_ones_exist() -> None:
    # Frequencies as a share of the budget: the test holds whatever the budget is.
    def held(share: float) -> int:
        return int(share * POSTINGS_BUDGET)

    frequency = {
        "standard": held(0.931), "type": held(2.65), "hierarchy": held(0.107),
        "briefly": 4, "nowhere": 0,
    }  # fmt: skip
    own, borrowed = affordable_terms(
        ["standard", "type", "hierarchy", "briefly", "nowhere"], ["loop"], frequency | {"loop": 5}
    )
    assert own == ["hierarchy", "briefly"]
    assert borrowed == ["loop"]
    # The rarest of the question's own words is kept however common it is.
    common = {"type": held(2.65), "data": held(2.187)}
    assert affordable_terms(["type", "data"], [], common) == (["data"], [])
    assert POSTINGS_BUDGET >= 1000


def test_the_second_one_means_the_second_note_the_previous_answer_cited(
    sample_vault: Vault,
) -> None:
    titan, europa = sample_vault.find("Titan"), sample_vault.find("Europa")
    previous = _turn("Which moons may hide oceans?", cited=[titan.id, europa.id])
    found = retrieve(sample_vault, "and the second one?", previous=previous)
    assert found.followup
    assert "the second one: Europa" in found.resolved_question
    assert found.candidates[0].title == "Europa"
    last = retrieve(sample_vault, "tell me more about the last one", previous=previous)
    assert "the last one: Europa" in last.resolved_question


def test_a_heading_that_names_the_subject_counts() -> None:
    body = "# Jupiter\n\nText.\n\n## Great Red Spot\n\nA storm."
    assert heading_match(body, {"great", "red", "spot"}) == 1.0
    assert heading_match(body, {"great", "dark", "spot"}) == 2 / 3
    assert heading_match(body, {"storm"}) == 0.0
    assert heading_match("no headings here", {"great", "spot"}) == 0.0


def test_a_follow_up_naming_a_new_subject_keeps_the_question_and_swaps_the_subject() -> None:
    io = _turn("Why does Io have volcanoes?")
    assert resolve_followup("and what about Europa?", io) == (
        "Why does Europa have volcanoes?",
        True,
    )
    assert resolve_followup("and Titan?", io) == ("Why does Titan have volcanoes?", True)
    mars = _turn("How far is Mars from the Sun?")
    assert resolve_followup("how about the Moon?", mars)[0] == "How far is the Moon from the Sun?"
    # Pronouns, bare questions, lowercase attributes and the same subject again still lean
    # on the whole earlier question.
    for question in ("how big is it?", "why?", "and the second one?", "and craters?", "and Io?"):
        resolved, followup = resolve_followup(question, io)
        assert followup
        assert resolved == f"{question} (following up on: Why does Io have volcanoes?)"


def test_a_new_subject_is_retrieved_in_place_of_the_old_one(sample_vault: Vault) -> None:
    io = sample_vault.find("Io")
    previous = _turn("Why does Io have volcanoes?", cited=[io.id])
    for question in ("and what about Europa?", "and what about europa?"):
        found = retrieve(sample_vault, question, previous=previous)
        assert found.followup
        assert found.resolved_question == "Why does Europa have volcanoes?"
        assert found.candidates[0].title == "Europa"
        assert "io" not in found.query.split()
        assert "volcanoes" in found.query.split()
    saturn = sample_vault.find("Saturn")
    moons = _turn("How many moons does Saturn have?", cited=[saturn.id])
    found = retrieve(sample_vault, "what about Jupiter?", previous=moons)
    assert found.resolved_question == "How many moons does Jupiter have?"
    assert found.candidates[0].title == "Jupiter"
    assert "saturn" not in found.query


def test_one_of_the_things_asked_about_is_not_a_new_subject(sample_vault: Vault) -> None:
    # Titan is one of Saturn's moons (its note is tagged "moon"), not a planet in Saturn's
    # place: the follow-up keeps Saturn in view and still finds Titan first.
    previous = _turn("Which moons of Saturn are the largest?")
    found = retrieve(sample_vault, "and Titan?", previous=previous)
    assert "following up on: Which moons of Saturn are the largest?" in found.resolved_question
    assert found.candidates[0].title == "Titan"


def test_questions_that_name_their_subject_or_only_greet_stand_alone() -> None:
    saturn = _turn("Which moons of Saturn have thick atmospheres?")
    for question in ("What is Titan?", "Describe Pluto", "What is Europa?", "hi", "Thanks!"):
        assert resolve_followup(question, saturn) == (question, False), question
    # A bare subject after an opener still asks the earlier question about it.
    assert resolve_followup("and Titan?", saturn)[1]


def test_describe_pluto_after_a_saturn_question_brings_pluto_evidence(
    sample_vault: Vault,
) -> None:
    saturn = _turn("Which moons of Saturn have thick atmospheres?", cited=[])
    found = retrieve(sample_vault, "Describe Pluto", previous=saturn)
    assert not found.followup
    assert found.candidates[0].title == "Pluto"
    assert all("saturn" not in word.lower() for word in found.weights)
