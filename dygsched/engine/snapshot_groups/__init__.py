"""Snapshot-group strategies (PSG, ESDG, BLAD, DyGNeX, REAL): one strategy, a planner and an executor.

The names below are imported on first use: the CLI types a run's ``sched`` block by
``SnapshotGroupConfig`` (``config.py``) before it imports torch, which the strategy needs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_HOMES = {
    "EpochRun": "executor",
    "GroupExecutor": "executor",
    "SequentialExecutor": "executor",
    "SnapshotGroupConfig": "config",
    "SnapshotGroupStrategy": "strategy",
    "Timeline": "timeline",
    "TimelineConfig": "config",
}

__all__ = [
    "EpochRun",
    "GroupExecutor",
    "SequentialExecutor",
    "SnapshotGroupConfig",
    "SnapshotGroupStrategy",
    "Timeline",
    "TimelineConfig",
]

if TYPE_CHECKING:
    from dygsched.engine.snapshot_groups.config import SnapshotGroupConfig, TimelineConfig
    from dygsched.engine.snapshot_groups.executor import EpochRun, GroupExecutor, SequentialExecutor
    from dygsched.engine.snapshot_groups.strategy import SnapshotGroupStrategy
    from dygsched.engine.snapshot_groups.timeline import Timeline


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
