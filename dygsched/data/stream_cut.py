"""An event stream cut into snapshots: ``cut_stream(stream, cut) -> TemporalGraph``.

The one place events become snapshots: ``dataset.snapshot`` on any stream (``load_data``) and the
edge list's ``num_snapshots`` / ``snapshot_duration`` both come here. ``cut`` (``time_cut``) says
which interval each event falls in; here:

* **Edges.** The events of an interval become that snapshot's edges, one per ``(src, dst)`` pair,
  its weight the number of events (or the sum of the stream's weights), sorted by ``(src, dst)``.
  With ``lags = L`` snapshot ``s`` holds intervals ``s .. s + L`` (FlareDTDG's overlapping
  snapshots; the edge list's ``lags``).
* **Features** (``features="log_degree"``): a node's in- and out-degree in the snapshot (distinct
  neighbours, as ``log(1 + d)``), then, where the stream has edge features, the mean of the
  features of the node's events in the snapshot (as source or destination; zeros for a node
  without events). Both are read off the snapshot itself, so a node first seen at test time gets
  features of the same kind as any other: they work inductively. (EvolveGCN uses one-hot degrees,
  whose width grows with the largest degree seen in training; UTG gives each node a fixed random
  vector, an identity a new node was never trained with: docs/data.md.) ``features="flare"``: the
  FlareDTDG authors' raw weighted in- and out-degrees.
* **Targets**: a node's ``log(1 + degree)`` in the next snapshot (``flare``: ``log(1 + weighted
  in-degree)``), so the last interval only gives targets and ``K`` intervals make ``K - 1 - L``
  snapshots. A node exists in a snapshot when it has an edge there. Each snapshot also carries
  its link targets (``Snapshot.links``: the next interval's distinct pairs, the very tensor of the
  next snapshot's edges), so link prediction keeps every snapshot, the last one scoring the
  last interval's pairs (``link_targets``).
* **Times**: ``TemporalGraph.snapshot_times[s]`` is where snapshot ``s`` starts and the last entry
  where the interval that gives the last snapshot's targets starts; without lags snapshot ``s``
  holds the events of ``[snapshot_times[s], snapshot_times[s+1])``, the same boundaries an event
  model's split can use.

Everything is array operations over all events at once (one sort, run lengths, ``bincount``), and
one sparse product per snapshot for the feature means; the only loops are over snapshots
(docs/measurements.md: the REDDIT-sized stream cut daily in 1-2 s).
"""

from __future__ import annotations

import numpy as np
import torch

from dygsched.data.events import EventStream
from dygsched.data.memory_budget import check_fits
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.data.time_cut import TimeCut
from dygsched.errors import DataError

FEATURES = ("log_degree", "flare")
# per node and graph while building, besides the features: the target, the mask and four degree counts
BYTES_PER_NODE = 4 + 1 + 4 * 8


def cut_stream(
    stream: EventStream, cut: TimeCut, features: str = "log_degree", lags: int = 0, refuse_gaps: bool = True
) -> TemporalGraph:
    """``stream`` as snapshots cut by ``cut`` (see the module docstring). ``refuse_gaps``: an empty
    interval between events is refused, as UTG refuses it; the edge list keeps it as an empty snapshot."""
    what = f"dataset '{stream.name}'"
    if features not in FEATURES:
        raise DataError(f"{what}: unknown features '{features}' (choose from {', '.join(FEATURES)})")
    intervals = cut.intervals(stream.t.numpy(), what, refuse_gaps)
    if intervals.count < 2:
        raise DataError(f"{what}: the edges span a single snapshot at {cut.label}; use a shorter one")
    graphs = intervals.count - lags  # graph g holds intervals g .. g + lags; the last one gives targets only
    if graphs < 2:
        raise DataError(f"{what}: {intervals.count} intervals with lags={lags} leave fewer than 2 snapshots")
    width = 2 + (0 if stream.edge_features is None else int(stream.edge_features.size(1)))
    n = stream.num_nodes
    check_fits(graphs * n * (4 * width + BYTES_PER_NODE), f"{what}: {graphs} snapshots of {n:,} nodes and {width} features")
    members = _membership(intervals.index, graphs, lags)
    edges = _edges(stream, members, graphs)
    out_deg, in_deg = (np.bincount(edges.slot(end), minlength=graphs * n).reshape(graphs, n) for end in (edges.src, edges.dst))
    x = np.zeros((graphs, n, width), dtype=np.float32)
    if features == "flare":  # FlareDTDG's code: raw weighted degrees; log weighted in-degree next
        in_weight = np.bincount(edges.slot(edges.dst), edges.weight, graphs * n).reshape(graphs, n)
        x[..., 0], x[..., 1] = in_weight, np.bincount(edges.slot(edges.src), edges.weight, graphs * n).reshape(graphs, n)
        y = np.log1p(in_weight[1:]).astype(np.float32)
    else:
        x[..., 0], x[..., 1] = np.log1p(in_deg), np.log1p(out_deg)
        y = np.log1p(in_deg[1:] + out_deg[1:]).astype(np.float32)
    if width > 2:
        _mean_edge_features(stream, intervals.index, lags, x[..., 2:])
    mask = (in_deg + out_deg) > 0
    weight = edges.weight.astype(np.float32)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(edges.graph, minlength=graphs))])
    # every graph's distinct pairs; graph s + 1's are also snapshot s's link targets (the same tensor)
    pairs = [torch.from_numpy(np.stack([edges.src[a:b], edges.dst[a:b]])) for a, b in zip(offsets[:-1], offsets[1:])]
    snapshots = []
    for s in range(graphs - 1):
        a, b = int(offsets[s]), int(offsets[s + 1])
        snapshots.append(
            Snapshot(
                edge_index=pairs[s],
                edge_weight=torch.from_numpy(weight[a:b]),
                x=torch.from_numpy(x[s]),
                y=torch.from_numpy(y[s]),
                node_mask=torch.from_numpy(mask[s]),
                links=pairs[s + 1],
                target_index=s + 1,
            )
        )
    times = torch.from_numpy(intervals.bounds[:graphs].copy())
    return TemporalGraph(stream.name, tuple(snapshots), Task.REGRESSION, snapshot_times=times, node_ids=stream.node_ids)


class _Members:
    """Which graph each (possibly repeated) event belongs to: ``event[k]`` is in graph ``graph[k]``
    (``event`` is ``None`` when each event is in exactly one graph, its own interval)."""

    def __init__(self, graph: np.ndarray, event: np.ndarray | None) -> None:
        self.graph, self.event = graph, event

    def of(self, values: np.ndarray) -> np.ndarray:
        return values if self.event is None else values[self.event]


def _membership(index: np.ndarray, graphs: int, lags: int) -> _Members:
    if lags == 0:
        return _Members(index, None)
    graph = np.concatenate([index - j for j in range(lags + 1)])  # an event of interval i is in graphs i - lags .. i
    event = np.tile(np.arange(index.size, dtype=np.int64), lags + 1)
    keep = (graph >= 0) & (graph < graphs)
    return _Members(graph[keep], event[keep])


class _Edges:
    """The distinct ``(graph, src, dst)`` triples in ``(graph, src, dst)`` order, each with its weight."""

    def __init__(self, graph: np.ndarray, src: np.ndarray, dst: np.ndarray, weight: np.ndarray, num_nodes: int) -> None:
        self.graph, self.src, self.dst, self.weight, self.num_nodes = graph, src, dst, weight, num_nodes

    def slot(self, node: np.ndarray) -> np.ndarray:
        """Row ``graph * num_nodes + node`` of a ``[graphs * num_nodes]`` table."""
        return self.graph * self.num_nodes + node


def _edges(stream: EventStream, members: _Members, graphs: int) -> _Edges:
    n = stream.num_nodes
    src, dst = members.of(stream.src.numpy()), members.of(stream.dst.numpy())
    graph = members.graph
    pair = src * n + dst
    if graphs * n * n < 2**62:  # one key: a single sort
        key = graph * (n * n) + pair
        order = np.argsort(key, kind="stable")
        key = key[order]
        starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
        edge_graph, edge_pair = np.divmod(key[starts], n * n)
    else:
        order = np.lexsort((pair, graph))
        graph, pair = graph[order], pair[order]
        starts = np.flatnonzero(np.concatenate([[True], (graph[1:] != graph[:-1]) | (pair[1:] != pair[:-1])]))
        edge_graph, edge_pair = graph[starts], pair[starts]
    if stream.weight is None:  # repeated interactions: weight = count
        weight = np.diff(np.append(starts, order.size)).astype(np.float64)
    else:
        weight = np.add.reduceat(members.of(stream.weight.numpy()).astype(np.float64)[order], starts)
    edge_src, edge_dst = np.divmod(edge_pair, n)
    return _Edges(edge_graph, edge_src, edge_dst, weight, n)


def _mean_edge_features(stream: EventStream, intervals: np.ndarray, lags: int, into: np.ndarray) -> None:
    """``into[g, v]``: the mean edge features of node ``v``'s events in graph ``g``. The stream is in
    time order, so a graph's events (intervals ``g .. g + lags``) are one slice of it; each graph's
    sums are one sparse product (node-by-event incidence times the slice's features), so only one
    graph's worth of memory is needed besides the result."""
    from scipy.sparse import csr_matrix

    assert stream.edge_features is not None  # the caller checked
    n = stream.num_nodes
    first = np.searchsorted(intervals, np.arange(intervals.max() + 2))  # each interval's first event
    src, dst, features = stream.src.numpy(), stream.dst.numpy(), stream.edge_features.float().numpy()
    for g in range(into.shape[0]):
        a, b = int(first[g]), int(first[min(g + lags + 1, first.size - 1)])
        ends = np.concatenate([src[a:b], dst[a:b]])  # an event counts at both its ends (a self-loop twice)
        events = np.tile(np.arange(b - a), 2)
        incidence = csr_matrix((np.ones(ends.size, dtype=np.float32), (ends, events)), shape=(n, b - a))
        counts = np.bincount(ends, minlength=n)
        into[g] = (incidence @ features[a:b]) / np.maximum(counts, 1)[:, None]
