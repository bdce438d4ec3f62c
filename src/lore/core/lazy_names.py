"""Names a package offers but imports only when first asked for (PEP 562).

A package that re-exports from its modules would otherwise load all of them whenever any
one is imported; with `lazy_names`, naming one type costs only its own module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(namespace: dict[str, Any], home_of: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` that imports `name` from the module `home_of[name]` names,
    and keeps it in `namespace` (the module's globals) so it is looked up only once."""
    module_name = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        home = home_of.get(name)
        if home is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    return __getattr__
