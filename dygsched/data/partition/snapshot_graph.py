"""What an online partitioner reads and gives, whichever it is (DistDy's ``online.py`` or the
baselines of ``online_baselines.py``).

``SnapshotGraph`` is what a partitioner sees of one arriving snapshot; ``SnapshotPartition`` is
where it put the snapshot's nodes and what that costs. Edge weights ``W_uv`` are the expected
feature-fetch cost: ``C`` times the probability that a training mini-batch samples the edge,
propagated hop by hop (``edge_weights``); ``expected_messages`` gives the balance extension's
per-node work. ``utility`` and ``storage`` score a placement as every partitioner reports it.
Numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dygsched.data.sorted_keys import sorted_unique


@dataclass(frozen=True)
class SnapshotGraph:
    """What a partitioner sees of snapshot ``tau``: its nodes, its undirected edges (each once, ``u < v``)
    with weights ``W_uv``, each node's additive size (``additive_bytes[v]``, used when ``v`` stays) and,
    for the balance extension, each node's expected sampled messages as a training target
    (``messages``, 0 for a node that is never a target; ``None``: not computed)."""

    nodes: np.ndarray
    edges: np.ndarray  # [2, E], u < v
    weights: np.ndarray  # [E]
    additive_bytes: np.ndarray  # [num_nodes] (whole id space)
    full_bytes: int
    num_nodes: int
    messages: np.ndarray | None = None  # [num_nodes]


@dataclass(frozen=True)
class SnapshotPartition:
    """Where snapshot ``tau``'s nodes live: ``store[v]`` (-1 for a node absent from it), which are stored
    additively, the bytes each store takes for it (``a_tau^k``), its utility ``U`` (the weight of edges
    inside stores), cut edges, the seconds the partitioner took, and for DistDy the refinement's
    passes and the most moves any one node made in it (0 for a baseline)."""

    store: np.ndarray
    additive: np.ndarray  # bool [num_nodes]
    stored_bytes: np.ndarray  # [K]
    utility: float
    cut_edges: int
    seconds: float
    passes: int = 0
    most_moves: int = 0


def edge_weights(
    num_nodes: int, edges: np.ndarray, training: np.ndarray, batch: int, fanouts: Sequence[int], full_bytes: int
) -> tuple[np.ndarray, np.ndarray]:
    """The undirected edges of a snapshot (``u < v``, each once) and their weights ``W_uv``.

    ``p_0`` is ``batch / |training|`` on training nodes; hop ``l`` samples ``min(1, f_l / d_v)`` of node
    ``v``'s neighbours, so ``p_{l+1}(u) = min(1, sum_v p_l(v) min(1, f_l/d_v))``; an edge's weight is
    ``C`` times the probability, summed over hops, that either end samples the other.
    """
    src, dst = edges
    keep = src != dst
    a, b = np.minimum(src[keep], dst[keep]), np.maximum(src[keep], dst[keep])
    keys = sorted_unique(a * num_nodes + b)
    u, v = keys // num_nodes, keys % num_nodes
    degree = np.bincount(np.concatenate([u, v]), minlength=num_nodes).astype(float)
    p = np.zeros(num_nodes)
    p[training] = min(1.0, batch / max(len(training), 1))
    weight = np.zeros(keys.size)
    for fanout in fanouts:
        share = np.minimum(1.0, fanout / np.maximum(degree, 1.0))
        from_v, from_u = p[v] * share[v], p[u] * share[u]  # v samples u, u samples v
        weight += from_v + from_u
        nxt = np.bincount(u, weights=from_v, minlength=num_nodes) + np.bincount(v, weights=from_u, minlength=num_nodes)
        p = np.minimum(1.0, nxt)
    return np.stack([u, v]), weight * full_bytes


def expected_messages(num_nodes: int, edges: np.ndarray, training: np.ndarray, fanouts: Sequence[int]) -> np.ndarray:
    """``[num_nodes]``: the sampled messages a training node's neighbourhood computes when it is a target
    (0 for other nodes), in expectation and counting a node reached twice twice.

    ``edges`` are directed (``src -> dst``: ``dst`` reads ``src``), as the sampler reads in-neighbours.
    Layer ``l`` draws ``min(f_l, d_u)`` messages into every node ``u`` of the hops before it; node ``v``
    joins hop ``l`` with probability ``min(1, f_l / d_x)`` for each in-neighbour ``x`` of it there. So
    ``E = c_1 + (I + P_1)(c_2 + (I + P_2)(c_3 ...))`` with ``c_l = min(f_l, d)`` and ``(P_l y)(v) =
    min(1, f_l/d_v) sum_{u -> v} y(u)``."""
    src, dst = edges
    degree = np.bincount(dst, minlength=num_nodes).astype(float)
    drawn = [np.minimum(float(f), degree) for f in fanouts]
    total = drawn[-1]
    for layer in range(len(fanouts) - 2, -1, -1):
        share = np.where(degree > 0, drawn[layer] / np.maximum(degree, 1.0), 0.0)
        total = drawn[layer] + total + share * np.bincount(dst, weights=total[src], minlength=num_nodes)
    out = np.zeros(num_nodes)
    out[training] = total[training]
    return out


def utility(store: np.ndarray, graph: SnapshotGraph) -> float:
    """``U``: the weight of the edges inside stores."""
    u, v = graph.edges
    return float(graph.weights[store[u] == store[v]].sum()) if u.size else 0.0


def storage(store: np.ndarray, previous: np.ndarray | None, graph: SnapshotGraph, stores: int) -> tuple[np.ndarray, np.ndarray]:
    """(additive mask, bytes per store) of an assignment: a node on the store that held it before is additive."""
    additive = np.zeros(graph.num_nodes, dtype=bool)
    if previous is not None:
        additive = (store >= 0) & (store == previous)
    sizes = np.where(additive, graph.additive_bytes, graph.full_bytes)
    present = store >= 0
    return additive, np.bincount(store[present], weights=sizes[present], minlength=stores)


def adjacency(graph: SnapshotGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``graph``'s edges both ways as CSR: ``(indptr, neighbours, weights)``, a node's neighbours in edge order."""
    u, v = graph.edges
    rows, cols, w = np.concatenate([u, v]), np.concatenate([v, u]), np.concatenate([graph.weights, graph.weights])
    order = np.argsort(rows, kind="stable")
    indptr = np.zeros(graph.num_nodes + 1, dtype=np.int64)
    np.add.at(indptr, rows + 1, 1)
    return np.cumsum(indptr), cols[order].astype(np.int64), w[order].astype(np.float64)
