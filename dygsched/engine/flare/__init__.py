"""FlareDTDG: hybrid batching with temporal decay over node partitions (``FlareStrategy``, ``FlareConfig``).

The names below are imported on first use: the CLI reads ``FlareConfig``'s defaults before it
imports torch, which the strategy needs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_HOMES = {"SCHEDULES": "decay", "decay_counts": "decay", "FlareConfig": "config", "FlareStrategy": "strategy"}

__all__ = ["SCHEDULES", "FlareConfig", "FlareStrategy", "decay_counts"]

if TYPE_CHECKING:
    from dygsched.engine.flare.config import FlareConfig
    from dygsched.engine.flare.decay import SCHEDULES, decay_counts
    from dygsched.engine.flare.strategy import FlareStrategy


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
