"""The snapshot-group strategies' configuration (``sched=psg``, ``esdg``, ``blad``, ``dygnex_*``, REAL's).

``SnapshotGroupConfig`` is what every ``conf/sched`` file of the family composes into: its
``planner`` (``PlannerConfig``: which groups a rank trains in which iteration), its ``timeline``
(``TimelineConfig``: planning at once, or REAL's profile-then-switch) and its ``executor``, a
``_target_`` part (``conf/sched/executor/``: how a rank trains its groups of an iteration), whose
settings are typed by the executor class it names. Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from dygsched.engine.strategy_config import StrategyConfig
from dygsched.errors import ConfigError
from dygsched.planner.planning import PlannerConfig
from dygsched.typed_config import Part, Typed

LR_SCALINGS = ("none", "linear", "sqrt")
SEQUENTIAL = "dygsched.engine.snapshot_groups.SequentialExecutor"  # as conf/sched/executor/sequential.yaml names it


@dataclass(frozen=True)
class TimelineConfig(Typed):
    """``profile_epochs``: PSG epochs that time every group before the plan is solved (0: solve at
    once from the cost model). ``profile_pairs``: with a reuse engine that merges groups and the
    reuse table on, every other profiling epoch times merged neighbour pairs (at least two
    profiling epochs). ``lr_scaling``: ``none``, ``linear`` or ``sqrt`` in the planned capacity,
    applied from the plan switch on (more groups per step make a larger batch)."""

    key: ClassVar[str] = "sched.timeline"

    profile_epochs: int = 0  # PSG epochs timing every group before the plan is solved; 0 = plan from the cost model at once
    profile_pairs: bool = False  # profiling also times merged neighbour pairs for the reuse table (every other profiling epoch)
    lr_scaling: str = "none"  # none | linear | sqrt in the capacity, from the plan switch on

    def __post_init__(self) -> None:
        if isinstance(self.profile_epochs, bool) or not isinstance(self.profile_epochs, int) or self.profile_epochs < 0:
            raise ConfigError(f"sched.timeline.profile_epochs must be 0 or more, got {self.profile_epochs!r}")
        super().__post_init__()
        if self.lr_scaling not in LR_SCALINGS:
            raise ConfigError(f"unknown sched.timeline.lr_scaling '{self.lr_scaling}' (choose from {', '.join(LR_SCALINGS)})")

    def lr_factor(self, capacity: int) -> float:
        return {"none": 1.0, "linear": float(capacity), "sqrt": float(capacity) ** 0.5}[self.lr_scaling]


def sequential_executor() -> Part:
    return Part("sched.executor", SEQUENTIAL)


@dataclass(frozen=True)
class SnapshotGroupConfig(StrategyConfig):
    """``SnapshotGroupStrategy``'s blocks: its planner, its timeline and its executor."""

    strategy: ClassVar[str] = "dygsched.engine.snapshot_groups.strategy:SnapshotGroupStrategy"

    name: str = "psg"
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    timeline: TimelineConfig = field(default_factory=TimelineConfig)
    executor: Part = field(default_factory=sequential_executor)
