"""Layer hooks for node-partitioned snapshots: each layer's spatial part with its halo."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from dygsched.data.temporal_graph import Snapshot
from dygsched.engine.node_partition.exchange import LOCAL, HaloAccounting, PartitionedOps
from dygsched.engine.node_partition.layout import PartitionedSnapshot
from dygsched.models.base import PLAIN, DelegatingHooks, DGNNLayer, LayerHooks, State


class PartitionHooks(DelegatingHooks):
    """Snapshot ``t`` of a sequence runs each layer's ``spatial_partitioned`` with its halo when
    ``blocks[t]`` is a ``PartitionedSnapshot`` (a full block), and with ``LOCAL`` operations when it
    is ``None`` (a block of this rank's own nodes only, which communicates nothing; batch statistics
    are the rank's own)."""

    def __init__(self, blocks: Sequence[PartitionedSnapshot | None], accounting: HaloAccounting | None = None, inner: LayerHooks = PLAIN) -> None:
        super().__init__(inner)
        self.blocks, self.accounting = blocks, accounting

    def spatial(self, depth: int, t: int, layer: DGNNLayer, x: torch.Tensor, snapshot: Snapshot, state: State) -> Any:
        block = self.blocks[t]
        ops = LOCAL if block is None else PartitionedOps(block, depth, self.accounting, features=snapshot.x)
        return layer.spatial_partitioned(x, snapshot, state, ops)
