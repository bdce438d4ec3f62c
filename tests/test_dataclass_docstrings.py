"""Every dataclass in Lore has a docstring, because one without costs every process start.

On Python 3.11, `@dataclass` gives a class without a docstring one made from its signature,
`str(inspect.signature(cls))`, computed when the class is made, that is, at import. That
costs roughly 0.3 to 1 million instructions a class (more with many fields), paid by every
command before it does any work. A real docstring costs nothing and says what the record is.
"""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src" / "lore"


def _is_dataclass(decorator: ast.expr) -> bool:
    """`dataclass`, `dataclass(...)`, `dataclasses.dataclass` or `dataclasses.dataclass(...)`."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Name):
        return target.id == "dataclass"
    return isinstance(target, ast.Attribute) and target.attr == "dataclass"


def test_every_dataclass_has_a_docstring() -> None:
    files = sorted(SOURCE.rglob("*.py"))
    assert files, f"no Python files under {SOURCE}"
    missing = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ClassDef)
                and any(_is_dataclass(decorator) for decorator in node.decorator_list)
                and ast.get_docstring(node) is None
            ):
                missing.append(f"{path.relative_to(SOURCE.parent)}:{node.lineno} {node.name}")
    assert not missing, (
        "dataclasses without a docstring (each costs an inspect.signature at import on 3.11):\n"
        + "\n".join(missing)
    )
