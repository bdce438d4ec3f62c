"""The catalog of notes kept between runs: the same catalog as reading every note, each note
read again only when its file changed, and a cache that is missing, damaged, foreign or a
link never changes what is filed."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lore.cli import main
from lore.core.ingest import filing, ingest_text
from lore.core.ingest.catalog_cache import CACHE_FILE
from lore.core.ingest.filing import Catalog
from lore.core.vault import Vault, init_vault

DOCUMENTS = [
    ("paste:mars", "Mars", "trusted", "Mars has two small moons, Phobos and Deimos."),
    ("paste:ceres", "Ceres", "semi-trusted", "Ceres is the largest object in the asteroid belt."),
    ("paste:io", "Io", "untrusted", "Io has more than four hundred active volcanoes."),
    ("paste:europa", "Europa", "trusted", "Europa hides a salty ocean under its icy crust."),
]
PROBES = [
    "Mars has two small moons, Phobos and Deimos.",
    "Mars has two moons called Phobos and Deimos, both small.",
    "Ceres is the largest object in the asteroid belt.",
    "Europa hides an ocean of salt water under its crust.",
    "Io has more than four hundred volcanoes.",
]


def fill(vault: Vault) -> None:
    for uri, title, trust, text in DOCUMENTS:
        ingest_text(vault, text, uri=uri, title=title, trust=trust)  # type: ignore[arg-type]


def cache_path(vault: Vault) -> Path:
    return vault.layout.state / CACHE_FILE


def what_filing_sees(catalog: Catalog) -> tuple[Any, ...]:
    """Everything filing asks of a catalog: its notes, titles, origins, and the neighbours
    the similarity gate finds for each probe, in order."""
    neighbours = [
        [
            (match.path, match.trust, match.text, match.word_similarity, match.shingle_similarity)
            for match in catalog.index.nearest(probe)
        ]
        for probe in PROBES
    ]
    return (
        {path: vars(info) for path, info in catalog.notes.items()},
        catalog.titles,
        catalog.by_origin,
        catalog.trusted_titles,
        catalog.stats,
        len(catalog.index),
        neighbours,
    )


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The notes read from disk, in order."""
    read: list[str] = []
    load_note = Vault.load_note

    def counted(self: Vault, relpath: str) -> Any:
        read.append(relpath)
        return load_note(self, relpath)

    monkeypatch.setattr(Vault, "load_note", counted)
    return read


def test_a_catalog_taken_from_the_cache_is_the_one_read_from_the_notes(
    vault: Vault, reads: list[str]
) -> None:
    fill(vault)
    cache_path(vault).unlink(missing_ok=True)
    reads.clear()
    from_notes = Catalog.build(vault)
    assert sorted(reads) == sorted(from_notes.notes) and cache_path(vault).is_file()
    assert cache_path(vault).stat().st_mode & 0o777 == 0o600  # it holds the notes' text
    reads.clear()
    from_cache = Catalog.build(vault)
    assert reads == []  # no note was read again
    assert what_filing_sees(from_cache) == what_filing_sees(from_notes)
    assert any(what_filing_sees(from_cache)[-1])  # the probes do find neighbours


def test_a_note_changed_on_disk_is_read_again_and_its_row_replaced(
    vault: Vault, reads: list[str]
) -> None:
    fill(vault)
    Catalog.build(vault)
    path = vault.find("Mars").path
    mars = vault.root / path
    mars.write_text(
        mars.read_text(encoding="utf-8").replace("two small moons", "two tiny moons"),
        encoding="utf-8",
    )
    reads.clear()
    catalog = Catalog.build(vault)
    assert reads == [path]
    reads.clear()
    again = Catalog.build(vault)
    assert reads == []  # the new text was kept
    assert what_filing_sees(again) == what_filing_sees(catalog)
    assert again.index.nearest("Mars has two tiny moons, Phobos and Deimos.")[0].text.startswith(
        "Mars has two tiny moons"
    )


def test_a_removed_note_leaves_the_catalog_and_the_cache(vault: Vault, reads: list[str]) -> None:
    fill(vault)
    Catalog.build(vault)
    gone = vault.find("Io").path
    (vault.root / gone).unlink()
    reads.clear()
    catalog = Catalog.build(vault)
    assert reads == []  # the notes around it still come from the cache
    assert gone not in catalog.notes and "io" not in catalog.titles
    with sqlite3.connect(cache_path(vault)) as connection:
        kept = {path for (path,) in connection.execute("SELECT path FROM notes")}
    assert gone not in kept and kept == set(catalog.notes)


def test_a_dry_run_keeps_nothing(vault: Vault) -> None:
    ingest_text(vault, "Titan has lakes of methane.", uri="paste:t", title="Titan", trust="trusted")
    cache_path(vault).unlink(missing_ok=True)
    report = ingest_text(
        vault,
        "Rhea has a thin atmosphere.",
        uri="paste:r",
        title="Rhea",
        trust="trusted",
        dry_run=True,
    )
    assert report.sources[0].admitted == 1
    assert not cache_path(vault).exists()


@pytest.mark.parametrize(
    "damage",
    ["garbage", "foreign database", "older version", "bad row", "cut short"],
)
def test_a_damaged_or_foreign_cache_is_a_miss_and_is_made_again(
    vault: Vault, reads: list[str], damage: str
) -> None:
    fill(vault)
    cache_path(vault).unlink(missing_ok=True)
    expected = what_filing_sees(Catalog.build(vault))
    path = cache_path(vault)
    if damage == "garbage":
        path.write_bytes(b"\x1b[31mnot a database\x00" * 100)
    elif damage == "cut short":
        path.write_bytes(path.read_bytes()[:3000])
    else:
        with sqlite3.connect(path) as connection:
            if damage == "foreign database":
                connection.execute("DROP TABLE notes")
                connection.execute("CREATE TABLE notes (x)")
            elif damage == "older version":
                connection.execute("UPDATE meta SET value = '0' WHERE key = 'version'")
            else:
                connection.execute("UPDATE notes SET info = '[1, [\"x\"]]'")
        connection.close()
    reads.clear()
    assert what_filing_sees(Catalog.build(vault)) == expected
    assert sorted(reads) == sorted(expected[0])  # every note was read from disk
    reads.clear()
    assert what_filing_sees(Catalog.build(vault)) == expected
    assert reads == []  # and the cache was made again


def test_rows_written_by_code_that_reads_notes_differently_are_never_used(
    vault: Vault, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(vault)
    Catalog.build(vault)
    # As if a later version split a note's paragraphs differently: its fingerprint differs.
    split = filing.claim_paragraphs
    monkeypatch.setattr(filing, "claim_paragraphs", lambda body: [" ".join(split(body))])
    filing.reading_fingerprint.cache_clear()
    try:
        reads.clear()
        catalog = Catalog.build(vault)
        assert sorted(reads) == sorted(catalog.notes)  # every note read again
        reads.clear()
        assert what_filing_sees(Catalog.build(vault)) == what_filing_sees(catalog)
        assert reads == []  # and cached as this version reads them
    finally:
        filing.reading_fingerprint.cache_clear()


def test_the_cache_is_never_opened_through_a_link(
    vault: Vault, tmp_path: Path, reads: list[str]
) -> None:
    fill(vault)
    cache_path(vault).unlink(missing_ok=True)
    target = tmp_path / "elsewhere.sqlite3"
    target.write_bytes(b"")
    os.symlink(target, cache_path(vault))
    expected = what_filing_sees(Catalog.build(vault))
    assert target.read_bytes() == b""  # nothing was written through the link
    assert cache_path(vault).is_symlink()
    reads.clear()
    assert what_filing_sees(Catalog.build(vault)) == expected
    assert reads  # read from the notes each time


def test_a_note_past_a_lowered_size_limit_is_refused_as_when_read(vault: Vault) -> None:
    fill(vault)
    Catalog.build(vault)
    vault.config.vault.max_note_bytes = 10
    from_cache = Catalog.build(vault, keep=False)
    cache_path(vault).unlink()
    assert what_filing_sees(from_cache) == what_filing_sees(Catalog.build(vault, keep=False))
    assert from_cache.notes == {}


def test_lore_ingest_reads_only_the_notes_changed_since_the_last_run(
    vault: Vault, tmp_path: Path, reads: list[str]
) -> None:
    fill(vault)
    documents = []
    for name, text in [
        ("titan", "# Titan\n\nTitan has lakes of liquid methane near its poles.\n"),
        ("rhea", "# Rhea\n\nRhea may have a faint ring system of its own.\n"),
    ]:
        documents.append(tmp_path / f"{name}.md")
        documents[-1].write_text(text, encoding="utf-8")
    before = note_stats(vault)
    assert main(["--vault", str(vault.root), "ingest", str(documents[0])]) == 0
    after = note_stats(vault)
    reads.clear()
    assert main(["--vault", str(vault.root), "ingest", str(documents[1])]) == 0
    # Only what the run before wrote is read again, and what this one wrote (by the search
    # index): every other note is taken from the cache.
    written = {path for path, stat in after.items() if before.get(path) != stat}
    new = {path for path, stat in note_stats(vault).items() if after.get(path) != stat}
    assert written and set(reads) == written | new
    assert any(
        "faint ring" in path.read_text(encoding="utf-8")
        for path in (vault.root / "notes").rglob("*.md")
    )


def note_stats(vault: Vault) -> dict[str, tuple[int, int]]:
    return {path: (size, mtime) for path, size, mtime in vault.scan_note_files()}


def test_ingests_running_at_once_keep_the_cache_true_to_the_notes(
    vault: Vault, tmp_path: Path
) -> None:
    import subprocess
    import sys

    fill(vault)
    Catalog.build(vault)
    folders = []
    for worker in range(2):
        folder = tmp_path / f"docs-{worker}"
        folder.mkdir()
        for number in range(6):
            (folder / f"moon-{worker}-{number}.md").write_text(
                f"# Moon {worker}-{number}\n\nMoon {worker}-{number} circles its planet "
                f"every {worker * 10 + number + 2} days at {number + 1},000 km.\n",
                encoding="utf-8",
            )
        folders.append(folder)
    command = [sys.executable, "-m", "lore", "--vault", str(vault.root), "ingest"]
    runs = [
        subprocess.Popen([*command, str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for folder in folders
    ]
    for run in runs:
        _, errors = run.communicate(timeout=120)
        assert run.returncode == 0, errors
    titles = {note.title for note in Vault.open(vault.root).iter_notes()}
    assert {f"Moon {w}-{n}" for w in range(2) for n in range(6)} <= titles
    # Taken from the cache wherever a row still matches its file, the catalog is the one
    # the notes make: neither run left a row the other's writes made stale.
    from_cache = Catalog.build(vault)
    cache_path(vault).unlink()
    assert what_filing_sees(from_cache) == what_filing_sees(Catalog.build(vault, keep=False))


def test_the_cache_gives_each_note_asked_for_in_the_order_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from array import array

    from lore.core.ingest import catalog_cache
    from lore.core.ingest.catalog_cache import CachedNote, CatalogCache, NoteInfo

    monkeypatch.setattr(catalog_cache, "_READ_CHUNK", 4)

    def note(number: int) -> CachedNote:
        values = array("q", range(number, number + 5))
        claims = [(values, values[:2], f"text {number}")]
        path = f"notes/{number:03d}-é.md"
        info = NoteInfo(path, f"Note {number}", "trusted", "active", None, None, True)
        return CachedNote(number, number * 10, info, claims)

    cache = CatalogCache(tmp_path / "catalog.sqlite3", writable=True, reading="test")
    written = [note(number) for number in range(0, 60, 3)]
    cache.write(reversed(written), ())  # rows need not be written in order
    by_path = {cached.path: cached for cached in written}
    # A few paths, in any order, some never cached: looked up by name.
    few = [written[7].path, "notes/missing.md", written[2].path]
    assert list(cache.read(few)) == [by_path.get(path) for path in few]
    # A quarter of them or more, sorted: read in one pass, four rows at a time, past the
    # rows not asked for.
    for many in (sorted([*by_path, "notes/001-é.md", "notes/zzz.md"]), sorted(by_path)[::3]):
        assert list(cache.read(many)) == [by_path.get(path) for path in many]
    # Read with another reading of notes: all misses.
    other = CatalogCache(tmp_path / "catalog.sqlite3", writable=False, reading="other")
    assert list(other.read(many)) == [None] * len(many)


SPILL_DOCUMENTS = [
    (
        "mars.md",
        "# Mars\n\nMars has two small moons, Phobos and Deimos.\n\n"
        "Olympus Mons on Mars is the tallest volcano in the solar system.\n",
    ),
    (
        "mars-again.md",
        "# Mars notes\n\nMars has two small moons, Phobos and Deimos!\n\n"
        "A day on Mars lasts a little longer than a day on Earth.\n",
    ),
    (
        "jupiter.md",
        "# Jupiter\n\nJupiter has ninety-five known moons, the largest being "
        "Ganymede.\n\nJupiter's Great Red Spot is a storm larger than the Earth.\n",
    ),
    (
        "rumours.md",
        "# Jupiter rumours\n\nJupiter has twelve known moons, the largest being "
        "Io.\n\nThe Great Red Spot of Jupiter is a storm bigger than Earth.\n",
    ),
    (
        "saturn.md",
        "# Saturn\n\nSaturn's rings are made mostly of ice and a little rock.\n\n"
        "Saturn would float in a bath large enough to hold it.\n",
    ),
]

TRUST_OF = {"mars.md": "trusted", "jupiter.md": "trusted", "mars-again.md": "semi-trusted"}


def _ingest_all(root: Path, folder: Path) -> list[Any]:
    """`lore ingest` of each document in turn, at its trust (`TRUST_OF`): what each run did,
    source by source, as it printed it."""
    import contextlib
    import io
    import json

    outcomes = []
    for name, _ in SPILL_DOCUMENTS:
        trust = TRUST_OF.get(name, "untrusted")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            command = ["--vault", str(root), "ingest", str(folder / name), "--trust", trust]
            assert main([*command, "--json"]) == 0
        report = json.loads(printed.getvalue())
        outcomes.append(
            [
                {
                    key: source[key]
                    for key in ("outcome", "admitted", "merged", "held", "reasons", "notes")
                }
                for source in report["sources"]
            ]
        )
    return outcomes


def test_an_ingest_that_moves_claims_to_disk_decides_as_one_that_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spills: list[int]
) -> None:
    from lore.core.gates import similarity

    folder = tmp_path / "documents"
    folder.mkdir()
    for name, text in SPILL_DOCUMENTS:
        (folder / name).write_text(text, encoding="utf-8")
    expected = _ingest_all(init_vault(tmp_path / "in-memory", "Test"), folder)
    assert any(source["merged"] for run in expected for source in run)
    assert any(source["held"] for run in expected for source in run)
    monkeypatch.setattr(similarity, "MEMORY_CLAIMS", 2)
    root = init_vault(tmp_path / "spilling", "Test")
    assert _ingest_all(root, folder) == expected
    assert spills
    # Each store was unlinked as soon as it was open: the state folder holds none of them.
    assert not [path for path in (root / ".lore").rglob("*") if "similarity" in path.name]
