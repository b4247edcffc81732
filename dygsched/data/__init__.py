"""Data stage: sources -> ``TemporalGraph`` -> snapshot groups."""

from dygsched.data.groups import SnapshotGroup, Split, sliding_groups, split_by_time
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph

__all__ = ["Snapshot", "SnapshotGroup", "Split", "Task", "TemporalGraph", "sliding_groups", "split_by_time"]
