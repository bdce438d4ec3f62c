"""Notes a person can read: a long section becomes linked parts of at most PART_WORDS words,
cut between paragraphs or sentences, with nothing lost, and none too big to be indexed."""

from __future__ import annotations

import random
import re

from lore.core.ingest import ingest_text
from lore.core.ingest.chunking import chunk, split_long
from lore.core.note_parts import PART_WORDS, navigation, split_part
from lore.core.passages import note_passages
from lore.core.vault import Vault

_WORD_TEXT = "planet orbit moon comet dust ring storm ice rock gas crater volcano field belt"
WORDS = _WORD_TEXT.split()


def _text(size: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    paragraphs, total, number = [], 0, 0
    while total < size:
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))).capitalize()
            + f" fact {number}-{index}."
            for index in range(rng.randint(2, 7))
        ]
        paragraph = " ".join(sentences)
        paragraphs.append(paragraph)
        total += len(paragraph) + 2
        number += 1
    return "\n\n".join(paragraphs)


def test_a_long_section_is_cut_into_parts_between_sentences_losing_nothing() -> None:
    text = _text(200_000)
    chunks = chunk(text, "text", "Field notes", 3000)
    parts: dict[str, list[str]] = {}
    for piece in chunks:
        parts.setdefault(piece.section, []).append(piece.text)
    assert len(parts) > 10
    totals = {split_part(name)[2] for name in parts}  # type: ignore[index]
    assert totals == {len(parts)}
    for name, texts in parts.items():
        assert split_part(name) is not None and split_part(name)[0] == "Field notes"  # type: ignore[index]
        assert len(" ".join(texts).split()) <= PART_WORDS
        for text_of_chunk in texts:
            assert text_of_chunk.endswith("."), "a chunk ends between sentences"
    assert " ".join(piece.text for piece in chunks).split() == text.split()


def test_a_short_section_stays_one_note_and_keeps_its_title() -> None:
    chunks = chunk(
        "# Io\n\nIo has volcanoes.\n\n# Europa\n\nEuropa has ice.", "markdown", "Moons", 3000
    )
    assert [piece.section for piece in chunks] == ["Io", "Europa"]


def test_sentences_keep_their_closing_quotes_and_brackets() -> None:
    text = 'He said "Look up." Then (see the note.) Next one starts here. ' * 20
    pieces = split_long(text.strip(), 120)
    assert " ".join(pieces).split() == text.split()


def test_a_long_text_becomes_linked_notes_that_the_index_keeps(vault: Vault) -> None:
    vault.config.vault.max_note_bytes = 60_000
    text = _text(600_000, seed=3)
    report = ingest_text(vault, text, uri="file:///big.txt", title="Big text", trust="trusted")
    assert report.sources[0].outcome == "admitted"
    notes = {note.title: note for note in vault.iter_notes()}
    assert len(notes) > 40
    assert vault.index.skipped_files() == {}
    for title, note in notes.items():
        found = split_part(title)
        assert found is not None and found[0] == "Big text", title
        assert len(note.body.encode("utf-8")) < vault.config.vault.max_note_bytes
        # The first line links the neighbours, and every link names a note that exists.
        first_line = note.body.split("\n", 1)[0]
        assert first_line == navigation(title)
        for linked in re.findall(r"\[\[([^\]]+)\]\]", first_line):
            assert linked in notes
        # Navigation is not evidence.
        assert all(not p.text.startswith("Part ") for p in note_passages(note.body))
    # Nothing was lost, and a claim from the middle of the source can be found.
    stored = " ".join(note.body for note in notes.values())
    for fact in re.findall(r"fact \d+-\d+", text):
        assert f"{fact}." in stored
    middle = re.findall(r"fact \d+-\d+", text)[len(text) // 2000]
    hits = vault.index.search(f'"{middle}"', limit=3)
    assert hits and f"{middle}." in vault.read_note(hits[0].path).body
    again = ingest_text(vault, text, uri="file:///big.txt", title="Big text", trust="trusted")
    assert again.sources[0].outcome == "unchanged"
