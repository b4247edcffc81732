"""Snapshot-group strategies (PSG, ESDG, BLAD, DyGNeX, REAL): one strategy, a planner and an executor."""

from dygsched.engine.snapshot_groups.executor import EpochRun, GroupExecutor, SequentialExecutor
from dygsched.engine.snapshot_groups.objective import GroupObjective
from dygsched.engine.snapshot_groups.strategy import SnapshotGroupStrategy, build_split
from dygsched.engine.snapshot_groups.timeline import Timeline, TimelineConfig

__all__ = [
    "EpochRun", "GroupExecutor", "GroupObjective", "SequentialExecutor", "SnapshotGroupStrategy", "Timeline", "TimelineConfig",
    "build_split",
]
