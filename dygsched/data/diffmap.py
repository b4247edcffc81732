"""Diff maps (REAL section 4.1, appendix H): what changes between consecutive snapshots.

A snapshot's graph is kept as an ``EdgeSet``: its edges coalesced into sorted unique keys
``src * N + dst`` with summed weights and multiplicities. A ``DiffMap`` holds the edges added
and removed from one snapshot to the next (a weight or multiplicity change is the old edge
removed plus the new one added), the weighted in-degrees of the nodes whose in-edges changed,
and the feature rows that changed. ``apply_diff`` rebuilds the next ``EdgeSet`` from the
previous one with torch operations only, so a device holding a group's first graph rebuilds
the others where it is (REAL 4.3) from the diff maps alone.

Everything here is exact: ``apply_diff(coalesce(prev), diff_snapshots(prev, curr))`` equals
``coalesce(curr)`` key for key, weight for weight.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch

from dygsched.data.temporal_graph import Snapshot, TemporalGraph
from dygsched.errors import DataError


def on_gpu(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is on a GPU, where a value read back stops the host until the device has
    caught up: the branches that never read one (``apply_diff``'s merge, the kernels' coalesced
    products) key on it."""
    return bool(tensor.is_cuda)


def _nbytes(*tensors: torch.Tensor) -> int:
    return sum(t.element_size() * t.nelement() for t in tensors)


@dataclass(frozen=True)
class EdgeSet:
    """One snapshot's edges, coalesced: sorted unique ``keys = src * num_nodes + dst`` (int64).

    ``weights`` are the summed weights of duplicate edges, ``counts`` (int32) their multiplicity.
    Summing duplicates is exact for GCN-style aggregation (a duplicate's message is linear in its
    weight and its weight enters the degree once), with one exception: PyG's
    ``add_remaining_self_loops`` keeps *one* of several parallel self-loops, so a raw edge list
    with a repeated self-loop normalises differently there; here its weights are summed.
    Attention (GAT) ignores weights and gives each parallel edge its own softmax entry: that is
    what ``counts`` keeps, and what ``expanded()`` reproduces.
    """

    keys: torch.Tensor
    weights: torch.Tensor
    counts: torch.Tensor
    num_nodes: int

    @property
    def num_edges(self) -> int:
        """Distinct edges (keys)."""
        return int(self.keys.numel())

    @property
    def device(self) -> torch.device:
        return self.keys.device

    def sources(self) -> torch.Tensor:
        return torch.div(self.keys, self.num_nodes, rounding_mode="floor")

    def targets(self) -> torch.Tensor:
        return torch.remainder(self.keys, self.num_nodes)

    def edge_index(self) -> torch.Tensor:
        """The coalesced ``[2, E]`` edge index (each distinct edge once, sorted by source then target)."""
        return torch.stack([self.sources(), self.targets()])

    def edge_weight(self) -> torch.Tensor:
        """The coalesced weights (duplicates summed)."""
        return self.weights

    def expanded(self, size: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(edge_index, edge_weight)`` with each key repeated ``counts`` times.

        Every copy carries ``weight / count``, so the weights of a key still sum to its coalesced
        weight (GCN aggregation and degrees are unchanged) while attention sees the multigraph's
        multiset of neighbours. The original order of a raw edge list and the split of weights
        among its duplicates are not kept (they cannot be recovered from the coalesced form).
        ``size``: the sum of ``counts`` (the raw edge list's length), where the host knows it: a
        GPU then need not report it before it can allocate the result.
        """
        counts = self.counts.long()
        keys = self.keys.repeat_interleave(counts, output_size=size)
        weights = (self.weights / counts.to(self.weights.dtype)).repeat_interleave(counts, output_size=size)
        return torch.stack(
            [torch.div(keys, self.num_nodes, rounding_mode="floor"), torch.remainder(keys, self.num_nodes)]
        ), weights

    def in_degree(self) -> torch.Tensor:
        """Weighted in-degree per node, explicit self-loops included (no self-loop filling)."""
        return torch.zeros(self.num_nodes, dtype=self.weights.dtype, device=self.device).index_add_(
            0, self.targets(), self.weights
        )

    def to(self, device: torch.device | str, non_blocking: bool = False) -> EdgeSet:
        return EdgeSet(
            self.keys.to(device, non_blocking=non_blocking),
            self.weights.to(device, non_blocking=non_blocking),
            self.counts.to(device, non_blocking=non_blocking),
            self.num_nodes,
        )

    def nbytes(self) -> int:
        return _nbytes(self.keys, self.weights, self.counts)

    def equal(self, other: EdgeSet) -> bool:
        """Same nodes, keys, weights and multiplicities (bitwise)."""
        return (
            self.num_nodes == other.num_nodes
            and torch.equal(self.keys, other.keys)
            and torch.equal(self.weights, other.weights)
            and torch.equal(self.counts, other.counts)
        )


def coalesce(edge_index: torch.Tensor, edge_weight: torch.Tensor | None, num_nodes: int) -> EdgeSet:
    """The ``EdgeSet`` of an edge list: duplicates merged (weights summed, multiplicity counted).

    ``edge_weight=None`` means weight 1 per edge. An edge list that is already sorted and
    duplicate-free (the synthetic source's) skips the sort.
    """
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise DataError(f"edge_index must be [2, E], got {tuple(edge_index.shape)}")
    num_edges = edge_index.size(1)
    if edge_weight is None:
        edge_weight = torch.ones(num_edges, device=edge_index.device)
    if edge_weight.shape != (num_edges,):
        raise DataError(f"{edge_weight.numel()} edge weights for {num_edges} edges")
    keys = edge_index[0].long() * num_nodes + edge_index[1].long()
    if num_edges < 2 or bool((keys[1:] > keys[:-1]).all()):
        return EdgeSet(keys.clone(), edge_weight.clone(), torch.ones(num_edges, dtype=torch.int32, device=keys.device), num_nodes)
    unique, inverse, counts = torch.unique(keys, sorted=True, return_inverse=True, return_counts=True)
    weights = torch.zeros(unique.numel(), dtype=edge_weight.dtype, device=keys.device).index_add_(0, inverse, edge_weight)
    return EdgeSet(unique, weights, counts.to(torch.int32), num_nodes)


@dataclass(frozen=True)
class DiffMap:
    """The change from one snapshot to the next.

    * ``added_*`` / ``removed_*``: keys (``src * N + dst``), weights and multiplicities of the
      edges only in the new / only in the old snapshot. An edge whose weight or multiplicity
      changes appears in both: removed with its old values, added with its new ones.
    * ``touched_nodes``: the targets of those edges (sorted), with ``degree_before`` and
      ``degree_after``, their weighted in-degrees in the old and new snapshot (explicit
      self-loops included, before any self-loop filling): what GCN normalisation needs.
    * ``changed_nodes`` / ``changed_x``: the feature rows that differ in the new snapshot (empty
      when both snapshots share one feature tensor or have equal features).
    * ``full_graph``: set when the new snapshot is kept whole instead (REAL 3.2: the preprocessor
      keeps each snapshot as its full graph or its dmap; ``build_diff_maps`` keeps the full graph
      when the edge changes and degrees would take more bytes). The edge and degree fields are
      then empty, ``apply_diff`` returns ``full_graph`` and the convolutions recompute in full.
    * ``step_sizes``: what the incremental kernel that reads this diff map finds in it (its node
      and edge sets' sizes), found on the host where the diff map was built and carried with it,
      plain numbers (``dygsched.models.incremental_kernels``; the reuse engine sets it for the
      kernel it runs): a GPU then finds the same sets without reporting their sizes to the host.
    """

    added_keys: torch.Tensor
    added_weights: torch.Tensor
    added_counts: torch.Tensor
    removed_keys: torch.Tensor
    removed_weights: torch.Tensor
    removed_counts: torch.Tensor
    touched_nodes: torch.Tensor
    degree_before: torch.Tensor
    degree_after: torch.Tensor
    changed_nodes: torch.Tensor
    changed_x: torch.Tensor
    num_nodes: int
    full_graph: EdgeSet | None = None
    step_sizes: object | None = None

    @property
    def is_full(self) -> bool:
        """Whether the snapshot is kept as its full graph rather than its edge changes."""
        return self.full_graph is not None

    @property
    def num_changed_edges(self) -> int:
        """Added plus removed keys (a weight change counts twice)."""
        return int(self.added_keys.numel() + self.removed_keys.numel())

    def _tensors(self) -> dict[str, Any]:
        kept = ("num_nodes", "full_graph", "step_sizes")
        return {name: getattr(self, name) for name in self.__dataclass_fields__ if name not in kept}

    def to(self, device: torch.device | str, non_blocking: bool = False) -> DiffMap:
        moved = {name: t.to(device, non_blocking=non_blocking) for name, t in self._tensors().items()}
        full = self.full_graph.to(device, non_blocking=non_blocking) if self.full_graph is not None else None
        return DiffMap(**moved, num_nodes=self.num_nodes, full_graph=full, step_sizes=self.step_sizes)

    def as_full(self, graph: EdgeSet) -> DiffMap:
        """This step kept as the new snapshot's whole ``graph`` (same feature rows, no edge changes)."""
        empty_keys = self.added_keys[:0]
        return DiffMap(
            empty_keys,
            self.added_weights[:0],
            self.added_counts[:0],
            empty_keys,
            self.removed_weights[:0],
            self.removed_counts[:0],
            self.touched_nodes[:0],
            self.degree_before[:0],
            self.degree_after[:0],
            self.changed_nodes,
            self.changed_x,
            self.num_nodes,
            graph,
        )

    def edge_nbytes(self) -> int:
        """Bytes of the added and removed edges, or of the full graph when it is kept instead."""
        full = self.full_graph.nbytes() if self.full_graph is not None else 0
        return full + _nbytes(
            self.added_keys, self.added_weights, self.added_counts, self.removed_keys, self.removed_weights, self.removed_counts
        )

    def degree_nbytes(self) -> int:
        """Bytes of the touched nodes and their degrees."""
        return _nbytes(self.touched_nodes, self.degree_before, self.degree_after)

    def feature_nbytes(self) -> int:
        return _nbytes(self.changed_nodes, self.changed_x)

    def nbytes(self) -> int:
        return self.edge_nbytes() + self.degree_nbytes() + self.feature_nbytes()


def _match(old: torch.Tensor, new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For sorted unique ``old`` and ``new``: (mask over new of keys also in old, their positions in old)."""
    if old.numel() == 0:
        return torch.zeros(new.numel(), dtype=torch.bool, device=new.device), torch.zeros_like(new)
    pos = torch.searchsorted(old, new).clamp_(max=old.numel() - 1)
    return old[pos] == new, pos


# added keys, weights, counts; removed keys, weights, counts; touched nodes, their degrees before and after
EdgeChanges = tuple[
    torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor
]


def diff_edge_sets(
    prev: EdgeSet,
    curr: EdgeSet,
    prev_degree: torch.Tensor | None = None,
    curr_degree: torch.Tensor | None = None,
) -> EdgeChanges:
    """Added/removed keys, weights, counts and the touched nodes with their degrees (see ``DiffMap``)."""
    device = curr.keys.device
    if prev.keys.numel():
        pos = torch.searchsorted(prev.keys, curr.keys).clamp_(max=prev.keys.numel() - 1)
        same = (prev.keys[pos] == curr.keys) & (prev.weights[pos] == curr.weights) & (prev.counts[pos] == curr.counts)
        kept = torch.zeros(prev.keys.numel(), dtype=torch.int32, device=device).index_add_(0, pos, same.to(torch.int32))
        added = (~same).nonzero().flatten()
        removed = (kept == 0).nonzero().flatten()
    else:
        added = torch.arange(curr.keys.numel(), device=device)
        removed = added[:0]
    added_keys, removed_keys = curr.keys[added], prev.keys[removed]
    n = curr.num_nodes
    mark = torch.zeros(n, dtype=torch.bool, device=device)
    mark[torch.remainder(added_keys, n)] = True
    mark[torch.remainder(removed_keys, n)] = True
    touched = mark.nonzero().flatten()
    if prev_degree is None:
        prev_degree = prev.in_degree()
    if curr_degree is None:
        curr_degree = curr.in_degree()
    return (
        added_keys,
        curr.weights[added],
        curr.counts[added],
        removed_keys,
        prev.weights[removed],
        prev.counts[removed],
        touched,
        prev_degree[touched],
        curr_degree[touched],
    )


def _changed_rows(prev_x: torch.Tensor, curr_x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if prev_x is curr_x:
        rows = torch.zeros(0, dtype=torch.long, device=curr_x.device)
    else:
        rows = (prev_x != curr_x).any(dim=1).nonzero().flatten()
    return rows, curr_x[rows]


def _check_sizes(prev_nodes: int, curr_nodes: int) -> None:
    if prev_nodes != curr_nodes:
        raise DataError(f"a diff map needs snapshots over the same node ids, got {prev_nodes} and {curr_nodes} nodes")


def diff_snapshots(prev: Snapshot, curr: Snapshot) -> DiffMap:
    """The ``DiffMap`` from ``prev`` to ``curr`` (same ``num_nodes``, else ``DataError``)."""
    _check_sizes(prev.num_nodes, curr.num_nodes)
    if prev.x.shape[1] != curr.x.shape[1]:
        raise DataError(f"a diff map needs snapshots with the same feature width, got {prev.x.shape[1]} and {curr.x.shape[1]}")
    old = coalesce(prev.edge_index, prev.edge_weight, prev.num_nodes)
    new = coalesce(curr.edge_index, curr.edge_weight, curr.num_nodes)
    rows, changed_x = _changed_rows(prev.x, curr.x)
    return DiffMap(*diff_edge_sets(old, new), changed_nodes=rows, changed_x=changed_x, num_nodes=curr.num_nodes)


def apply_diff(edges: EdgeSet, diff: DiffMap) -> EdgeSet:
    """The next snapshot's ``EdgeSet``: ``edges`` minus the removed keys plus the added ones.

    Torch operations only (a merge by ``searchsorted``), on whatever device the inputs are.
    Raises ``DataError`` when the diff does not belong to this edge set (node count, or a removed
    key that is not there). On a CUDA device the merge is a sort whose sizes the host knows
    (``_apply_on_device``), so it never waits for the device; there the removed keys' presence is
    not checked (that check would wait): the diff maps were built from these graphs on the host.
    """
    _check_sizes(edges.num_nodes, diff.num_nodes)
    if diff.full_graph is not None:
        return diff.full_graph
    if on_gpu(edges.keys):
        return _apply_on_device(edges, diff)
    keys, weights, counts = edges.keys, edges.weights, edges.counts
    if diff.removed_keys.numel():
        found, pos = _match(keys, diff.removed_keys)
        if not bool(found.all()):
            raise DataError("diff map does not apply: it removes edges that this edge set does not have")
        keep = torch.ones(keys.numel(), dtype=torch.bool, device=keys.device)
        keep[pos] = False
        kept = keep.nonzero().flatten()
        keys, weights, counts = keys[kept], weights[kept], counts[kept]
    added = diff.added_keys
    if added.numel() == 0:
        return EdgeSet(keys, weights, counts, edges.num_nodes)
    # Merge: added key a lands at (its rank among the kept keys) + (its rank among the added keys).
    total = keys.numel() + added.numel()
    slot = torch.searchsorted(keys, added) + torch.arange(added.numel(), device=added.device)
    is_old = torch.ones(total, dtype=torch.bool, device=added.device)
    is_old[slot] = False
    old_slot = is_old.nonzero().flatten()
    out_keys = torch.empty(total, dtype=keys.dtype, device=keys.device)
    out_weights = torch.empty(total, dtype=weights.dtype, device=keys.device)
    out_counts = torch.empty(total, dtype=counts.dtype, device=keys.device)
    for out, old, new in (
        (out_keys, keys, added),
        (out_weights, weights, diff.added_weights),
        (out_counts, counts, diff.added_counts),
    ):
        out[slot] = new.to(out.dtype)
        out[old_slot] = old
    return EdgeSet(out_keys, out_weights, out_counts, edges.num_nodes)


@dataclass(frozen=True)
class GraphDiffs:
    """The diff maps of a whole ``TemporalGraph``: ``diffs[t]`` goes from snapshot ``t-1`` to ``t``.

    ``diffs[0]`` is ``None``. The snapshots' own ``EdgeSet`` are not stored: a chain's first graph
    is coalesced from its snapshot when needed.
    """

    diffs: tuple[DiffMap | None, ...]
    build_seconds: float

    def chain(self, start: int, stop: int) -> tuple[DiffMap, ...]:
        """The diff maps that lead from snapshot ``start`` to ``stop - 1``."""
        maps = self.diffs[start + 1 : stop]
        assert all(d is not None for d in maps)
        return tuple(d for d in maps if d is not None)


def build_diff_maps(graph: TemporalGraph, keep_smaller: bool = True) -> GraphDiffs:
    """Every consecutive ``DiffMap`` of ``graph``; each snapshot is coalesced once.

    With ``keep_smaller`` a snapshot whose edge changes and degrees take more bytes than its own
    coalesced graph (a graph that changes almost completely) is kept whole (``DiffMap.as_full``),
    so the stored form is never larger than the full graphs.
    """
    start = time.perf_counter()
    diffs: list[DiffMap | None] = [None]
    snapshots = graph.snapshots
    prev = coalesce(snapshots[0].edge_index, snapshots[0].edge_weight, graph.num_nodes)
    prev_degree = prev.in_degree()
    for t in range(1, len(snapshots)):
        snap = snapshots[t]
        curr = coalesce(snap.edge_index, snap.edge_weight, graph.num_nodes)
        curr_degree = curr.in_degree()
        rows, changed_x = _changed_rows(snapshots[t - 1].x, snap.x)
        diff = DiffMap(*diff_edge_sets(prev, curr, prev_degree, curr_degree), rows, changed_x, graph.num_nodes)
        if keep_smaller and diff.edge_nbytes() + diff.degree_nbytes() > curr.nbytes():
            diff = diff.as_full(curr)
        diffs.append(diff)
        prev, prev_degree = curr, curr_degree
    return GraphDiffs(tuple(diffs), time.perf_counter() - start)


def memory_report(graph: TemporalGraph, diffs: GraphDiffs) -> dict[str, float]:
    """Graph storage as full snapshots vs diff maps (REAL table 5), in bytes.

    Topology, as REAL's table compares it: ``full_graph_bytes`` is every snapshot's edge index and
    weights; ``diffmap_bytes`` the first snapshot's full graph (the base everything is rebuilt
    from) plus every diff map's edges, or the snapshot's coalesced graph where that is kept
    instead (``full_snapshots`` counts them); ``degree_bytes`` the touched nodes and their before/after
    degrees; ``total_bytes = diffmap_bytes + degree_bytes``; ``saved_fraction = 1 - total / full``.
    Features, beside it: ``full_feature_bytes`` counts each distinct feature tensor of the
    snapshots once, ``diff_feature_bytes`` the first snapshot's features plus the changed rows.
    """
    full = sum(_nbytes(s.edge_index, s.edge_weight) for s in graph.snapshots)
    base = _nbytes(graph.snapshots[0].edge_index, graph.snapshots[0].edge_weight)
    maps = [d for d in diffs.diffs if d is not None]
    diff_bytes = base + sum(d.edge_nbytes() for d in maps)
    degree_bytes = sum(d.degree_nbytes() for d in maps)
    total = diff_bytes + degree_bytes
    distinct_features = {id(s.x): s.x for s in graph.snapshots}
    return {
        "num_snapshots": graph.num_snapshots,
        "full_snapshots": sum(d.is_full for d in maps),
        "full_graph_bytes": full,
        "base_graph_bytes": base,
        "diffmap_bytes": diff_bytes,
        "degree_bytes": degree_bytes,
        "total_bytes": total,
        "saved_fraction": 1.0 - total / full if full else 0.0,
        "full_feature_bytes": sum(_nbytes(x) for x in distinct_features.values()),
        "diff_feature_bytes": _nbytes(graph.snapshots[0].x) + sum(d.feature_nbytes() for d in maps),
        "build_seconds": diffs.build_seconds,
    }


_LAST_KEY = torch.iinfo(torch.int64).max  # a removed key's stand-in: it sorts after every real key


def _apply_on_device(edges: EdgeSet, diff: DiffMap) -> EdgeSet:
    """``apply_diff`` without a read on the host: the removed keys replaced by a key that sorts
    last, the added ones appended, one sort, and the first ``kept + added`` rows kept (a size the
    host knows from the tensors' shapes). The same sorted keys, weights and counts as the merge."""
    keys, removed, added = edges.keys, diff.removed_keys, diff.added_keys
    total = keys.numel() - removed.numel() + added.numel()
    if removed.numel():
        at = torch.searchsorted(keys, removed).clamp_(max=max(keys.numel() - 1, 0))
        keys = keys.index_fill(0, at, _LAST_KEY)
    merged = torch.cat([keys, added.to(keys.dtype)])
    order = torch.argsort(merged)[:total]
    weights = torch.cat([edges.weights, diff.added_weights.to(edges.weights.dtype)])
    counts = torch.cat([edges.counts, diff.added_counts.to(edges.counts.dtype)])
    return EdgeSet(merged[order], weights[order], counts[order], edges.num_nodes)


def out_edge_positions(
    keys: torch.Tensor, nodes: torch.Tensor, num_nodes: int, total: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions in the sorted ``keys`` of every edge whose source is in ``nodes``, and the index
    into ``nodes`` of each one's source (edges of one source are contiguous: keys are
    ``src * N + dst``). ``total``: how many such edges there are, where the host knows it (a GPU
    then need not report it)."""
    starts = torch.searchsorted(keys, nodes * num_nodes)
    ends = torch.searchsorted(keys, (nodes + 1) * num_nodes)
    counts = ends - starts
    owner = torch.repeat_interleave(torch.arange(nodes.numel(), device=keys.device), counts, output_size=total)
    first = torch.repeat_interleave(torch.cumsum(counts, 0) - counts, counts, output_size=total)
    offsets = torch.arange(owner.numel(), device=keys.device) - first
    return starts[owner] + offsets, owner


def diff_workload(first: EdgeSet, diff: DiffMap, kind: str = "gcn") -> tuple[int, int]:
    """``(rows, messages)`` of one incremental step, estimated on the chain's first graph.

    ``kind="gcn"`` (also for ``gcn_aggregate``): the added and removed edges, the out-edges of
    every touched node (its degree, hence its normalisation, changes) and of every changed
    feature row, and one self-loop term each. ``kind="gat"``: the added and removed edges, and
    twice the out-edges of the changed feature rows.
    """
    n = first.num_nodes
    changed = diff.changed_nodes.to(first.device)
    if kind in ("gcn", "gcn_aggregate"):
        sources = torch.unique(torch.cat([diff.touched_nodes.to(first.device), changed]))
        repeat = 1
    elif kind == "gat":
        sources, repeat = changed, 2
    else:
        raise ValueError(f"unknown conv kind {kind!r} (choose from gcn, gcn_aggregate, gat)")
    pos, _ = out_edge_positions(first.keys, sources, n)
    targets = torch.cat(
        [
            torch.remainder(first.keys[pos], n),
            torch.remainder(diff.added_keys.to(first.device), n),
            torch.remainder(diff.removed_keys.to(first.device), n),
            sources,
        ]
    )
    hit = torch.zeros(n, dtype=torch.bool, device=first.device)
    hit[targets] = True
    messages = repeat * pos.numel() + diff.num_changed_edges + (sources.numel() if repeat == 1 else 0)
    return int(hit.sum()), int(messages)
