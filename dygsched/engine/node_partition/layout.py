"""What one rank holds of a node-partitioned dynamic graph, in its own local ids.

A rank owns the nodes of its part in every snapshot. For each snapshot it holds its owned nodes'
features, targets and node mask, the incoming edges of its owned nodes, and its halo: the sources
of those edges that other ranks own. Local rows are the owned nodes ``0 .. owned-1`` in the rank's
current *order*, then the halo nodes, grouped by owner rank and sorted by node id within a rank.
Each rank also knows, per snapshot and per peer, which of its owned rows that peer's halo needs
(``send_index``): every rank reads the whole graph, so both sides of an exchange agree on the rows
and their order (by node id) without talking.

GCN normalisation needs every source's degree; a halo node's incoming edges live on its owner,
so each halo node gets a self-loop whose weight is its degree in the whole snapshot
(``halo_degree``): ``gcn_norm`` then finds the same coefficient for every edge into an owned node
as on the whole graph, and the halo rows' own outputs are dropped.

The halo nodes' input features are held locally too (``halo_x``), so the first layer's input needs
no exchange; what later layers read (hidden outputs) comes by the exchange.

``order`` (``reorder``) is the shrinking remap of FlareDTDG: owned nodes sorted by the survival
order of their chunks, so the nodes of the first ``c`` chunks are the row prefix ``[0, ends[c])``
and a decayed block is a prefix slice of rows and of the owned-to-owned edges (kept sorted by
their larger endpoint). The remap is applied once (``reorder``); ``prefix`` then only slices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from dygsched.data.partition.nodes import NodePartition
from dygsched.data.sorted_keys import sorted_unique
from dygsched.data.temporal_graph import Snapshot, TemporalGraph


@dataclass(frozen=True)
class GCNNorm:
    """The GCN normalisation the model's convolutions use: what a missing self-loop weighs
    (``fill``: 1, or 2 with ``improved``) and whether loops are added at all."""

    add_self_loops: bool = True
    improved: bool = False

    @property
    def fill(self) -> float:
        return 2.0 if self.improved else 1.0


def gcn_degrees(edge_index: torch.Tensor, edge_weight: torch.Tensor, num_nodes: int, norm: GCNNorm) -> torch.Tensor:
    """Every node's weighted in-degree as ``gcn_norm`` computes it (self-loops added where missing)."""
    deg = torch.zeros(num_nodes, dtype=torch.float64)
    deg.index_add_(0, edge_index[1], edge_weight.to(torch.float64))
    if norm.add_self_loops:
        has_loop = torch.zeros(num_nodes, dtype=torch.bool)
        loops = edge_index[0] == edge_index[1]
        has_loop[edge_index[1][loops]] = True
        deg += (~has_loop).to(torch.float64) * norm.fill
    return deg


@dataclass(frozen=True)
class _GlobalSnapshot:
    """One snapshot's share of a rank in node ids (before any order is applied)."""

    inner: np.ndarray  # [2, E] owned -> owned edges (node ids)
    inner_weight: np.ndarray
    halo_nodes: np.ndarray  # halo node ids, grouped by owner rank, sorted within
    halo_src: np.ndarray  # position of each halo edge's source in halo_nodes
    halo_dst: np.ndarray  # node id of each halo edge's (owned) target
    halo_weight: np.ndarray
    halo_degree: np.ndarray
    recv_counts: list[int]
    send_nodes: np.ndarray  # owned node ids to send, peers in rank order, sorted within
    send_counts: list[int]
    active_nodes: int
    all_halo_rows: int  # halo rows over every rank: what one exchange of the snapshot moves, in rows


@dataclass(frozen=True)
class PartitionedSnapshot:
    """One snapshot as one rank holds it in local ids (see the module docstring).

    ``owned`` rows hold ``x``, ``y`` and ``node_mask``; ``inner`` edges (sorted by their larger
    endpoint) join owned rows; ``halo`` edges go from halo rows (``owned + position``) to owned
    rows; ``send_index``/``send_counts``/``recv_counts`` drive the halo exchange;
    ``active_nodes`` counts the nodes that exist in the whole snapshot (the loss's denominator).
    ``send_index`` lives on the layout's device (the exchange gathers rows there); the rest on the host.
    """

    x: torch.Tensor
    y: torch.Tensor
    node_mask: torch.Tensor
    inner: torch.Tensor
    inner_weight: torch.Tensor
    inner_max: torch.Tensor  # each inner edge's larger endpoint, non-decreasing
    halo: torch.Tensor
    halo_weight: torch.Tensor
    halo_degree: torch.Tensor
    halo_x: torch.Tensor  # the halo nodes' input features, held locally: the first layer exchanges nothing
    send_index: torch.Tensor
    send_counts: tuple[int, ...]
    recv_counts: tuple[int, ...]
    active_nodes: int
    all_nodes: int = 0  # the whole snapshot's nodes, edges and halo rows over every rank:
    all_edges: int = 0  # the same on every rank (an overlap schedule's task features)
    all_halo_rows: int = 0

    @property
    def num_owned(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_halo(self) -> int:
        return int(self.halo_degree.numel())

    def full(self) -> Snapshot:
        """The owned rows with every incoming edge: halo edges and the halo nodes' degree loops included.
        ``edge_index`` refers to ``owned + halo`` rows: run it on features extended by the exchange."""
        halo_rows = torch.arange(self.num_halo) + self.num_owned
        edge_index = torch.cat([self.inner, self.halo, torch.stack([halo_rows, halo_rows])], dim=1)
        edge_weight = torch.cat([self.inner_weight, self.halo_weight, self.halo_degree.to(self.inner_weight.dtype)])
        return Snapshot(edge_index, edge_weight, self.x, self.y, self.node_mask)

    def prefix(self, rows: int) -> Snapshot:
        """The owned rows ``[0, rows)`` and the owned edges inside them: a decayed block, with no halo."""
        count = int(torch.searchsorted(self.inner_max, torch.tensor(rows), right=False))
        return Snapshot(self.inner[:, :count], self.inner_weight[:count], self.x[:rows], self.y[:rows], self.node_mask[:rows])


class RankLayout:
    """One rank's share of every snapshot of ``graph`` under ``partition`` (see the module docstring).

    ``norm``: the GCN normalisation of the model, for the halo nodes' degree loops. ``device``: where
    the exchange's index (``send_index``) is kept: the layers' exchanges read it there, forward and
    backward, so it is copied once per renumbering (``reorder``), not once per layer and direction.
    """

    def __init__(
        self,
        graph: TemporalGraph,
        partition: NodePartition,
        rank: int,
        norm: GCNNorm = GCNNorm(),
        device: torch.device | None = None,
    ) -> None:
        self.graph, self.partition, self.rank, self.norm = graph, partition, rank, norm
        self.device = device if device is not None else torch.device("cpu")
        self.owned = partition.nodes_of(rank)  # node ids, increasing
        self.world_size = partition.num_parts
        self._snapshots = [self._share(s) for s in graph.snapshots]
        self.reorder(np.arange(self.owned.size))

    @property
    def num_owned(self) -> int:
        return int(self.owned.size)

    def _share(self, snapshot: Snapshot) -> _GlobalSnapshot:
        part = self.partition.part
        src, dst = snapshot.edge_index.numpy()
        weight = snapshot.edge_weight.numpy()
        into_mine = part[dst] == self.rank
        src_in, dst_in, w_in = src[into_mine], dst[into_mine], weight[into_mine]
        local_src = part[src_in] == self.rank
        by_id = sorted_unique(src_in[~local_src])
        grouped = np.lexsort((by_id, part[by_id]))  # by owner rank, then id
        halo_ids = by_id[grouped]
        position = np.empty(by_id.size, dtype=np.int64)
        position[grouped] = np.arange(by_id.size)
        halo_src = position[np.searchsorted(by_id, src_in[~local_src])]
        degrees = gcn_degrees(snapshot.edge_index, snapshot.edge_weight, snapshot.num_nodes, self.norm).numpy()
        recv = np.bincount(part[halo_ids], minlength=self.world_size).tolist() if halo_ids.size else [0] * self.world_size
        # What each peer's halo needs from this rank: owned sources of edges into the peer's nodes.
        from_mine = (part[src] == self.rank) & (part[dst] != self.rank)
        pairs = (
            np.unique(np.stack([part[dst[from_mine]], src[from_mine]]), axis=1) if from_mine.any() else np.zeros((2, 0), np.int64)
        )
        crossing = part[src] != part[dst]
        all_halo = int(sorted_unique(part[dst[crossing]] * snapshot.num_nodes + src[crossing]).size) if crossing.any() else 0
        send_counts = np.bincount(pairs[0], minlength=self.world_size).tolist() if pairs.size else [0] * self.world_size
        return _GlobalSnapshot(
            inner=np.stack([src_in[local_src], dst_in[local_src]]).astype(np.int64),
            inner_weight=w_in[local_src],
            halo_nodes=halo_ids.astype(np.int64),
            halo_src=halo_src,
            halo_dst=dst_in[~local_src].astype(np.int64),
            halo_weight=w_in[~local_src],
            halo_degree=degrees[halo_ids] if halo_ids.size else np.zeros(0),
            recv_counts=recv,
            send_nodes=pairs[1].astype(np.int64),
            send_counts=send_counts,
            active_nodes=int(snapshot.node_mask.sum()),
            all_halo_rows=all_halo,
        )

    def reorder(self, order: Sequence[int] | np.ndarray) -> None:
        """Renumber the owned rows: local row ``i`` becomes node ``owned[order[i]]``; applied once to every snapshot."""
        order = np.asarray(order, dtype=np.int64)
        if order.shape != (self.num_owned,) or not np.array_equal(np.sort(order), np.arange(self.num_owned)):
            raise ValueError("an order must be a permutation of the owned rows")
        self.order = order  # local row i holds node owned[order[i]]
        local = self.local_ids()
        self._local = [self._localise(share, t, local, order) for t, share in enumerate(self._snapshots)]

    def local_ids(self, order: np.ndarray | None = None) -> np.ndarray:
        """``local[v]``: node ``v``'s local row on this rank under ``order`` (default the current one); -1 when not owned here."""
        order = self.order if order is None else order
        local = np.full(self.graph.num_nodes, -1, dtype=np.int64)
        local[self.owned[order]] = np.arange(self.num_owned)
        return local

    def localise(self, t: int, order: np.ndarray) -> PartitionedSnapshot:
        """Snapshot ``t`` renumbered by ``order`` now, without keeping it: what a strategy that does
        not renumber once per epoch pays at every step."""
        return self._localise(self._snapshots[t], t, self.local_ids(order), order)

    def _localise(self, share: _GlobalSnapshot, t: int, local: np.ndarray, order: np.ndarray) -> PartitionedSnapshot:
        snapshot = self.graph.snapshots[t]
        rows = torch.from_numpy(self.owned[order])
        inner = torch.from_numpy(local[share.inner]) if share.inner.size else torch.zeros((2, 0), dtype=torch.long)
        inner_weight = torch.from_numpy(np.ascontiguousarray(share.inner_weight))
        inner_max = inner.max(dim=0).values if inner.numel() else torch.zeros(0, dtype=torch.long)
        by_max = torch.sort(inner_max, stable=True).indices
        halo = torch.from_numpy(np.stack([share.halo_src + self.num_owned, local[share.halo_dst]]).astype(np.int64))
        return PartitionedSnapshot(
            x=snapshot.x[rows],
            y=snapshot.y[rows],
            node_mask=snapshot.node_mask[rows],
            inner=inner[:, by_max],
            inner_weight=inner_weight[by_max],
            inner_max=inner_max[by_max],
            halo=halo,
            halo_weight=torch.from_numpy(np.ascontiguousarray(share.halo_weight)),
            halo_degree=torch.from_numpy(share.halo_degree.astype(np.float64)),
            halo_x=snapshot.x[torch.from_numpy(share.halo_nodes)],
            send_index=torch.from_numpy(local[share.send_nodes]).to(self.device),
            send_counts=tuple(share.send_counts),
            recv_counts=tuple(share.recv_counts),
            active_nodes=share.active_nodes,
            all_nodes=snapshot.num_nodes,
            all_edges=snapshot.num_edges,
            all_halo_rows=share.all_halo_rows,
        )

    def snapshot(self, t: int) -> PartitionedSnapshot:
        return self._local[t]
