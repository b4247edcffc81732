"""The baselines DistDy's online partitioner is compared with (``BASELINES``).

``metis`` (the union of every snapshot, edges weighted by how many snapshots hold them,
partitioned once), ``hash`` (id modulo K), ``greedy`` (METIS on the first snapshot, then nodes
stay and a new node joins the store holding most of its neighbours) and ``metis_layer`` (METIS on
each snapshot, its labels matched to the previous snapshot's by the Hungarian method). Each has the
``online`` partitioners' signature (``dygsched.data.partition``) and places every snapshot in
arrival order. None of them respects the stores' capacity ``D^k``; ``online.over_capacity``
reports where they would exceed it (out of memory, as DistDy's Table 3 reports Greedy on Ex500K).
Numpy only (METIS and scipy imported when a baseline runs).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from dygsched.data.partition import names, partitioner
from dygsched.data.partition.snapshot_graph import SnapshotGraph, SnapshotPartition, adjacency, storage, utility
from dygsched.errors import ConfigError

BASELINES = names("online", baseline=True)


def _record(
    store: np.ndarray, previous: np.ndarray | None, graph: SnapshotGraph, stores: int, seconds: float
) -> SnapshotPartition:
    additive, a = storage(store, previous, graph, stores)
    u, v = graph.edges
    return SnapshotPartition(store, additive, a, utility(store, graph), int((store[u] != store[v]).sum()), seconds)


def _present(labels: np.ndarray, graph: SnapshotGraph) -> np.ndarray:
    store = np.full(graph.num_nodes, -1, dtype=np.int64)
    store[graph.nodes] = labels[graph.nodes]
    return store


def _aligned(labels: np.ndarray, previous: np.ndarray, stores: int) -> np.ndarray:
    """``labels`` renamed so that as many nodes as possible keep the store they had (Hungarian method)."""
    from scipy.optimize import linear_sum_assignment

    both = (labels >= 0) & (previous >= 0)
    overlap = np.zeros((stores, stores))
    np.add.at(overlap, (labels[both], previous[both]), 1)
    rows, cols = linear_sum_assignment(-overlap)
    rename = np.arange(stores)
    rename[rows] = cols
    return np.where(labels >= 0, rename[np.maximum(labels, 0)], -1)


def _place_new_nodes(store: np.ndarray, graph: SnapshotGraph, new: np.ndarray, stores: int) -> None:
    """The greedy baseline's new nodes, in id order, each onto the store that holds most of its placed
    neighbours, then the smallest store, then the first (in place in ``store``). Sequential: a node
    sees the stores of the new nodes placed before it. The store sizes are counted once and kept up
    to date, so a snapshot costs its edges plus a few operations per new node (counting every node
    again for each new one made a growing graph's snapshot quadratic in its nodes)."""
    indptr, neighbours, _ = adjacency(graph)
    sizes = np.bincount(store[store >= 0], minlength=stores)
    for v in new.tolist():
        around = store[neighbours[indptr[v] : indptr[v + 1]]]
        around = around[around >= 0]
        counts = np.bincount(around, minlength=stores) if around.size else np.zeros(stores)
        k = int(np.lexsort((sizes, -counts))[0])  # most neighbours, then the smallest store
        store[v] = k
        sizes[k] += 1


def _placed(
    graphs: Sequence[SnapshotGraph],
    stores: int,
    place: Callable[[int, SnapshotGraph, np.ndarray | None], np.ndarray],
    spread: float = 0.0,
) -> list[SnapshotPartition]:
    """Every snapshot's partition by a baseline whose ``place(tau, graph, previous)`` gives snapshot
    ``tau``'s stores, in order, each with its storage and time (plus ``spread``: a share of the time
    the baseline took once for all snapshots)."""
    out: list[SnapshotPartition] = []
    previous: np.ndarray | None = None
    for tau, graph in enumerate(graphs):
        start = time.perf_counter()
        store = place(tau, graph, previous)
        out.append(_record(store, previous, graph, stores, time.perf_counter() - start + spread))
        previous = store
    return out


def hash_partitions(
    graphs: Sequence[SnapshotGraph],
    stores: int,
    capacity: np.ndarray | None = None,
    window: int = 1,
    seed: int = 0,
    **options: float,
) -> list[SnapshotPartition]:
    """The ``hash`` baseline: node ``v`` on store ``v mod K``."""
    return _placed(graphs, stores, lambda tau, graph, previous: _present(np.arange(graph.num_nodes) % stores, graph))


def metis_partitions(
    graphs: Sequence[SnapshotGraph],
    stores: int,
    capacity: np.ndarray | None = None,
    window: int = 1,
    seed: int = 0,
    **options: float,
) -> list[SnapshotPartition]:
    """The ``metis`` baseline: METIS on the union of every snapshot (edges weighted by how many snapshots
    hold them), once; its time is spread over the snapshots."""
    from dygsched.data.partition.nodes import metis_parts

    start = time.perf_counter()
    n = graphs[0].num_nodes
    edges = np.concatenate([g.edges for g in graphs], axis=1)
    keys, counts = np.unique(edges[0] * n + edges[1], return_counts=True)
    fixed = metis_parts(n, np.stack([keys // n, keys % n]), stores, seed, counts)
    spread = (time.perf_counter() - start) / len(graphs)
    return _placed(graphs, stores, lambda tau, graph, previous: _present(fixed, graph), spread)


def metis_layer_partitions(
    graphs: Sequence[SnapshotGraph],
    stores: int,
    capacity: np.ndarray | None = None,
    window: int = 1,
    seed: int = 0,
    **options: float,
) -> list[SnapshotPartition]:
    """The ``metis_layer`` baseline: METIS on each snapshot, its labels matched to the previous
    snapshot's by the Hungarian method."""
    from dygsched.data.partition.nodes import metis_parts

    def place(tau: int, graph: SnapshotGraph, previous: np.ndarray | None) -> np.ndarray:
        labels = _present(metis_parts(graph.num_nodes, graph.edges, stores, seed + tau), graph)
        return _aligned(labels, previous, stores) if previous is not None else labels

    return _placed(graphs, stores, place)


def greedy_partitions(
    graphs: Sequence[SnapshotGraph],
    stores: int,
    capacity: np.ndarray | None = None,
    window: int = 1,
    seed: int = 0,
    **options: float,
) -> list[SnapshotPartition]:
    """The ``greedy`` baseline: METIS on the first snapshot, then nodes stay and a new node joins the
    store holding most of its neighbours."""
    from dygsched.data.partition.nodes import metis_parts

    def place(tau: int, graph: SnapshotGraph, previous: np.ndarray | None) -> np.ndarray:
        if previous is None:
            return _present(metis_parts(graph.num_nodes, graph.edges, stores, seed), graph)
        store = np.full(graph.num_nodes, -1, dtype=np.int64)
        kept = graph.nodes[previous[graph.nodes] >= 0]
        store[kept] = previous[kept]
        _place_new_nodes(store, graph, graph.nodes[previous[graph.nodes] < 0], stores)
        return store

    return _placed(graphs, stores, place)


def baseline_partitions(method: str, graphs: Sequence[SnapshotGraph], stores: int, seed: int = 0) -> list[SnapshotPartition]:
    """Every snapshot's partition by a baseline (``BASELINES``), in order, each with its storage and time."""
    entry = partitioner("online", method)
    if not entry.baseline:
        raise ConfigError(f"'{method}' is no baseline (choose from {', '.join(BASELINES)})")
    return entry.load()(graphs, stores, seed=seed)
