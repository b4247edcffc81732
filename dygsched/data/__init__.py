"""Data stage: sources -> ``TemporalGraph`` (snapshots) or ``EventStream`` (events), either one a
``DynamicData`` -> units of work.

The names below are imported on first use, so that reading a path or a setting (what the CLI does
before it accepts a run) does not import torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_HOMES = {
    "DynamicData": "kinds",
    "EventSplit": "events",
    "EventStream": "events",
    "SnapshotGroup": "groups",
    "Split": "groups",
    "sliding_groups": "groups",
    "split_by_time": "groups",
    "Snapshot": "temporal_graph",
    "Task": "temporal_graph",
    "TemporalGraph": "temporal_graph",
}

__all__ = [
    "DynamicData",
    "EventSplit",
    "EventStream",
    "Snapshot",
    "SnapshotGroup",
    "Split",
    "Task",
    "TemporalGraph",
    "sliding_groups",
    "split_by_time",
]

if TYPE_CHECKING:
    from dygsched.data.events import EventSplit, EventStream
    from dygsched.data.groups import SnapshotGroup, Split, sliding_groups, split_by_time
    from dygsched.data.kinds import DynamicData
    from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
