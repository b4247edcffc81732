"""Layer hooks for node-partitioned snapshots: each layer's spatial part with its halo."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from dygsched.data.temporal_graph import Snapshot
from dygsched.engine.node_partition.exchange import LOCAL, HaloAccounting, PartitionedOps, PrefetchedOps, post_halo
from dygsched.engine.node_partition.layout import PartitionedSnapshot
from dygsched.engine.node_partition.overlap import OverlapSchedule, task_features
from dygsched.engine.timing import timed
from dygsched.models.dgnn import DGNNLayer, State
from dygsched.models.hooks import PLAIN, DelegatingHooks, LayerHooks


class PartitionHooks(DelegatingHooks):
    """Snapshot ``t`` of a sequence runs each layer's ``spatial_partitioned`` with its halo when
    ``blocks[t]`` is a ``PartitionedSnapshot`` (a full block), and with ``LOCAL`` operations when it
    is ``None`` (a block of this rank's own nodes only, which communicates nothing; batch statistics
    are the rank's own).

    With a ``schedule``, a model run one layer at a time (``unroll(layer_major=True)``) posts every
    full block's exchange of the layer's input in the schedule's order, computes the local blocks
    meanwhile, then aggregates the full blocks in that order (``overlap.OverlapSchedule``).
    """

    def __init__(
        self,
        blocks: Sequence[PartitionedSnapshot | None],
        accounting: HaloAccounting | None = None,
        inner: LayerHooks = PLAIN,
        schedule: OverlapSchedule | None = None,
    ) -> None:
        super().__init__(inner)
        self.blocks, self.accounting, self.schedule = blocks, accounting, schedule

    def spatial(self, depth: int, t: int, layer: DGNNLayer, x: torch.Tensor, snapshot: Snapshot, state: State | None) -> Any:
        block = self.blocks[t]
        ops = LOCAL if block is None else PartitionedOps(block, depth, self.accounting, features=snapshot.x)
        return layer.spatial_partitioned(x, snapshot, state, ops)

    def spatial_layer(self, depth: int, layer: DGNNLayer, xs: Sequence[torch.Tensor], snapshots: Sequence[Snapshot]) -> list[Any]:
        if self.schedule is None:
            return [self.spatial(depth, t, layer, x, s, None) for t, (x, s) in enumerate(zip(xs, snapshots, strict=True))]
        device = xs[0].device
        tasks = []
        for t, block in enumerate(self.blocks):
            if block is not None:
                width = int(xs[t].shape[1])
                halo_bytes = block.all_halo_rows * width * xs[t].element_size()
                tasks.append((t, task_features(True, block.all_nodes, width, block.all_edges, halo_bytes)))
        features = dict(tasks)
        order = self.schedule.order(tasks)
        pending = {}
        for t in order:  # every rank posts in the same order: the collectives pair up
            block = self.blocks[t]
            assert block is not None  # ``order`` holds the partitioned snapshots only
            if xs[t] is not snapshots[t].x:  # the input features' halo rows are held locally
                pending[t] = post_halo(xs[t], block, depth, self.accounting)
        outs: list[Any] = [None] * len(xs)
        for t, block in enumerate(self.blocks):
            if block is None:  # computed while the exchanges travel
                with timed(device) as computing:
                    outs[t] = layer.spatial_partitioned(xs[t], snapshots[t], None, LOCAL)
                x = snapshots[t]
                self.schedule.log.add(task_features(False, x.num_nodes, int(xs[t].shape[1]), x.num_edges, 0), 0.0, computing)
        for t in order:
            block = self.blocks[t]
            assert block is not None
            ops = PrefetchedOps(block, depth, self.accounting, features=snapshots[t].x, pending=pending.get(t))
            with timed(device) as whole:
                outs[t] = layer.spatial_partitioned(xs[t], snapshots[t], None, ops)
            self.schedule.log.add_overlapped(features[t], ops.waits, whole)
        return outs
