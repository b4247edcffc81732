"""``sched=single``: the one-process reference every node-memory strategy is tested against.

One full table of node state on the only rank; reads and writes are local (``LocalMemory``, which
DepCache's replica extends). It is TGL's training loop (one node, shared memory) written as
plainly as the loop allows.
"""

from __future__ import annotations

import torch

from dygsched.data.kinds import DynamicData
from dygsched.engine.node_memory.backend import NodeMemory
from dygsched.engine.node_memory.batches import Series, distinct_pairs
from dygsched.engine.node_memory.state import Ownership
from dygsched.engine.node_memory.updates import StateUpdates
from dygsched.engine.run_config import RunConfig
from dygsched.engine.strategy import IterationStats
from dygsched.errors import ConfigError


class LocalMemory(NodeMemory):
    """A table holding every vertex's row on this rank: reads and writes are local."""

    def build_ownership(self) -> Ownership:
        return Ownership.everywhere(self.run.stream.num_nodes, self.rank, self.world_size)

    def memory_of(
        self, series: Series, stats: IterationStats, upcoming: Series | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        pairs = distinct_pairs(self.ownership.row[series.vertices], series.times)  # on the host, where they are known
        return self.memory_at(pairs.to(self.device), self.table.read)

    def aggregate(self, updates: StateUpdates, stats: IterationStats) -> None:
        updates.apply(self.table, self.row_on_device)

    def full_state(self, rows: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...] | None:
        """Every rank holds every vertex's row in vertex order (DepCache's replicas are identical): rank 0's, no exchange."""
        return tuple(tensor.cpu() for tensor in rows) if self.rank == 0 else None


class SingleProcessMemory(LocalMemory):
    """The only rank's full table."""

    def check(self, name: str, data: DynamicData, settings: RunConfig, world_size: int) -> None:
        if world_size != 1:
            raise ConfigError(f"sched={name} is the one-process reference: set world_size=1 (got {world_size})")
