"""DistDy: online partitioning onto additive graph stores, and sampled training on them (``DistDyStrategy``, ``DistDyConfig``).

The names below are imported on first use: the CLI reads ``DistDyConfig``'s defaults before it
imports torch, which the strategy needs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_HOMES = {"DistDyConfig": "config", "DistDyStrategy": "strategy"}

__all__ = ["DistDyConfig", "DistDyStrategy"]

if TYPE_CHECKING:
    from dygsched.engine.distdy.config import DistDyConfig
    from dygsched.engine.distdy.strategy import DistDyStrategy


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
