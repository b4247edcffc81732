"""Node partitions of a dynamic graph: which rank owns each node, and in which of its chunks.

Node-partitioned strategies (FlareDTDG, DistDy) give every rank a fixed set of nodes in every
snapshot. A ``NodePartition`` assigns each node a part (a rank) and a chunk inside that part, in
two levels: ``parts`` parts, then ``chunks`` chunks per part. Partitioners (the ``node`` kind of
``dygsched.data.partition.PARTITIONERS``):

* ``metis``: METIS k-way (through pymetis) on the union graph of the given snapshots (edges
  deduplicated, symmetrised, no self-loops, unweighted), vertex weight = degree + 1; then each
  part's induced subgraph into ``chunks`` chunks the same way. Seeded, so the same inputs give the
  same partition; cached by a hash of the graph and the settings.
* ``hash``: node ``v`` to part ``v mod P``, chunk ``(v div P) mod C``.
* ``range``: contiguous id ranges, ``P`` parts of (nearly) equal size, each cut into ``C`` ranges.

Each partition reports its edge cut (undirected union edges between parts) and its balance (the
largest part's vertex weight over the mean). Numpy only (no torch); pymetis is imported when ``metis`` runs.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dygsched.data.partition import partitioner
from dygsched.data.sorted_keys import sorted_unique
from dygsched.errors import ConfigError, DataError

if TYPE_CHECKING:
    from dygsched.data.temporal_graph import TemporalGraph

CACHE_VERSION = 1


@dataclass(frozen=True)
class UnionGraph:
    """A symmetric, loop-free, deduplicated graph in CSR form: ``indices[indptr[v]:indptr[v+1]]`` are ``v``'s neighbours."""

    indptr: np.ndarray
    indices: np.ndarray

    @property
    def num_nodes(self) -> int:
        return int(self.indptr.size - 1)

    @property
    def degree(self) -> np.ndarray:
        return np.diff(self.indptr)

    def digest(self) -> str:
        return hashlib.sha256(self.indptr.tobytes() + b"|" + self.indices.tobytes()).hexdigest()


def union_graph(graph: TemporalGraph, snapshots: Sequence[int]) -> UnionGraph:
    """The union of ``snapshots``' edges (every time an edge appears counts once), both directions, no self-loops."""
    n = graph.num_nodes
    pieces = [graph.snapshots[t].edge_index.numpy() for t in snapshots]
    edges = np.concatenate(pieces, axis=1) if pieces else np.zeros((2, 0), dtype=np.int64)
    src, dst = edges[0].astype(np.int64), edges[1].astype(np.int64)
    keep = src != dst
    src, dst = np.concatenate([src[keep], dst[keep]]), np.concatenate([dst[keep], src[keep]])
    keys = sorted_unique(src * n + dst)
    rows, cols = keys // n, keys % n
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(indptr, rows + 1, 1)
    return UnionGraph(np.cumsum(indptr), cols.astype(np.int64))


@dataclass(frozen=True)
class NodePartition:
    """``part[v]``: the rank owning node ``v``; ``chunk[v]``: its chunk in that part (``0 .. chunks_per_part-1``)."""

    part: np.ndarray
    chunk: np.ndarray
    num_parts: int
    chunks_per_part: int
    method: str
    edge_cut: int
    balance: float

    def __post_init__(self) -> None:
        if self.part.shape != self.chunk.shape or self.part.ndim != 1:
            raise DataError("a node partition needs one part and one chunk per node")
        if self.part.size and (self.part.min() < 0 or self.part.max() >= self.num_parts):
            raise DataError(f"node parts must lie in [0, {self.num_parts})")
        if self.chunk.size and (self.chunk.min() < 0 or self.chunk.max() >= self.chunks_per_part):
            raise DataError(f"node chunks must lie in [0, {self.chunks_per_part})")

    @property
    def num_nodes(self) -> int:
        return int(self.part.size)

    def nodes_of(self, rank: int) -> np.ndarray:
        """The nodes ``rank`` owns, in increasing id order."""
        return np.flatnonzero(self.part == rank)

    def part_sizes(self) -> list[int]:
        return np.bincount(self.part, minlength=self.num_parts).tolist()

    def describe(self) -> dict[str, float | int | str | list[int]]:
        return {
            "method": self.method,
            "parts": self.num_parts,
            "chunks_per_part": self.chunks_per_part,
            "edge_cut": self.edge_cut,
            "balance": self.balance,
            "part_sizes": self.part_sizes(),
        }


def measure(union: UnionGraph, part: np.ndarray, num_parts: int) -> tuple[int, float]:
    """(edge cut, balance): undirected union edges whose ends lie in different parts, and the
    largest part's vertex weight (degree + 1) over the mean."""
    rows = np.repeat(np.arange(union.num_nodes), union.degree)
    cut = int(np.count_nonzero(part[rows] != part[union.indices]) // 2)
    loads = np.bincount(part, weights=union.degree + 1.0, minlength=num_parts)
    return cut, float(loads.max() / loads.mean()) if loads.mean() > 0 else 1.0


def _contiguous(n: int, pieces: int) -> np.ndarray:
    """``pieces`` contiguous ranges of (nearly) equal size over ``0 .. n-1``: the range of each index."""
    return (np.arange(n, dtype=np.int64) * pieces) // max(n, 1)


def _metis(union: UnionGraph, nodes: np.ndarray, pieces: int, seed: int) -> np.ndarray:
    """METIS k-way of the subgraph ``union`` induces on ``nodes``: a piece per node (of ``nodes``)."""
    if pieces == 1 or nodes.size <= 1:
        return np.zeros(nodes.size, dtype=np.int64)
    local = np.full(union.num_nodes, -1, dtype=np.int64)
    local[nodes] = np.arange(nodes.size)
    starts, stops = union.indptr[nodes], union.indptr[nodes + 1]
    neighbours = np.concatenate([union.indices[a:b] for a, b in zip(starts, stops)]) if nodes.size else np.zeros(0, np.int64)
    owners = np.repeat(np.arange(nodes.size), stops - starts)
    inside = local[neighbours] >= 0
    neighbours, owners = local[neighbours[inside]], owners[inside]
    return _part_graph(nodes.size, owners, neighbours, pieces, seed)


def metis_parts(
    num_nodes: int, edges: np.ndarray, parts: int, seed: int = 0, edge_weights: np.ndarray | None = None
) -> np.ndarray:
    """METIS k-way (through pymetis) of an undirected graph given as edges ``[2, E]`` (each once or
    both ways), optionally with integer edge weights; vertex weight = degree + 1. A part per node."""
    if parts == 1 or num_nodes <= 1:
        return np.zeros(num_nodes, dtype=np.int64)
    src, dst = edges
    keep = src != dst
    weights = (
        np.ones(int(keep.sum()), dtype=np.int64) if edge_weights is None else np.asarray(edge_weights)[keep].astype(np.int64)
    )
    rows, cols = np.concatenate([src[keep], dst[keep]]), np.concatenate([dst[keep], src[keep]])
    w = np.concatenate([weights, weights])
    keys = sorted_unique(rows * num_nodes + cols)
    summed = np.bincount(np.searchsorted(keys, rows * num_nodes + cols), weights=w, minlength=keys.size).astype(np.int64)
    rows, cols = keys // num_nodes, keys % num_nodes
    return _part_graph(num_nodes, rows, cols, parts, seed, np.maximum(summed, 1))


def _part_graph(
    num_nodes: int, rows: np.ndarray, cols: np.ndarray, parts: int, seed: int, edge_weights: np.ndarray | None = None
) -> np.ndarray:
    """pymetis k-way of the symmetric graph whose adjacency is ``(rows, cols)`` sorted by row, vertex
    weight = degree + 1, seeded: a part per node."""
    import pymetis

    xadj = np.zeros(num_nodes + 1, dtype=np.int64)
    np.add.at(xadj, rows + 1, 1)
    xadj = np.cumsum(xadj)
    vweights = (np.diff(xadj) + 1).astype(np.int64)
    options = pymetis.Options(seed=int(seed))
    _, membership = pymetis.part_graph(
        int(parts), xadj=xadj, adjncy=cols, vweights=vweights, eweights=edge_weights, recursive=False, options=options
    )
    return np.asarray(membership, dtype=np.int64)


def partition_nodes(
    graph: TemporalGraph,
    snapshots: Sequence[int],
    parts: int,
    chunks: int,
    method: str = "metis",
    seed: int = 0,
    cache_dir: Path | None = None,
) -> NodePartition:
    """Partition ``graph``'s nodes into ``parts`` parts of ``chunks`` chunks each (see the module docstring).

    ``snapshots``: the snapshots whose union graph METIS cuts (the training snapshots). With
    ``cache_dir``, a METIS partition is read back from, or written to, a file named by a hash of the
    union graph and the settings.
    """
    place = partitioner("node", method).load()
    n = graph.num_nodes
    if parts < 1 or chunks < 1:
        raise ConfigError(f"a node partition needs at least one part and one chunk per part, got {parts} and {chunks}")
    if parts > n:
        raise ConfigError(f"{parts} parts are more than the graph's {n} nodes")
    if parts * chunks > n:
        raise ConfigError(f"{parts} parts x {chunks} chunks are more chunks than the graph's {n} nodes")
    union = union_graph(graph, snapshots)
    part, chunk = place(union, parts, chunks, seed, cache_dir)
    empty = [p for p, size in enumerate(np.bincount(part, minlength=parts)) if size == 0]
    if empty:
        raise DataError(f"the {method} partition leaves part(s) {empty} without nodes: use fewer ranks or another partitioner")
    cut, balance = measure(union, part, parts)
    return NodePartition(part, chunk, parts, chunks, method, cut, balance)


def hash_nodes(
    union: UnionGraph, parts: int, chunks: int, seed: int = 0, cache_dir: Path | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Node ``v`` to part ``v mod P``, chunk ``(v div P) mod C``."""
    ids = np.arange(union.num_nodes, dtype=np.int64)
    return ids % parts, (ids // parts) % chunks


def range_nodes(
    union: UnionGraph, parts: int, chunks: int, seed: int = 0, cache_dir: Path | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Contiguous id ranges: ``P`` parts of (nearly) equal size, each cut into ``C`` ranges."""
    part = _contiguous(union.num_nodes, parts)
    chunk = np.zeros(union.num_nodes, dtype=np.int64)
    for p in range(parts):
        members = np.flatnonzero(part == p)
        chunk[members] = _contiguous(members.size, chunks)
    return part, chunk


def metis_nodes(
    union: UnionGraph, parts: int, chunks: int, seed: int = 0, cache_dir: Path | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """METIS k-way into parts, then each part's induced subgraph into chunks; read from, or written
    to, ``cache_dir`` under a hash of the union graph and the settings."""
    key = hashlib.sha256(f"{CACHE_VERSION}|{union.digest()}|{parts}|{chunks}|{seed}".encode()).hexdigest()[:32]
    path = Path(cache_dir) / f"metis-{key}.npz" if cache_dir is not None else None
    if path is not None and path.is_file():
        with np.load(path) as stored:
            return stored["part"], stored["chunk"]
    part = _metis(union, np.arange(union.num_nodes), parts, seed)
    chunk = np.zeros_like(part)
    for p in range(parts):
        members = np.flatnonzero(part == p)
        chunk[members] = _metis(union, members, min(chunks, max(members.size, 1)), seed + 1 + p)
    if path is not None:  # a temporary name, then a rename: a reader never sees half a file
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as handle:
            np.savez(handle, part=part, chunk=chunk)
        os.replace(tmp, path)
    return part, chunk
