"""What DepComm and Sven share: disjoint node state, one owner per vertex, writes sent to owners.

Ownership comes from a vertex partition (``dygsched.data.partition.vertices``): ``interval``
(``v mod M``), ``range`` (contiguous id blocks) or ``reflexbicut`` (Sven's Re-FlexBiCut on the
trainer x vertex demand of a pre-sampling pass over the training batches, under a capacity limit
of ``(1 + capacity_slack) N / M`` rows per rank). Rank 0 partitions and every rank receives the
owner map, then keeps ``lambda1`` (vertex -> rank) and ``lambda2`` (vertex -> row).

Aggregation: a rank deduplicates its writes (each vertex's latest), sends each to the vertex's
owner with one ``all_to_all_single`` per kind (endpoint rows; mail-only rows for APAN's neighbour
deliveries), and each owner applies what it received from every rank, the latest event winning.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from dygsched.data.kinds import DynamicData
from dygsched.engine.node_memory.backend import NodeMemory
from dygsched.engine.node_memory.config import ShardedMemoryConfig
from dygsched.engine.node_memory.state import Ownership
from dygsched.engine.node_memory.updates import StateUpdates
from dygsched.engine.node_memory.volumes import demand_matrix, epoch_reads
from dygsched.engine.run_config import RunConfig
from dygsched.engine.strategy import IterationStats, broadcast_from_rank0
from dygsched.errors import ConfigError

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

log = logging.getLogger("dygsched")


class ShardedMemory(NodeMemory):
    """Disjoint node state: each vertex's rows on its owner (DepComm's and Sven's reads differ)."""

    def __init__(self, config: ShardedMemoryConfig) -> None:
        super().__init__(config)
        self.partition, self.capacity_slack = config.partition, config.capacity_slack
        self.partition_note: dict[str, Any] = {}

    def check(self, name: str, data: DynamicData, settings: RunConfig, world_size: int) -> None:
        if world_size > data.num_nodes:
            raise ConfigError(
                f"sched={name} gives each of its {world_size} ranks a share of the vertices, "
                f"but the stream has only {data.num_nodes}"
            )

    def build_ownership(self) -> Ownership:
        from dygsched.data.partition.vertices import partition_vertices

        chosen = None
        if self.rank == 0:
            demand = self.demand() if self.partition == "reflexbicut" else np.zeros((self.world_size, self.run.stream.num_nodes))
            if self.partition == "reflexbicut":
                idle = np.flatnonzero(np.asarray(demand.sum(axis=1)).reshape(-1) == 0)
                if idle.size:
                    log.warning(
                        "dygsched: sched=%s: the pre-sampling pass found no training events for rank(s) %s; "
                        "Re-FlexBiCut gives them only vertices no rank reads",
                        self.run.name,
                        ", ".join(map(str, idle.tolist())),
                    )
            result = partition_vertices(self.partition, demand, capacity_slack=self.capacity_slack, seed=self.run.settings.seed)
            chosen = (result.owner, {"partition": result.method, "partition_used": result.used, "partition_note": result.note})
        owner, self.partition_note = broadcast_from_rank0(chosen)
        return Ownership.from_owner(torch.as_tensor(owner), self.world_size)

    def demand(self) -> csr_matrix:
        """Pre-sampling: ``demand[j, v]`` = the training steps in which rank ``j``'s series holds ``v``
        (the first epoch's negatives), counted from the same reads the steps make."""
        run = self.run
        reads = epoch_reads(
            run.stream,
            run.train_events,
            run.batch_size,
            self.world_size,
            run.settings.seed,
            0,
            int(self.model.embedding_neighbours),
            sampler=run.neighbours,
        )
        return demand_matrix(reads, self.world_size, run.stream.num_nodes)

    def route(self, vertices: torch.Tensor) -> tuple[torch.Tensor, list[int]]:
        """The order that groups ``vertices`` by owner (stable), and how many go to each rank."""
        owners = self.ownership.owner[vertices.cpu()]
        order = torch.argsort(owners, stable=True)
        return order, torch.bincount(owners, minlength=self.world_size).tolist()

    def route_together(self, vertex_lists: list[torch.Tensor]) -> list[tuple[torch.Tensor, list[int]]]:
        """``route`` of several vertex lists, with one copy of their vertices to the host."""
        on_host = torch.cat(vertex_lists).cpu().split([v.numel() for v in vertex_lists])
        return [self.route(vertices) for vertices in on_host]

    def aggregate(self, updates: StateUpdates, stats: IterationStats) -> None:
        mine = updates.deduplicated()
        kinds = (mine.endpoint_rows(), mine.delivery_rows())
        routes = self.route_together([index[:, 0] for index, _ in kinds])
        received_counts = self.transport.counts_together(
            [send_counts for _, send_counts in routes]
        )  # the step's counts, read once
        sent = []
        for (index, rows), (order, send_counts), recv_counts in zip(kinds, routes, received_counts, strict=True):
            sent.append(self.transport.exchange(index[order], send_counts, recv_counts, "aggregate_index", stats))
            sent.append(self.transport.exchange(rows[order.to(rows.device)], send_counts, recv_counts, "aggregate", stats))
        endpoint_index, endpoint_rows, delivery_index, delivery_rows = sent
        received = StateUpdates.from_rows(endpoint_index, endpoint_rows, delivery_index, delivery_rows, self.model.memory_dim)
        received.apply(self.table, self.row_on_device)

    def describe(self) -> dict[str, Any]:
        return dict(self.partition_note)
