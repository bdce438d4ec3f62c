"""Only HistoryStore reads and writes history.jsonl, so its format has one owner.

Every other module asks a `HistoryStore` for turns, raw lines or offsets. The check reads the
source: a module that names the history file's path (`layout.history`) or builds it from
its file name is one that could open it behind the store's back.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import lore
from history_helpers import bulk_append
from lore.core.history import CASEFOLD_TARGETS, HistoryStore
from lore.core.history_index import HistoryIndex
from lore.core.turns import Turn
from lore.core.vault import Vault

SOURCE = Path(lore.__file__).resolve().parent
# The store, its private offset index, and the layout that defines where the file lives.
OWNERS = {"core/history.py", "core/history_index.py", "core/vault.py"}
FILE_NAMES = {"history.jsonl", "history.idx"}


def history_file_uses(tree: ast.AST) -> list[int]:
    """Line numbers where code reaches the history file's path without the store."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "history":
            owner = node.value
            named = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if named == "layout":
                lines.append(node.lineno)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            if any(
                isinstance(side, ast.Constant) and side.value in FILE_NAMES
                for side in (node.left, node.right)
            ):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            called = node.func
            name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
            if name in {"open", "Path", "joinpath", "with_name"} and any(
                isinstance(arg, ast.Constant) and arg.value in FILE_NAMES for arg in node.args
            ):
                lines.append(node.lineno)
    return sorted(lines)


def test_the_check_finds_each_way_of_reaching_the_file() -> None:
    code = (
        "a = vault.layout.history\n"
        "b = layout.history\n"
        "c = vault.root / 'history.jsonl'\n"
        "d = open('history.jsonl')\n"
        "e = state.joinpath('history.idx')\n"
        "f = vault.config.history\n"  # the settings section of the same name is not the file
        "g = Finding('history', 'history.jsonl', 'message')\n"  # naming it in text is fine
    )
    assert history_file_uses(ast.parse(code)) == [1, 2, 3, 4, 5]


def test_no_module_but_the_store_reaches_the_history_file() -> None:
    offenders = []
    for path in sorted(SOURCE.rglob("*.py")):
        relative = path.relative_to(SOURCE).as_posix()
        if relative in OWNERS:
            continue
        for line in history_file_uses(ast.parse(path.read_text(encoding="utf-8"))):
            offenders.append(f"src/lore/{relative}:{line}")
    assert offenders == [], "use HistoryStore instead: " + ", ".join(offenders)


# -- what the other modules ask the store for ---------------------------------------------------


def make_turn(number: int) -> Turn:
    return Turn(id=f"t{number:011x}aaaaaa", time="2026-01-01T00:00:00Z", question=f"q {number}")


def test_raw_lines_forward_carry_offsets_that_seek_back_to_them(vault: Vault) -> None:
    store = HistoryStore(vault)
    assert list(store.iter_lines_from(0)) == []
    assert store.size() == 0 and store.signature() is None
    turns = [store.append(make_turn(number)) for number in range(5)]
    with open(vault.layout.history, "ab") as handle:
        handle.write(b'{"id": "torn')
    lines = list(store.iter_lines_from(0))
    data = vault.layout.history.read_bytes()
    assert [data[offset : offset + len(line)] for offset, line in lines] == [
        text for _, text in lines
    ]
    assert lines[-1][1] == b'{"id": "torn'  # a torn last line comes without its newline
    third = lines[2][0]
    assert [offset for offset, _ in store.iter_lines_from(third)] == [o for o, _ in lines[2:]]
    assert store.size() == len(data)
    assert [offset for offset, _ in store.iter_lines_backwards(third)] == [
        o for o, _ in reversed(lines[2:])
    ]
    end = store.end_of_turn(turns[1].id)
    assert end == third
    found = store.turn_ending_at(third)
    assert found is not None and found.id == turns[1].id
    assert store.turn_ending_at(len(data) + 10) is None
    assert store.end_of_turn("t-no-such-turn") is None


def test_check_counts_records_and_names_bad_lines(vault: Vault) -> None:
    store = HistoryStore(vault)
    store.append(make_turn(1))
    with open(vault.layout.history, "ab") as handle:
        handle.write(b"not json\n")
    store.append(make_turn(2))
    report = store.check()
    assert (report.records, report.bad_lines, report.torn_tail) == (2, [2], False)


def test_signature_changes_with_each_append(vault: Vault) -> None:
    store = HistoryStore(vault)
    store.append(make_turn(1))
    before = store.signature()
    store.append(make_turn(2))
    after = store.signature()
    assert before is not None and after is not None and before != after
    assert after[0] == store.size()


# -- the offset index is extended, not read whole, by a process that only appends --------------


def test_an_append_extends_the_saved_index_without_loading_it(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    bulk_append(vault, [make_turn(number) for number in range(400)])
    assert HistoryStore(vault).count() == 400  # builds and saves the index
    index_file = vault.layout.state / "history.idx"
    loads = []
    real_load = HistoryIndex._load

    def counting_load(self: HistoryIndex) -> None:
        loads.append(self)
        real_load(self)

    monkeypatch.setattr(HistoryIndex, "_load", counting_load)
    asking = HistoryStore(Vault.open(vault.root))  # a `lore ask` in a new process
    for number in range(400, 405):
        asking.append(make_turn(number))
    assert loads == []
    assert index_file.stat().st_size == 405 * 24
    fresh = HistoryStore(Vault.open(vault.root))
    assert fresh.count() == 405
    assert [turn.question for turn in fresh.read_range(398, 405)] == [
        f"q {number}" for number in range(398, 405)
    ]


def test_an_index_that_no_longer_fits_the_history_is_not_extended(vault: Vault) -> None:
    bulk_append(vault, [make_turn(number) for number in range(300)])
    assert HistoryStore(vault).count() == 300
    # The history edited by hand to the same length, but its last line moved:
    # the saved entry for it no longer points at it.
    data = vault.layout.history.read_bytes()
    data = data.replace(b'"q 298"', b'"q 298abc"').replace(b'"q 299"', b'"qq"')
    vault.layout.history.write_bytes(data)
    HistoryStore(Vault.open(vault.root)).append(make_turn(300))
    fresh = HistoryStore(Vault.open(vault.root))
    assert fresh.count() == 301
    assert [turn.question for turn in fresh.read_range(298, 301)] == ["q 298abc", "qq", "q 300"]


# -- a bounded search ------------------------------------------------------------------------


def test_a_search_page_stops_at_its_budget_and_resumes_where_it_stopped(vault: Vault) -> None:
    filler = "filler " * 150  # about 1 KB a turn
    turns = [
        Turn(id=f"t{number:011x}aaaaaa", time="x", question=f"q {number}", answer=filler)
        for number in range(2000)
    ]
    for number in (5, 900, 1500, 1999):
        turns[number].answer += " comet"
    bulk_append(vault, turns)
    store = HistoryStore(vault)
    budget = 512 * 1024  # two blocks of the backward read: about 500 turns
    found: list[str] = []
    pages = 0
    before = None
    while True:
        page = store.search_page("COMET", limit=10, budget_bytes=budget, before=before)
        pages += 1
        assert page.scanned_bytes <= budget + 256 * 1024
        found += [turn.question for turn in page.hits]
        if page.complete:
            break
        before = page.resume_before
    assert found == ["q 1999", "q 1500", "q 900", "q 5"]  # newest first, none twice
    assert pages >= 4
    nothing = store.search_page("zzqxv", budget_bytes=budget)
    assert nothing.hits == [] and not nothing.complete
    assert nothing.scanned_bytes < vault.layout.history.stat().st_size / 2


def test_a_search_page_stops_at_its_limit_and_when_cancelled(vault: Vault) -> None:
    bulk_append(vault, [make_turn(number) for number in range(50)])
    store = HistoryStore(vault)
    first = store.search_page("q", limit=3)
    assert [turn.question for turn in first.hits] == ["q 49", "q 48", "q 47"]
    rest = store.search_page("q", limit=100, before=first.resume_before)
    assert [turn.question for turn in rest.hits] == [f"q {n}" for n in range(46, -1, -1)]
    assert rest.complete
    stopped = store.search_page("q", cancelled=lambda: True)
    assert stopped.cancelled and stopped.hits == [] and not stopped.complete
    assert store.search_page("   ").complete


def test_words_with_accents_quotes_and_other_scripts_are_still_found(vault: Vault) -> None:
    store = HistoryStore(vault)
    for number in range(20):
        store.append(make_turn(number))
    store.append(
        Turn(id="tu", time="x", question='Ünïcode "quoted" back\\slash', answer="東京 Ölfeld")
    )
    for query in ("ünÏcode", '"quoted"', "back\\slash", "東京", "ölfeld ÜNÏCODE"):
        assert [turn.id for turn in store.search(query)] == ["tu"], query
        assert [turn.id for turn in store.search_page(query).hits] == ["tu"], query
    assert store.search("ünïcodes") == []


def test_the_letters_other_characters_casefold_to_are_all_known() -> None:
    folded_to = {
        letter
        for code in range(0x80, sys.maxunicode + 1)
        for letter in chr(code).casefold()
        if letter.isascii()
    }
    assert folded_to == CASEFOLD_TARGETS


def test_a_word_beyond_ascii_finds_the_text_it_casefolds_from(vault: Vault) -> None:
    store = HistoryStore(vault)
    store.append(Turn(id="t1", time="x", question="Die Größe der Sonne", answer="ﬁnite"))
    store.append(Turn(id="t2", time="x", question="Something else"))
    assert [turn.id for turn in store.search("GRÖSSE")] == ["t1"]
    assert [turn.id for turn in store.search_page("grösse ﬁnite").hits] == ["t1"]
