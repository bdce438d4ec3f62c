"""Lore's own JSONL records (turns, metrics) read back: as written, or through pydantic.

Every command that reads a record back (every ask, `lore history`, `lore metrics`) would
otherwise pay for importing pydantic and building its validators, more than the reading
itself. A line as Lore writes it holds each field in the one type it is written as (text as
text, a count as an int, a time as a float), so such a line is taken as it is, with one type
check per field. Anything else (an older line's `3` for `3.0`, a number written as text, a
missing field, a wrong kind) is handed whole to pydantic, imported only then, which converts
what its lax mode converts and names what it cannot: no conversion is written here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pydantic import TypeAdapter

Record = TypeVar("Record")

# What `record.get(name, ABSENT)` gives for a key the record does not have, told apart from
# one that holds null.
ABSENT: Any = object()


class RecordError(ValueError):
    """A record that is not what it should be: a field missing, or holding the wrong kind."""


class NotAsWritten(Exception):
    """A field not in the type Lore writes it in: the whole record goes to pydantic."""


def as_written(value: Any, kind: type) -> Any:
    if type(value) is kind:
        return value
    raise NotAsWritten


def optional(value: Any, kind: type) -> Any:
    return None if value is None else as_written(value, kind)


def texts(value: Any) -> list[str]:
    if type(value) is list and all(type(item) is str for item in value):
        return value
    raise NotAsWritten


def choice(value: Any, choices: tuple[str, ...]) -> Any:
    if type(value) is str and value in choices:
        return value
    raise NotAsWritten


def float_or_none(value: float | None) -> float | None:
    """A number field as written: a float, whatever it was given as in code."""
    return None if value is None else float(value)


def read_record(
    kind: type[Record], record: Any, as_lore_wrote_it: Callable[[dict[str, Any]], Record]
) -> Record:
    """`record` as a `kind`: by `as_lore_wrote_it` when every field is as Lore writes it,
    else by pydantic; `RecordError` names the field pydantic could not read."""
    if type(record) is dict:
        try:
            return as_lore_wrote_it(record)
        except NotAsWritten:
            pass
    return validated(kind, record)


def validated(kind: type[Record], record: Any) -> Record:
    from pydantic import ValidationError

    try:
        return _adapter(kind).validate_python(record)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or kind.__name__
        raise RecordError(f"{where}: {first['msg'].lower()}") from None


_adapters: dict[type, Any] = {}


def _adapter(kind: type[Record]) -> TypeAdapter[Record]:
    adapter = _adapters.get(kind)
    if adapter is None:
        from pydantic import TypeAdapter

        adapter = _adapters[kind] = TypeAdapter(kind)
    return adapter  # type: ignore[no-any-return]
