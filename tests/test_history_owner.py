"""Only HistoryStore reads and writes history.jsonl, so its format has one owner.

Every other module asks a `HistoryStore` for turns, raw lines or offsets. The check reads the
source: a module that names the history file's path (`layout.history`) or builds it from
its file name is one that could open it behind the store's back.
"""

from __future__ import annotations

import ast
from pathlib import Path

import lore
from lore.core.history import HistoryStore
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
