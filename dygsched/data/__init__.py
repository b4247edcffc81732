"""Data stage: sources -> ``TemporalGraph`` (snapshots) or ``EventStream`` (events) -> units of work."""

from dygsched.data.events import EventSplit, EventStream
from dygsched.data.groups import SnapshotGroup, Split, sliding_groups, split_by_time
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph

__all__ = [
    "EventSplit", "EventStream", "Snapshot", "SnapshotGroup", "Split", "Task", "TemporalGraph", "sliding_groups", "split_by_time",
]
