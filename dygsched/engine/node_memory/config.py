"""The node-memory strategies' configurations: every field a ``sched.<name>`` setting.

Every node-memory strategy is ``NodeMemoryStrategy`` driving a memory backend; a configuration
class binds the backend (``memory``: ``package.module:Class``, built with the configuration) and
types its settings, so a backend needs no strategy class of its own. ``SingleProcessConfig``
(``sched=single``) and ``DepCacheConfig`` (``sched=depcache``) have the loop's settings alone
(``NodeMemoryConfig``); ``DepCommConfig`` (``sched=depcomm``) adds disjoint ownership
(``ShardedMemoryConfig``); ``SvenConfig`` (``sched=sven``) its pipeline's switches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from dygsched.engine.strategy_config import StrategyConfig
from dygsched.errors import ConfigError


@dataclass(frozen=True)
class NodeMemoryConfig(StrategyConfig):
    """What every node-memory strategy has (see ``dygsched.engine.strategy_config``)."""

    strategy: ClassVar[str] = "dygsched.engine.node_memory.strategy:NodeMemoryStrategy"
    memory: ClassVar[str] = ""  # the backend (a NodeMemory class), package.module:Class

    batch_size: int = 600  # events per rank per step (the global batch is batch_size x world_size)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.batch_size < 1:
            raise ConfigError(f"sched.batch_size must be at least 1 event, got {self.batch_size}")


@dataclass(frozen=True)
class SingleProcessConfig(NodeMemoryConfig):
    """``sched=single``: the one-process reference (``single.py``)."""

    memory: ClassVar[str] = "dygsched.engine.node_memory.single:SingleProcessMemory"
    name: str = "single"


@dataclass(frozen=True)
class DepCacheConfig(NodeMemoryConfig):
    """``sched=depcache``: a full replica on every rank (``depcache.py``)."""

    memory: ClassVar[str] = "dygsched.engine.node_memory.depcache:DepCacheMemory"
    name: str = "depcache"


@dataclass(frozen=True)
class ShardedMemoryConfig(NodeMemoryConfig):
    """Disjoint node state: which rank owns each vertex."""

    partition: str = "interval"  # interval (v mod M) | range (id blocks) | reflexbicut (Sven's Re-FlexBiCut)
    capacity_slack: float = 0.1  # reflexbicut: at most (1 + slack) N / M vertices per rank

    def __post_init__(self) -> None:
        super().__post_init__()
        # imported here: this module is read before the CLI accepts a run (its defaults are the config's), that one imports numpy
        from dygsched.data.partition import checked_partition

        checked_partition("vertex", self.partition)
        if self.capacity_slack < 0:
            raise ConfigError(f"sched.capacity_slack must be 0 or more, got {self.capacity_slack}")


@dataclass(frozen=True)
class DepCommConfig(ShardedMemoryConfig):
    """``sched=depcomm``: owners compute and send the memory per occurrence (``depcomm.py``)."""

    memory: ClassVar[str] = "dygsched.engine.node_memory.depcomm:DepCommMemory"
    name: str = "depcomm"


@dataclass(frozen=True)
class SvenConfig(ShardedMemoryConfig):
    """Sven: Re-FlexBiCut ownership and the hierarchical pipeline's switches (``sven.py``)."""

    memory: ClassVar[str] = "dygsched.engine.node_memory.sven:SvenMemory"
    name: str = "sven"
    partition: str = "reflexbicut"
    micro_batches: int = 1  # slices per rank batch; the rows of slice k+1 travel while slice k computes
    prefetch: bool = True  # a helper thread samples, organises and routes the next batch ahead
    staleness: int = 0  # 1: apply the previous step's summed gradients (Sven's async all-reduce; not exact)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.micro_batches < 1:
            raise ConfigError(f"sched.micro_batches must be at least 1, got {self.micro_batches}")
        if self.staleness not in (0, 1):
            raise ConfigError(f"sched.staleness must be 0 or 1, got {self.staleness}")
