"""Offline summaries keep a turn's facts: names, numbers, negations and the notes it cited."""

from __future__ import annotations

from lore.core.fact_digest import fact_digest, roll_up, telegraphic
from lore.core.tokens import estimate_tokens


def test_telegraphic_text_keeps_what_changes_the_meaning() -> None:
    assert telegraphic("Pluto is not a planet, and it has five moons.") == (
        "Pluto not planet, five moons."
    )
    assert telegraphic("It is larger than Mercury.") == "larger than Mercury."


def test_a_digest_keeps_the_richest_sentences_and_names_the_cited_notes() -> None:
    titles = {"n1": "Mars", "n2": "Phobos and Deimos"}
    digest = fact_digest(
        "How many moons has Mars?",
        "From the notes: It is a cold desert world [1]. Mars has two small moons, Phobos and "
        "Deimos [2]. They were found in 1877 [2].",
        ["n1", "n2"],
        19,
        titles.get,
    )
    assert digest.startswith("moons Mars? → ")
    assert "Phobos" in digest and "Deimos" in digest and "1877" in digest
    assert "cold desert" not in digest
    assert digest.endswith("(notes: Mars)")
    assert "[1]" not in digest and "From the notes" not in digest
    assert estimate_tokens(digest) <= 19
    roomy = fact_digest("How many moons has Mars?", "Two [1].", ["n1", "n2"], 60, titles.get)
    assert roomy == "moons Mars? → Two. (notes: Mars, Phobos and Deimos)"


def test_a_tight_budget_still_keeps_the_first_words_of_the_best_sentence() -> None:
    digest = fact_digest("Age?", "The Solar System formed 4.6 billion years ago.", [], 8)
    assert estimate_tokens(digest) <= 8
    assert "4.6" in digest


def test_a_summary_of_summaries_names_every_part_first() -> None:
    parts = [
        "- Mars moons? → two: Phobos Deimos\n- weather? → cold",
        "- Jupiter moons? → 95 known\n- storms? → Great Red Spot",
        "- Saturn rings? → ice, rock\n- moons? → 274 known, 128 found 2025",
    ]
    summary = roll_up(parts, 30)
    assert estimate_tokens(summary) <= 30
    lines = summary.split("\n")
    assert any("Phobos" in line for line in lines)
    assert any("95" in line for line in lines)
    assert any("274" in line for line in lines)
    # In the order they were asked.
    assert summary.index("Phobos") < summary.index("95") < summary.index("274")


def test_digests_and_summaries_of_mixed_text_always_fit_their_budget() -> None:
    # Sizes are counted as parts are chosen, not by joining each trial: the result must
    # still fit the estimate of the text as written, in and outside ASCII.
    import random

    pieces = [
        "Mars has 2 moons.",
        "Phobos, (the) larger one, orbits in 7.6 hours!",
        "東京 は 日本 の 首都 です。",
        "Naïve café — «not» the same; 2½ times more?",
        "A",
        "İstanbul ſo KNOW the answer: no.",
        "x" * 90,
    ]
    rng = random.Random(7)
    for _ in range(400):
        question = " ".join(rng.choice(pieces) for _ in range(rng.randint(0, 3)))
        answer = " ".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        budget = rng.randint(1, 40)
        digest = fact_digest(question, answer, [], budget)
        if " → " in digest:
            assert estimate_tokens(digest) <= budget
        summary = roll_up([digest, answer, question], budget)
        assert estimate_tokens(summary) <= budget


def test_a_digest_takes_whole_sentences_cut_at_line_breaks_and_full_stops() -> None:
    answer = (
        "Some plain words come first\n"
        "Phobos orbits Mars in 7.6 hours。 The rest is filler text here! "
        "Deimos takes 30.3 hours"
    )
    digest = fact_digest("Phobos orbit?", answer, [], 14)
    assert digest == "Phobos orbit? → Phobos orbits Mars 7.6 hours。"


def test_digests_cut_sentences_and_citations_as_the_rest_of_lore_does() -> None:
    # The digest's own fast readings must agree with the shared rules they stand in for.
    import re

    from lore.core.fact_digest import _sentences, _without_citations
    from lore.core.passages import split_sentences

    samples = [
        "One. Two? Three! Four",
        "a. . b!!  c\n\nd \n. e",
        "東京です。 次は大阪。終わり",
        "no mark at all\r\nsecond line.\u2028third",
        "Mars has moons [1]. Phobos [2, 3] and\t[4]Deimos [x] [ 5] [6 ,7].",
        "  . ",
        "",
    ]
    for text in samples:
        assert _sentences(text) == split_sentences(text)
        assert _without_citations(text) == re.sub(r"\s?\[\d+(?:\s*,\s*\d+)*\]", "", text)


def test_sentences_of_text_with_full_stops_only_are_cut_as_any_others() -> None:
    # Text whose only mark is the full stop is cut by a pattern of its own.
    import random

    from lore.core.fact_digest import _sentences
    from lore.core.passages import split_sentences

    rng = random.Random(11)
    for alphabet in ("ab. \n\t\x1c\x0b", "ab.!? \n", "ab.。 \xa0\u2028"):
        for _ in range(2_000):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
            assert _sentences(text) == split_sentences(text), repr(text)


def test_words_are_cut_and_picked_as_the_estimate_of_their_join_allows() -> None:
    # A digest counts what a join of words would cost instead of joining them: it must keep
    # exactly the words that a join measured with `estimate_tokens` keeps.
    import random

    from lore.core.fact_digest import _densest_words, _fits, _sentence, _token

    vocabulary = [
        "Mars", "moons", "2", "7.6", "hours", "Phobos,", "the", "not", "東京", "café",
        "x" * 30, "İstanbul", "«larger»", "—", "1877)", "orbit", "A", "of", "ΑΒΓ", "2½",
    ]  # fmt: skip
    rng = random.Random(11)
    for _ in range(600):
        found = [rng.choice(vocabulary) for _ in range(rng.randint(0, 24))]
        limit = rng.randint(-1, 40)
        prefix: list[str] = []
        for word in found:
            if estimate_tokens(" ".join([*prefix, word])) > limit:
                break
            prefix.append(word)
        assert _fits(" ".join(found), limit) == " ".join(prefix)
        sentence = _sentence(" ".join(found))
        if sentence is None:
            continue
        asked = {_token(rng.choice(vocabulary)).bare_stem for _ in range(rng.randint(0, 3))}
        tokens = sentence.tokens
        # Numbers, then the question's words, then names, then the rest.
        ranks = [
            0 if token.digit else 1 if token.bare_stem in asked else 2 if token.bare_capital else 3
            for token in tokens
        ]
        kept: list[int] = []
        for position in sorted(range(len(tokens)), key=ranks.__getitem__):
            trial = sorted([*kept, position])
            if estimate_tokens(" ".join(tokens[i].text for i in trial)) <= limit:
                kept = trial
        expected = " ".join(tokens[i].text for i in kept)
        assert _densest_words(sentence, limit, asked) == expected
        # Asked again, from what the sentence remembers.
        assert _densest_words(sentence, limit, asked) == expected


def test_sentences_are_let_go_once_digested_while_their_words_stay_read() -> None:
    from lore.core import fact_digest as digests

    before = fact_digest("Phobos orbit?", "Phobos orbits Mars in 7.6 hours. Deimos is far.", [], 14)
    assert digests._known_sentences
    digests.forget_sentences()
    assert not digests._known_sentences
    assert digests._question.cache_info().currsize == 0
    assert digests._known_tokens
    # Read again from the words alone, the digest is the same.
    assert (
        fact_digest("Phobos orbit?", "Phobos orbits Mars in 7.6 hours. Deimos is far.", [], 14)
        == before
    )
    digests.forget_words()
    assert not digests._known_tokens


def test_what_digests_have_read_stays_within_its_limit() -> None:
    from lore.core.fact_digest import _Read

    read = _Read(str.upper, 3)
    assert [read[word] for word in ("a", "b", "c", "a")] == ["A", "B", "C", "A"]
    assert len(read) == 3
    # Full, it starts again rather than grow: what it gives is the same.
    assert read["d"] == "D"
    assert len(read) <= 3
    assert read["a"] == "A"


def test_summary_lines_are_weighed_as_their_words_would_be() -> None:
    # Lines of ASCII and digest arrows are weighed without reading their words: the weight
    # and size must be those the words give, whatever the line holds.
    import random

    from lore.core.fact_digest import _CAPITAL, _DIGIT, _line, _token
    from lore.core.tokens import text_counts

    pieces = [
        "- ", "Mars", "moons", "2", "7.6", "x1", "(notes:", "Phobos)", "→", "3→4", "a",
        "  ", "\t", "\n", " ", "Ünïcode", "²", "٣", "É", "ſo", "\u00a0", "A.", "'B'",
    ]  # fmt: skip
    rng = random.Random(5)
    for _ in range(2000):
        text = "".join(
            rng.choice(pieces) + rng.choice(["", " "]) for _ in range(rng.randint(0, 12))
        )
        tokens = list(map(_token, text.split()))
        density = 2 * sum(map(_DIGIT, tokens)) + sum(map(_CAPITAL, tokens[1:]))
        assert _line(text) == (density, text_counts(text)), text


def test_tokens_are_read_as_their_words_say_whatever_their_punctuation() -> None:
    # Words in punctuation are read from their bare word, and ASCII of several words keeps
    # its text for a stem: each field must be what reading the token's own words gives.
    import random
    import re

    from lore.core.fact_digest import _KEPT, _read_token, forget_words
    from lore.core.passages import STOPWORDS, words
    from lore.core.stemming import stem_word

    pieces = [
        "Mars", "the", "not", "os", "path", "2", "x1", "É", "café", "_", "ſo", "İ",
        ".", ",", "(", ")", "'", '"', "-", "=", "?", "—", "«", "\x7f", "\x1c",
    ]  # fmt: skip
    rng = random.Random(3)
    forget_words()
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 5)))
        bare = re.sub(r"^\W+|\W+$", "", text)
        lowered = bare.lower()
        found = words(text)
        content = [word for word in found if word not in STOPWORDS]
        digit = not text.isalpha() and any(map(str.isdigit, text))
        token = _read_token(text)
        assert token.text == text and token.characters == len(text)
        assert token.outside == len(text) - len(text.encode("ascii", "ignore"))
        assert token.telling == (lowered not in STOPWORDS or lowered in _KEPT), text
        assert (token.digit, token.capital) == (digit, text[:1].isupper()), text
        assert set(token.stems) == set(map(stem_word, found)), text
        assert set(token.content_stems) == set(map(stem_word, content)), text
        assert token.bare_capital == bare[:1].isupper(), text
        assert token.weight == 2 * digit + text[:1].isupper()
        assert token.rank == (0 if digit else 2 if bare[:1].isupper() else 3)
        if text.isascii() and lowered and found != [lowered]:
            # No word's stem, as a question's words are: it keeps what joins its words.
            assert token.bare_stem == lowered
            assert re.search(r"\W", token.bare_stem)
        else:
            assert token.bare_stem == stem_word(lowered), text
    forget_words()


def test_a_sentence_measures_and_weighs_its_telling_words_as_written() -> None:
    import random

    from lore.core.fact_digest import _read_sentence
    from lore.core.tokens import text_counts

    pieces = ["Mars", "the", "2", "7.6", "(Phobos,", "東京", "not", "café", "x" * 40, "of"]
    rng = random.Random(9)
    for _ in range(1000):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 30)))
        sentence = _read_sentence(text)
        if sentence is None:
            assert all(word in ("the", "of") for word in text.split())
            continue
        written = sentence.text
        assert (sentence.characters, sentence.words, sentence.outside) == text_counts(written)
        tokens = sentence.tokens
        weight = sum(2 * token.digit + token.capital for token in tokens[1:])
        assert sentence.weight == weight + 2 * tokens[0].digit


def test_a_question_leaves_the_room_its_written_line_measures() -> None:
    # The room is worked out from the words kept instead of measuring the line written.
    import random

    from lore.core.fact_digest import _question

    vocabulary = [
        "Mars", "moons?", "the", "of", "not", "東京", "café", "x" * 40, "(Phobos)", "2½",
        "os.path", "İstanbul", "a", "1877", "ΑΒΓ?", "—",
    ]  # fmt: skip
    rng = random.Random(5)
    for _ in range(500):
        question = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 20)))
        max_tokens = rng.randint(1, 80)
        asked, _, room = _question(question, max_tokens)
        assert room == max_tokens - estimate_tokens(f"{asked} → ")
