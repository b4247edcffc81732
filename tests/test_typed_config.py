"""Typed configuration blocks and parts: what a block checks as it is built, what a part checks against
the class it builds, and how two typed values are compared."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import pytest

from dygsched.errors import ConfigError
from dygsched.typed_config import Part, Typed, as_container, differences


@dataclasses.dataclass(frozen=True)
class Inner(Typed):
    key: ClassVar[str] = "outer.inner"

    size: int = 2


@dataclasses.dataclass(frozen=True)
class Outer(Typed):
    key: ClassVar[str] = "outer"

    name: str = "a"
    rate: float = 0.5
    inner: Inner = dataclasses.field(default_factory=Inner)
    part: Part = dataclasses.field(default_factory=lambda: Part("outer.part", "collections.Counter"))


@dataclasses.dataclass(frozen=True)
class Source:
    """A class a part builds: its fields type the part's settings."""

    count: int = 1
    label: str | None = None


def test_a_block_is_built_from_its_mapping_with_its_nested_blocks_and_parts():
    built = Outer.from_config({"name": 7, "rate": 1, "inner": {"size": 3}, "part": {"_target_": "x.Y", "name": "y", "k": 1}})
    assert built == Outer("7", 1.0, Inner(3), Part("outer.part", "x.Y", "y", {"k": 1}))  # Hydra's 7 is the text it was
    assert as_container(built) == {
        "name": "7",
        "rate": 1.0,
        "inner": {"size": 3},
        "part": {"name": "y", "_target_": "x.Y", "k": 1},
    }
    assert Outer.defaults() == {"name": "a", "rate": 0.5, "inner": {"size": 2}, "part": {"_target_": "collections.Counter"}}


@pytest.mark.parametrize(
    "options, message",
    [
        ({"rate": "fast"}, "outer.rate must be a number, got 'fast'"),
        ({"name": True}, "outer.name must be a string, got True"),
        ({"inner": {"size": 2.5}}, "outer.inner.size must be an integer, got 2.5"),
        ({"inner": {"sise": 2}}, "unknown key 'outer.inner.sise': Inner has size"),
        ({"part": {"name": "y"}}, "outer.part 'y' names no _target_"),
        (
            {"part": {"_target_": "x.Y", "name": "y", "path": "???"}},
            "outer.part 'y' needs outer.part.path=... (it has no default)",
        ),
    ],
)
def test_a_wrong_value_is_one_line_naming_it(options, message):
    with pytest.raises(ConfigError) as error:
        Outer.from_config(options)
    assert str(error.value) == message


def test_a_part_checks_its_settings_against_the_class_it_builds():
    target = f"{__name__}.Source"
    assert Part("dataset", target, settings={"count": 3, "label": None}).check() is Source
    with pytest.raises(ConfigError, match=r"^dataset.count must be an integer, got 'three'$"):
        Part("dataset", target, settings={"count": "three"}).check()
    with pytest.raises(ConfigError, match=r"^dataset.label must be a string or null, got \[1\]$"):
        Part("dataset", target, settings={"label": [1]}).build()
    assert Part("dataset", target, settings={"count": 4}).build() == Source(count=4)
    with pytest.raises(ConfigError, match="cannot build model 'm' 'no.such.Class'"):
        Part("model", "no.such.Class", "m").check()


def test_two_typed_values_differ_setting_by_setting():
    before = Outer()
    after = dataclasses.replace(before, rate=0.25, inner=Inner(5), part=before.part.with_settings(k=2))
    assert differences(before, after) == ["rate (0.5 -> 0.25)", "inner.size (2 -> 5)", "part.k (None -> 2)"]
    assert differences(before, after, skip=("rate", "part")) == ["inner.size (2 -> 5)"]
