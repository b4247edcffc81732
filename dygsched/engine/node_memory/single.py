"""``sched=single``: the one-process reference every node-memory strategy is tested against.

One full table of node state on the only rank; reads and writes are local. It is TGL's training
loop (one node, shared memory) written as plainly as the loop allows.
"""

from __future__ import annotations

import torch

from dygsched.data.kinds import DynamicData
from dygsched.engine.node_memory.config import NodeMemoryConfig
from dygsched.engine.node_memory.state import Ownership
from dygsched.engine.node_memory.strategy import NodeMemoryStrategy, Series
from dygsched.engine.node_memory.updates import StateUpdates
from dygsched.engine.strategy import IterationStats, RunSettings
from dygsched.errors import ConfigError


class SingleProcessStrategy(NodeMemoryStrategy):
    config_type = NodeMemoryConfig

    def __init__(self, config: NodeMemoryConfig, name: str = "single") -> None:
        super().__init__(config, name)

    def check(self, data: DynamicData, settings: RunSettings, world_size: int) -> None:
        if world_size != 1:
            raise ConfigError(f"sched={self.name} is the one-process reference: set world_size=1 (got {world_size})")
        super().check(data, settings, world_size)

    def build_ownership(self) -> Ownership:
        return Ownership.everywhere(self.stream.num_nodes, self.rank, self.world_size)

    def memory_of(self, series: Series, stats: IterationStats, upcoming: Series | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        return local_memory(self, series)

    def aggregate(self, updates: StateUpdates, stats: IterationStats) -> None:
        updates.apply(self.table, self.row_on_device)


def local_memory(strategy: NodeMemoryStrategy, series: Series) -> tuple[torch.Tensor, torch.Tensor]:
    """``s'`` and ``tau`` of the series from a table holding every vertex's row."""
    rows = strategy.ownership.row[series.vertices].to(strategy.device)
    return strategy.memory_at(rows, series.times.to(strategy.device), strategy.table.read)
