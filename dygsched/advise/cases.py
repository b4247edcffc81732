"""The strategies the advisor prices, as typed values: each one's run settings and strategy object.

The command that reads the configuration (``dygsched.commands.advise``) composes one run per
strategy, checks it and hands it here as a ``StrategyCase``; the advisor never reads a config
itself. A strategy belongs to a *family*: the strategies whose steps compute alike and share one
profile (PSG, DyGNeX and ESDG train groups one after another; REAL's reuse engine, BLAD's pipeline,
FlareDTDG's partitioned windows and DistDy's sampled mini-batches each have their own; the
node-memory loop has one per backend kind: the reference and DepCache compute alike (each rank holds
the whole table), DepComm's owners and Sven's dispatch each step differently, and measured so even on
one rank: 3.5x and 1.4x the reference's epoch for TGN in bench-advise).
"""

from __future__ import annotations

from dataclasses import dataclass

from dygsched.engine.run_config import RunConfig
from dygsched.engine.strategy import Strategy

SEQUENTIAL, REUSE, BLAD, FLARE, DISTDY, NODE_MEMORY = "sequential", "reuse", "blad", "flare", "distdy", "node_memory"
DEPCOMM, SVEN = "depcomm", "sven"  # the node-memory backends whose steps compute unlike the reference's
NODE_MEMORY_FAMILIES = (NODE_MEMORY, DEPCOMM, SVEN)


def family_of(strategy: Strategy) -> str:
    """The family whose profile prices ``strategy`` (see the module docstring)."""
    from dygsched.engine.distdy import DistDyStrategy
    from dygsched.engine.flare import FlareStrategy
    from dygsched.engine.node_memory.strategy import NodeMemoryStrategy
    from dygsched.engine.snapshot_groups import SnapshotGroupStrategy
    from dygsched.engine.snapshot_groups.blad import BLADExecutor
    from dygsched.engine.snapshot_groups.reuse import ReuseExecutor

    if isinstance(strategy, SnapshotGroupStrategy):
        if isinstance(strategy.executor, ReuseExecutor) and strategy.executor.reuse:
            return REUSE
        if isinstance(strategy.executor, BLADExecutor):
            return BLAD
        return SEQUENTIAL  # one group after another; ESDG's blocks are priced from the same curve
    if isinstance(strategy, FlareStrategy):
        return FLARE
    if isinstance(strategy, DistDyStrategy):
        return DISTDY
    if isinstance(strategy, NodeMemoryStrategy):
        from dygsched.engine.node_memory.config import DepCommConfig, SvenConfig

        if isinstance(strategy.config, DepCommConfig):
            return DEPCOMM
        return SVEN if isinstance(strategy.config, SvenConfig) else NODE_MEMORY
    raise TypeError(f"the advisor cannot price sched={strategy.name} ({type(strategy).__name__}): no family prices it")


@dataclass(frozen=True)
class StrategyCase:
    """One strategy as a run would train it: ``run`` (its typed settings, world size aside) and its
    strategy object, built and checked by the command; ``family`` (``family_of``)."""

    name: str
    run: RunConfig
    strategy: Strategy
    family: str

    @classmethod
    def of(cls, run: RunConfig, strategy: Strategy) -> StrategyCase:
        return cls(strategy.name, run, strategy, family_of(strategy))

    @property
    def is_esdg(self) -> bool:
        from dygsched.engine.snapshot_groups.esdg import ESDGExecutor

        return isinstance(getattr(self.strategy, "executor", None), ESDGExecutor)
