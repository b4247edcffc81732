"""A strategy's configuration: one frozen dataclass per strategy, each field a ``sched.<name>`` setting.

As ``PlannerConfig`` and ``TimelineConfig`` type the snapshot-group strategies' blocks, a
``StrategyConfig`` subclass types a strategy's flat settings, and it is the one place of each
setting's type and default: ``dygsched.launch.schema`` registers its defaults as the config
``strategy_config/<name>``, which ``conf/sched/<name>.yaml`` starts from, so the composed ``sched``
block has every setting (``sched.chunks=8`` overrides one) and the yaml restates none. The worker
builds the strategy from ``from_config(sched block)``, which refuses a key the dataclass does not
have; ``__post_init__`` checks each value against its field's annotation (``int``, ``float``,
``bool``, ``str``, ``None``, ``tuple[int, ...]`` or a union of them), so a subclass checks only
ranges and choices. Anything wrong is one ``ConfigError`` line naming ``sched.<name>``.

This module imports no torch, nor do the strategies' config modules at import: the CLI reads their
defaults before it imports torch.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

from dygsched.errors import ConfigError

S = TypeVar("S", bound="StrategyConfig")
KIND_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string", type(None): "null"}


def _is_union(hint: Any) -> bool:
    return get_origin(hint) in (Union, types.UnionType)


def conforms(value: Any, hint: Any) -> bool:
    """Whether ``value`` (as a config gives it: lists for tuples, ints for floats) fits ``hint``."""
    if _is_union(hint):
        return any(conforms(value, arg) for arg in get_args(hint))
    if get_origin(hint) is tuple:
        item = get_args(hint)[0]
        return isinstance(value, (list, tuple)) and all(conforms(v, item) for v in value)
    if hint is bool:
        return isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def normalised(value: Any, hint: Any) -> Any:
    """``value`` as the field holds it: a float for ``float``, a tuple for ``tuple[...]``."""
    if _is_union(hint):
        return normalised(value, next(arg for arg in get_args(hint) if conforms(value, arg)))
    if get_origin(hint) is tuple:
        return tuple(normalised(v, get_args(hint)[0]) for v in value)
    return float(value) if hint is float else value


def describe(hint: Any) -> str:
    """``an integer or null``, ``a list of integers``: what ``hint`` asks for, in words."""
    if _is_union(hint):
        return " or ".join(describe(arg) for arg in get_args(hint))
    if get_origin(hint) is tuple:
        return "a list of " + describe(get_args(hint)[0]).removeprefix("an ").removeprefix("a ") + "s"
    return KIND_NAMES.get(hint, hint.__name__)


@dataclass(frozen=True)
class StrategyConfig:
    """Base of every strategy's configuration dataclass (see the module docstring)."""

    def __post_init__(self) -> None:
        hints = get_type_hints(type(self))
        for item in fields(self):
            value, hint = getattr(self, item.name), hints[item.name]
            if not conforms(value, hint):
                raise ConfigError(f"sched.{item.name} must be {describe(hint)}, got {value!r}")
            object.__setattr__(self, item.name, normalised(value, hint))

    @classmethod
    def from_config(cls: type[S], options: Mapping[str, Any]) -> S:
        """The configuration from a composed ``sched`` block (without its ``_target_`` and ``name``)."""
        known = [item.name for item in fields(cls)]
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise ConfigError(f"unknown key 'sched.{unknown[0]}': {cls.__name__} has {', '.join(known)}")
        return cls(**options)

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Every setting's default as a config holds it (a list for a tuple): the ``strategy_config`` config."""
        values = {}
        for item in fields(cls):
            assert item.default is not MISSING, f"{cls.__name__}.{item.name} needs a default"
            values[item.name] = list(item.default) if isinstance(item.default, tuple) else item.default
        return values
