"""Snapshot-group strategies (PSG, ESDG, BLAD, DyGNeX, REAL): one strategy, a planner and an executor."""

from dygsched.engine.snapshot_groups.executor import EpochRun, GroupExecutor, SequentialExecutor
from dygsched.engine.snapshot_groups.strategy import SnapshotGroupStrategy
from dygsched.engine.snapshot_groups.timeline import Timeline, TimelineConfig

__all__ = ["EpochRun", "GroupExecutor", "SequentialExecutor", "SnapshotGroupStrategy", "Timeline", "TimelineConfig"]
