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
thousand (a vault's notes, a history's turns) use `dataclass_own_init`: `dataclass`
writes their `__init__` (a quarter of its work), and they share the `__repr__` and
`__eq__` here, which are three quarters of it. Type checkers see a dataclass
(`dataclass_transform`), with the signature `dataclass` would generate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, Field, dataclass, field, fields
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

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


@overload
def dataclass_own_init(cls: Record, /) -> Record: ...


@overload
def dataclass_own_init(
    *, frozen: bool = False, slots: bool = False, kw_only: bool = False
) -> Callable[[Record], Record]: ...


@dataclass_transform(field_specifiers=(field,))
def dataclass_own_init(
    cls: Record | None = None,
    /,
    *,
    frozen: bool = False,
    slots: bool = False,
    kw_only: bool = False,
) -> Record | Callable[[Record], Record]:
    """`cls` as a dataclass whose `__init__` `dataclass` writes (as quick to call as any),
    and with the shared `__repr__` and, unless it is frozen, `__eq__`. A frozen one keeps
    the generated `__eq__` and `__hash__`: it may be a key hashed in a loop."""

    def made_from(cls: Record) -> Record:
        own = dict(vars(cls))
        made: Any = dataclass(repr=False, eq=frozen, frozen=frozen, slots=slots, kw_only=kw_only)(
            cls
        )
        if "__repr__" not in own:
            made.__repr__ = _repr
        if not frozen and "__eq__" not in own:
            made.__eq__ = _eq
            if "__hash__" not in own:
                made.__hash__ = None
        return made  # type: ignore[no-any-return]

    return made_from if cls is None else made_from(cls)


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
    compared = _compared.get(self.__class__)
    if compared is None:
        compared = _compared[self.__class__] = _compared_fields(self)
    return bool(compared(self) == compared(other))


# Each class's compared fields, read at its first comparison: a record compared in a loop
# (a list searched for one) pays for `fields()` once.
_compared: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def _compared_fields(record: Any) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of `record`'s compared fields, as the generated `__eq__` compares them (a
    tuple: a field is equal to itself even where its value is not, as NaN)."""
    names = [item.name for item in fields(record) if item.compare]
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        read = attrgetter(names[0])
        return lambda one: (read(one),)
    return lambda one: ()
