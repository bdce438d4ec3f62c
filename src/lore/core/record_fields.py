"""The fields of Lore's own JSONL records (turns, metrics), read as pydantic's lax mode read them.

Those records were pydantic models, and every command that reads one back paid for importing
pydantic and building the models, more than the reading itself. These readers take a value
from a parsed JSON line and give it as its field's type or raise `RecordError` naming the
field: whole numbers from integral floats and numeric text, numbers from whole numbers and
numeric text, text only from text, lists of text only from lists of text. A caller checks
the one type a field is written as (`type(value) is str`) and calls a reader only for
anything else, so a line as Lore writes it is read with one check per field and no call.
"""

from __future__ import annotations

from typing import Any, cast

# What `record.get(name, ABSENT)` gives for a key the record does not have, told apart from
# one that holds null.
ABSENT: Any = object()


class RecordError(ValueError):
    """A record that is not what it should be: a field missing, or holding the wrong kind."""


def text(value: Any, name: str) -> str:
    if type(value) is str:
        return cast(str, value)
    raise RecordError(f"{name}: expected text, got {_kind(value)}")


def optional_text(value: Any, name: str) -> str | None:
    return None if value is None else text(value, name)


def whole_number(value: Any, name: str) -> int:
    kind = type(value)
    if kind is int or kind is bool:
        return int(value)
    if kind is float and value.is_integer():
        return int(value)
    if kind is str:
        # "5", " 5 ", "1_000" and "5.00" as pydantic read them; not "5." or "1e3".
        whole, point, zeros = value.strip().partition(".")
        if not point or (zeros and not zeros.strip("0")):
            try:
                return int(whole)
            except ValueError:
                pass
    raise RecordError(f"{name}: expected a whole number, got {_kind(value)}")


def optional_whole_number(value: Any, name: str) -> int | None:
    return None if value is None else whole_number(value, name)


def number(value: Any, name: str) -> float:
    kind = type(value)
    if kind is float or kind is int or kind is bool:
        return float(value)
    if kind is str:
        try:
            return float(value)
        except ValueError:
            pass
    raise RecordError(f"{name}: expected a number, got {_kind(value)}")


def optional_number(value: Any, name: str) -> float | None:
    return None if value is None else number(value, name)


def texts(value: Any, name: str) -> list[str]:
    if type(value) in (list, tuple) and all(type(item) is str for item in value):
        return list(value)
    raise RecordError(f"{name}: expected a list of text, got {_kind(value)}")


def choice(value: Any, choices: tuple[str, ...], name: str) -> str:
    if type(value) is str and value in choices:
        return cast(str, value)
    raise RecordError(f"{name}: expected one of {', '.join(choices)}, got {value!r}")


def fields_of(value: Any, name: str) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    raise RecordError(f"{name}: expected an object, got {_kind(value)}")


def float_or_none(value: float | None) -> float | None:
    """A number field as written: a float, whatever it was given as in code."""
    return None if value is None else float(value)


def _kind(value: Any) -> str:
    return "nothing" if value is ABSENT else type(value).__name__
