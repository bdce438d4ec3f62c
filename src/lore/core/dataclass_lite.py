"""Dataclasses whose `__init__`, `__repr__` and `__eq__` are written once, here, for all.

On Python 3.11 `dataclass` writes each class's methods as source and compiles them as the
class is defined: about 2M instructions (half a millisecond) a class, paid by every process
that imports it. The settings' eleven sections and the records a search returns were a
tenth of what `lore search` did. `dataclass_lite` declares a class's fields exactly as
`dataclass` does (so defaults, `field(default_factory=...)`, `dataclasses.fields`, `asdict`
and pydantic's validation all work) and gives it the methods below, which behave as the
generated ones do: arguments by position or keyword, defaults filled in, equality field by
field between instances of the one class, and the same repr. A method the class defines
itself is kept.

The shared `__init__` is slower for each instance it makes, so records made by the
thousand (a vault's notes) keep `dataclass`. Type checkers see a dataclass
(`dataclass_transform`), with the signature `dataclass` would generate.
"""

from __future__ import annotations

from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, TypeVar, dataclass_transform

Record = TypeVar("Record", bound=type)


@dataclass_transform(field_specifiers=(field,))
def dataclass_lite(cls: Record) -> Record:
    """`cls` as a dataclass, with the shared methods instead of generated ones."""
    made: Any = dataclass(init=False, repr=False, eq=False)(cls)
    own = vars(made)
    shared: dict[str, Any] = {"__init__": _init, "__repr__": _repr}
    if "__eq__" not in own:
        # Mutable and compared by value, so unhashable, as a dataclass with `eq` is.
        shared.update(__eq__=_eq, __hash__=None)
    for name, method in shared.items():
        if name not in own:
            setattr(made, name, method)
    return cls


def _init(self: Any, *args: Any, **values: Any) -> None:
    items: tuple[Field[Any], ...] = fields(self)
    if len(args) > len(items):
        raise TypeError(
            f"{type(self).__qualname__} takes {len(items)} arguments but {len(args)} were given"
        )
    for item, value in zip(items, args, strict=False):
        if item.name in values:
            raise TypeError(f"{type(self).__qualname__} got {item.name!r} twice")
        values[item.name] = value
    for item in items:
        if item.name in values:
            value = values.pop(item.name)
        elif item.default_factory is not MISSING:
            value = item.default_factory()
        elif item.default is not MISSING:
            value = item.default
        else:
            raise TypeError(f"{type(self).__qualname__} needs {item.name!r}")
        setattr(self, item.name, value)
    if values:
        raise TypeError(f"{type(self).__qualname__} has no field {next(iter(values))!r}")


def _repr(self: Any) -> str:
    shown = ", ".join(
        f"{item.name}={getattr(self, item.name)!r}" for item in fields(self) if item.repr
    )
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: Any) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    compared = [item.name for item in fields(self) if item.compare]
    return tuple(getattr(self, name) for name in compared) == tuple(
        getattr(other, name) for name in compared
    )
