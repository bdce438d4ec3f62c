"""The Notes pane: tree by folder and tag, viewer with backlinks, search, editor, new note."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from pane_harness import PaneHost, wait_until
from rich.cells import cell_len
from textual.widgets import Input, Label, Markdown, OptionList, Static

from lore.core.session import LoreSession
from lore.core.vault import Vault
from lore.tui.messages import VaultChanged
from lore.tui.panes.notes import NotesPane, wiki_links_as_markdown
from lore.tui.widgets.notes_tree import NotesTree, fit_title


@pytest.fixture
def planets(vault: Vault) -> Vault:
    vault.create_note(
        "Jupiter",
        "# Jupiter\n\nThe largest planet. Its moon [[Io]] is volcanic.\n",
        tags=["planet", "giant"],
        folder="planets",
    )
    vault.create_note(
        "Io",
        "# Io\n\nA moon of [[Jupiter]] with hundreds of volcanoes.\n",
        tags=["moon"],
        folder="moons",
    )
    vault.create_note("Mars", "# Mars\n\nThe red planet.\n", tags=["planet"], folder="planets")
    return vault


def _viewer_text(pane: NotesPane) -> str:
    return pane.query_one("#notes-viewer", Markdown).source


def _tree_labels(pane: NotesPane) -> list[str]:
    tree = pane.query_one(NotesTree)
    labels = []
    stack = list(tree.root.children)
    while stack:
        node = stack.pop(0)
        labels.append(str(node.label))
        stack.extend(node.children)
    return labels


async def test_tree_groups_notes_by_folder_and_by_tag(planets: Vault) -> None:
    app = PaneHost(lambda: NotesPane(LoreSession(planets)))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(NotesPane)
        await wait_until(lambda: "planets/" in _tree_labels(pane), message="folders not shown")
        tree = pane.query_one(NotesTree)
        folders, tags = tree.root.children
        planets_folder = next(n for n in folders.children if str(n.label) == "planets/")
        planets_folder.expand()
        await pilot.pause()
        assert [str(child.label) for child in planets_folder.children] == ["Jupiter", "Mars"]
        # Tags are listed when their branch is opened, not before.
        assert not tags.children
        tags.expand()
        await pilot.pause()
        planet_tag = next(n for n in tags.children if str(n.label).startswith("#planet "))
        assert "(2)" in str(planet_tag.label)
        planet_tag.expand()
        await pilot.pause()
        assert [str(child.label) for child in planet_tag.children] == ["Jupiter", "Mars"]


def test_a_long_title_is_cut_in_the_middle_to_keep_its_end() -> None:
    title = "A Guide to the Major Meteor Showers - Dark Sky Club — Where showers come from"
    fitted = fit_title(title, 30)
    assert cell_len(fitted) <= 30 and "…" in fitted
    assert fitted.startswith("A Guide") and fitted.endswith("showers come from")
    assert fit_title("Mars", 30) == "Mars"
    assert cell_len(fit_title("木星の大赤斑と縞模様の観測記録について詳しく", 20)) <= 20


async def test_notes_cut_from_one_document_are_told_apart_in_the_tree(vault: Vault) -> None:
    shared = "Assembling Your 8-inch Dobsonian Telescope — "
    for step in ("Check collimation", "First night out"):
        vault.create_note(shared + step, f"# {step}\n\nText.\n")
    for number in range(40):  # enough for the tree to need its scrollbar
        vault.create_note(f"Zodiacal light observation {number}", "Faint.\n")
    app = PaneHost(lambda: NotesPane(LoreSession(vault)))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(NotesPane)
        tree = pane.query_one(NotesTree)
        # As in the app, where the pane is filled while hidden behind another.
        pane.display = False
        await wait_until(lambda: len(_tree_labels(pane)) > 2, message="notes not shown")
        await pilot.pause()
        pane.display = True
        await pilot.pause()
        drawn = "\n".join(tree.render_line(y).text for y in range(tree.size.height))
        # Both ends on screen, whole, though the titles are longer than the tree is wide.
        assert cell_len(shared + "Check collimation") > tree.size.width
        assert "Check collimation" in drawn and "First night out" in drawn, drawn
        assert drawn.count("Assembling") == 2
        assert tree.show_vertical_scrollbar
        # Wider, and the titles are shown whole again.
        pane.query_one("#notes-side").styles.width = 100
        await pilot.pause()
        await wait_until(
            lambda: (
                shared + "First night out"
                in [str(node.label) for node in tree.root.children[0].children]
            ),
            message="titles not refitted",
        )


async def test_opening_a_note_shows_it_with_its_backlinks(planets: Vault) -> None:
    app = PaneHost(lambda: NotesPane(LoreSession(planets)))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(NotesPane)
        pane.open_note("Jupiter")
        await wait_until(lambda: "The largest planet" in _viewer_text(pane))
        meta = str(pane.query_one("#notes-meta", Static).render())
        assert "#giant #planet" in meta and "notes/planets/jupiter.md" in meta
        backlinks = pane.query_one("#notes-backlinks", OptionList)
        await wait_until(lambda: backlinks.option_count == 1)
        assert str(backlinks.get_option_at_index(0).prompt) == "Io"
        # Following the backlink by keys opens the note that links here.
        pane.query_one(NotesTree).focus()
        await pilot.press("b", "enter")
        await wait_until(lambda: "hundreds of volcanoes" in _viewer_text(pane))


async def test_wiki_links_in_the_viewer_open_the_linked_note(planets: Vault) -> None:
    app = PaneHost(lambda: NotesPane(LoreSession(planets)))
    async with app.run_test(size=(120, 40)):
        pane = app.query_one(NotesPane)
        pane.open_note("notes/moons/io.md")
        await wait_until(lambda: "hundreds of volcanoes" in _viewer_text(pane))
        assert "[Jupiter](note:Jupiter)" in _viewer_text(pane)
        viewer = pane.query_one("#notes-viewer", Markdown)
        viewer.post_message(Markdown.LinkClicked(viewer, "note:Jupiter"))
        await wait_until(lambda: "The largest planet" in _viewer_text(pane))


def test_wiki_links_keep_aliases_and_escape_targets() -> None:
    shown = wiki_links_as_markdown("See [[Great Red Spot#Size|the spot]] and [[Io]].")
    assert shown == "See [the spot](note:Great%20Red%20Spot) and [Io](note:Io)."


async def test_search_as_you_type_lists_matches_and_opens_one(planets: Vault) -> None:
    app = PaneHost(lambda: NotesPane(LoreSession(planets)))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(NotesPane)
        await wait_until(lambda: pane._loaded)
        pane.query_one(NotesTree).focus()
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"moon")
        results = pane.query_one("#notes-results", OptionList)
        await wait_until(lambda: results.option_count >= 2, message="no search results")
        assert results.display and not pane.query_one(NotesTree).display
        titles = [str(results.get_option_at_index(i).prompt).split("\n")[0] for i in range(2)]
        assert set(titles) == {"Io", "Jupiter"}
        await pilot.press("enter")
        assert app.focused is results
        await pilot.press("enter")
        await wait_until(lambda: titles[0] in _viewer_text(pane))
        await pilot.press("escape")
        assert pane.query_one(NotesTree).display


async def test_search_with_no_match_says_so(planets: Vault) -> None:
    app = PaneHost(lambda: NotesPane(LoreSession(planets)))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(NotesPane)
        pane.query_one("#notes-search", Input).focus()
        await pilot.press(*"zzzquux")
        results = pane.query_one("#notes-results", OptionList)
        await wait_until(lambda: results.option_count == 1)
        assert "No note matches" in str(results.get_option_at_index(0).prompt)


def _editor_script(tmp_path: Path, appended: str) -> str:
    script = tmp_path / "fake-editor.sh"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "{appended}" >> "$1"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


async def test_new_note_is_created_edited_and_reindexed(
    planets: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDITOR", _editor_script(tmp_path, "Saturn has rings of ice."))
    app = PaneHost(lambda: NotesPane(LoreSession(planets)))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(NotesPane)
        await wait_until(lambda: pane._loaded)
        pane.query_one(NotesTree).focus()
        await pilot.press("n")
        await pilot.press(*"Saturn", "enter")
        await wait_until(lambda: "rings of ice" in _viewer_text(pane), message="edit not shown")
        written = (planets.root / "notes" / "saturn.md").read_text()
        assert "title: Saturn" in written and "rings of ice" in written
        assert [hit.title for hit in planets.index.search("rings")] == ["Saturn"]
        await wait_until(lambda: "Saturn" in _tree_labels(pane))


async def test_editing_the_open_note_reindexes_it(
    planets: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDITOR", _editor_script(tmp_path, "Mars has two small moons."))
    app = PaneHost(lambda: NotesPane(LoreSession(planets)))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(NotesPane)
        pane.open_note("Mars")
        await wait_until(lambda: "The red planet" in _viewer_text(pane))
        pane.query_one(NotesTree).focus()
        await pilot.press("e")
        await wait_until(lambda: "two small moons" in _viewer_text(pane))
        assert [hit.title for hit in planets.index.search("small")] == ["Mars"]


async def test_a_failing_editor_is_one_notification(
    planets: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDITOR", "no-such-editor-anywhere")
    app = PaneHost(lambda: NotesPane(LoreSession(planets)))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(NotesPane)
        pane.open_note("Mars")
        await wait_until(lambda: "The red planet" in _viewer_text(pane))
        pane.query_one(NotesTree).focus()
        await pilot.press("e")
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert any("editor not found: no-such-editor-anywhere" in m for m in messages)


async def test_an_unknown_note_is_one_notification(planets: Vault) -> None:
    app = PaneHost(lambda: NotesPane(LoreSession(planets)))
    async with app.run_test(size=(120, 40)):
        pane = app.query_one(NotesPane)
        pane.open_note("Pluto")
        await wait_until(lambda: len(app._notifications) == 1)
        assert "no note titled 'Pluto'" in next(iter(app._notifications)).message


async def test_notes_written_by_another_process_appear(planets: Vault) -> None:
    app = PaneHost(lambda: NotesPane(LoreSession(planets)))
    async with app.run_test(size=(120, 40)):
        pane = app.query_one(NotesPane)
        await wait_until(lambda: "planets/" in _tree_labels(pane))
        folders = pane.query_one(NotesTree).root.children[0]
        next(n for n in folders.children if str(n.label) == "planets/").expand()
        await wait_until(lambda: "Mars" in _tree_labels(pane))
        outside = planets.root / "notes" / "planets" / "venus.md"
        outside.write_text("# Venus\n\nHot enough to melt lead.\n")
        pane.post_message(VaultChanged(frozenset({"notes"})))
        # The branch the user had open stays open, now with the new note in it.
        await wait_until(lambda: "Venus" in _tree_labels(pane), message="new file not shown")


async def test_a_note_opened_from_elsewhere_is_revealed_in_the_tree(planets: Vault) -> None:
    app = PaneHost(lambda: NotesPane(LoreSession(planets)))
    async with app.run_test(size=(120, 40)):
        pane = app.query_one(NotesPane)
        await wait_until(lambda: pane._loaded)
        pane.open_note("Io")
        tree = pane.query_one(NotesTree)
        await wait_until(
            lambda: tree.cursor_node is not None and str(tree.cursor_node.label) == "Io",
            message="the tree did not follow the opened note",
        )
        assert "hundreds of volcanoes" in _viewer_text(pane)


async def test_a_new_note_lands_in_the_folder_under_the_cursor(planets: Vault) -> None:
    app = PaneHost(lambda: NotesPane(LoreSession(planets)))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(NotesPane)
        pane.open_note("Mars")
        tree = pane.query_one(NotesTree)
        await wait_until(
            lambda: tree.cursor_node is not None and str(tree.cursor_node.label) == "Mars"
        )
        tree.focus()
        await pilot.press("n")
        assert "notes/planets/" in str(app.screen.query_one(Label).render())
        await pilot.press(*"Venus", "enter")
        await wait_until(lambda: (planets.root / "notes" / "planets" / "venus.md").is_file())
