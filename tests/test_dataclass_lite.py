"""A `dataclass_lite` class behaves as the same class made by `dataclass` does."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pytest

from lore.core.dataclass_lite import dataclass_lite


@dataclass_lite
class Lite:
    """Made by dataclass_lite."""

    name: str
    count: int = 0
    tags: list[str] = field(default_factory=list)
    hidden: str = field(default="x", repr=False, compare=False)


@dataclass
class Generated:
    """Made by dataclass."""

    name: str
    count: int = 0
    tags: list[str] = field(default_factory=list)
    hidden: str = field(default="x", repr=False, compare=False)


def both(*args: Any, **values: Any) -> tuple[Any, Any]:
    return Lite(*args, **values), Generated(*args, **values)


@pytest.mark.parametrize(
    ("args", "values"),
    [
        (("a",), {}),
        (("a", 2), {}),
        (("a",), {"tags": ["t"]}),
        ((), {"name": "a", "count": 3, "tags": ["u", "v"], "hidden": "h"}),
        (("a", 1, ["t"], "h"), {}),
    ],
)
def test_arguments_by_position_and_keyword_fill_the_same_fields(
    args: tuple[Any, ...], values: dict[str, Any]
) -> None:
    lite, generated = both(*args, **values)
    assert dataclasses.asdict(lite) == dataclasses.asdict(generated)
    assert repr(lite) == repr(generated).replace("Generated(", "Lite(")


def test_each_instance_gets_its_own_default_from_a_factory() -> None:
    first, second = Lite("a"), Lite("b")
    first.tags.append("t")
    assert second.tags == []


@pytest.mark.parametrize(
    ("args", "values"),
    [
        ((), {}),
        (("a",), {"name": "b"}),
        (("a",), {"colour": "red"}),
        (("a", 1, [], "h", "extra"), {}),
    ],
)
def test_what_the_generated_init_refuses_is_refused(
    args: tuple[Any, ...], values: dict[str, Any]
) -> None:
    with pytest.raises(TypeError):
        Generated(*args, **values)
    with pytest.raises(TypeError):
        Lite(*args, **values)


def test_equality_compares_the_compared_fields_of_one_class_only() -> None:
    assert Lite("a", 1) == Lite("a", 1)
    assert Lite("a", 1, hidden="one") == Lite("a", 1, hidden="two")
    assert Lite("a", 1) != Lite("a", 2)
    assert Lite("a") != Generated("a")
    assert Lite("a").__eq__("a") is NotImplemented


def test_instances_are_unhashable_as_a_mutable_dataclass_is() -> None:
    with pytest.raises(TypeError):
        hash(Lite("a"))


def test_fields_and_methods_the_class_defines_itself_are_kept() -> None:
    @dataclass_lite
    class Own:
        """Defines its own repr and equality."""

        value: int = 0

        def __repr__(self) -> str:
            return "own"

        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = object.__hash__

    assert [item.name for item in dataclasses.fields(Own)] == ["value"]
    assert repr(Own(1)) == "own"
    assert Own(1) == Own(2)
    assert isinstance(hash(Own()), int)
    assert dataclasses.is_dataclass(Own)


def test_no_method_is_compiled_for_the_class() -> None:
    # What makes it cheap: every class shares the one __init__, __repr__ and __eq__.
    @dataclass_lite
    class Other:
        """Another record."""

        value: int = 0

    assert Other.__init__ is Lite.__init__
    assert Other.__repr__ is Lite.__repr__
    assert Other.__eq__ is Lite.__eq__


# -- dataclass_own_init: the generated __init__, the shared __repr__ and __eq__ -----------------


def own_init_classes() -> list[tuple[Any, Any]]:
    from lore.core.dataclass_lite import dataclass_own_init

    @dataclass_own_init
    class Plain:
        """Plain."""

        name: str
        count: float = 0.0
        hidden: str = field(default="x", repr=False, compare=False)

    @dataclass
    class PlainGenerated:
        """Plain, generated."""

        name: str
        count: float = 0.0
        hidden: str = field(default="x", repr=False, compare=False)

    @dataclass_own_init(frozen=True)
    class Frozen:
        """Frozen."""

        name: str
        count: float = 0.0

    @dataclass(frozen=True)
    class FrozenGenerated:
        """Frozen, generated."""

        name: str
        count: float = 0.0

    @dataclass_own_init(slots=True, kw_only=True)
    class Slotted:
        """Slotted, by keyword."""

        name: str
        count: float = 0.0

    @dataclass(slots=True, kw_only=True)
    class SlottedGenerated:
        """Slotted, by keyword, generated."""

        name: str
        count: float = 0.0

    return [(Plain, PlainGenerated), (Frozen, FrozenGenerated), (Slotted, SlottedGenerated)]


def test_a_record_with_its_own_init_compares_and_shows_as_the_generated_one_does() -> None:
    nan = float("nan")
    for made, generated in own_init_classes():
        pairs = [
            ({"name": "a"}, {"name": "a"}),
            ({"name": "a", "count": 1.0}, {"name": "a", "count": 2.0}),
            ({"name": "a", "count": nan}, {"name": "a", "count": nan}),  # the same NaN
            ({"name": "a", "count": nan}, {"name": "a", "count": float("nan")}),
        ]
        for first, second in pairs:
            assert (made(**first) == made(**second)) == (
                generated(**first) == generated(**second)
            ), (made, first, second)
            assert repr(made(**first)) == repr(generated(**first)).replace(
                generated.__qualname__, made.__qualname__
            )
        assert made(name="a").__eq__(generated(name="a")) is NotImplemented
    plain, frozen, slotted = (made for made, _ in own_init_classes())
    assert plain("a", hidden="one") == plain("a", hidden="two")
    with pytest.raises(TypeError):
        hash(plain("a"))
    assert hash(frozen("a", 1.0)) == hash(frozen("a", 1.0))
    assert {frozen("a"), frozen("a")} == {frozen("a")}
    with pytest.raises(dataclasses.FrozenInstanceError):
        frozen("a").name = "b"  # type: ignore[misc]
    with pytest.raises(TypeError):
        slotted("a")  # type: ignore[misc]
    assert not hasattr(slotted(name="a"), "__dict__")
