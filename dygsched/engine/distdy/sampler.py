"""Neighbour sampling that draws the same neighbours for a node whichever rank samples it.

GraphSAGE samples, hop by hop from the targets, up to ``fanout`` of each node's in-neighbours,
uniformly without replacement. A sampler drawing from one generator in call order (PyG's
``NeighborLoader``) would give a node other neighbours on another rank, so a partition would
change what is trained. Here every (node, neighbour) pair gets a pseudo-random key from a hash of
``(key, node, neighbour)`` and a node keeps its ``fanout`` neighbours of smallest key: uniform
without replacement, and a function of the node alone. ``key`` names the step, the snapshot and
the hop. Numpy, on the host (the sampled subgraph then goes to the device).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


def mix(*values: np.ndarray | int) -> np.ndarray:
    """A 64-bit hash of the arguments, element-wise (splitmix64 rounds; wraps around by design)."""
    with np.errstate(over="ignore"):
        h: Any = np.uint64(0)  # a uint64 scalar, then arrays (or scalars, for scalar values): numpy mixes them
        for value in values:
            h = (np.asarray(value).astype(np.uint64) + h * _MIX[0]) ^ np.uint64(0x5851F42D4C957F2D)
            h = (h ^ (h >> np.uint64(30))) * _MIX[1]
            h = (h ^ (h >> np.uint64(27))) * _MIX[2]
            h = h ^ (h >> np.uint64(31))
        return h


@dataclass(frozen=True)
class InNeighbours:
    """A snapshot's in-neighbours in CSR form: ``sources[indptr[v]:indptr[v+1]]`` send to ``v``."""

    indptr: np.ndarray
    sources: np.ndarray

    @classmethod
    def of(cls, edge_index: np.ndarray, num_nodes: int) -> InNeighbours:
        src, dst = edge_index
        order = np.lexsort((src, dst))
        indptr = np.zeros(num_nodes + 1, dtype=np.int64)
        np.add.at(indptr, dst + 1, 1)
        return cls(np.cumsum(indptr), src[order].astype(np.int64))


def sample_hop(graph: InNeighbours, nodes: np.ndarray, fanout: int, key: int) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``fanout`` in-neighbours of each of ``nodes``: sampled edges as (sources, targets)."""
    starts, stops = graph.indptr[nodes], graph.indptr[nodes + 1]
    degree = stops - starts
    owner = np.repeat(np.arange(nodes.size), degree)
    offsets = np.arange(owner.size) - np.repeat(np.cumsum(degree) - degree, degree)
    sources = graph.sources[starts[owner] + offsets]
    targets = nodes[owner]
    order = np.lexsort((mix(key, targets, sources), owner))
    rank = np.arange(owner.size) - np.repeat(np.cumsum(degree) - degree, degree)
    chosen = order[rank < fanout]
    return sources[chosen], targets[chosen]


@dataclass(frozen=True)
class Block:
    """One layer's message flow: its destination nodes are the first ``num_dst`` of ``nodes`` (the
    sources), and ``edge_index`` runs from source positions to destination positions."""

    nodes: np.ndarray
    num_dst: int
    edge_index: np.ndarray


@dataclass(frozen=True)
class Neighbourhood:
    """The targets' sampled neighbourhood as per-layer blocks, outermost (layer 1) first: layer ``l``
    computes its destinations from its sources; the last block's destinations are the targets, the
    first block's sources every node whose features are read."""

    blocks: list[Block]

    @property
    def nodes(self) -> np.ndarray:
        """Every node whose input features the neighbourhood reads (the targets first)."""
        return self.blocks[0].nodes if self.blocks else np.zeros(0, np.int64)


def sample_neighbourhood(graph: InNeighbours, targets: np.ndarray, fanouts: Sequence[int], key: int) -> Neighbourhood:
    """Blocks for ``len(fanouts)`` layers (``fanouts[0]`` neighbours per target, ``fanouts[1]`` per
    node of the next hop, ...). Each destination node of block ``l`` draws its own neighbours keyed
    by ``(key, l)``, so a node's embedding at every layer is the same whatever batch or rank it is
    computed in (the blocks of DGL's message-flow graphs, not one shared subgraph)."""
    dst = np.asarray(targets, dtype=np.int64)
    blocks: list[Block] = []
    for layer, fanout in enumerate(fanouts):  # from the targets outwards
        src, to = sample_hop(graph, dst, fanout, int(mix(key, layer)))
        extra = np.setdiff1d(np.unique(src), dst)
        nodes = np.concatenate([dst, extra])
        lookup = np.argsort(nodes, kind="stable")
        position = lambda ids, nodes=nodes, lookup=lookup: lookup[np.searchsorted(nodes[lookup], ids)]  # noqa: E731
        edge_index = np.stack([position(src), position(to)]) if src.size else np.zeros((2, 0), np.int64)
        blocks.append(Block(nodes, dst.size, edge_index.astype(np.int64)))
        dst = nodes
    return Neighbourhood(blocks[::-1])


def step_targets(present: np.ndarray, nodes: np.ndarray, batch: int, seed: int, epoch: int, tau: int, b: int) -> np.ndarray:
    """Mini-batch ``b`` of step ``tau``: up to ``batch`` of ``nodes`` present in snapshot ``tau``, drawn
    from a generator seeded by the step (the same targets whatever the partition)."""
    candidates = nodes[present[nodes]]
    if candidates.size == 0:
        return candidates
    return np.random.default_rng([seed, epoch, tau, b, 43]).choice(candidates, size=min(batch, candidates.size), replace=False)


def sample_key(seed: int, epoch: int, tau: int, b: int, t: int) -> int:
    """The sampler's key for snapshot ``t`` of mini-batch ``b`` of step ``tau`` (see ``sampler``)."""
    return int(mix(seed, epoch, tau, b, t))
