"""Which rank owns each vertex's node state: Sven's Re-FlexBiCut (section 3.1, Alg. 3) and its baselines.

A pre-sampling pass gives the bipartite trainer x vertex graph: ``demand[j, v]`` is how often trainer
``j`` needs vertex ``v`` (the training steps whose sampled series hold it). A trainer receives every
vertex it needs and does not own, so its *receive volume* is ``zeta_j = sum_{v not in W_j} demand[j, v]``
(in units of one vertex's N&M) and the balance cost of a partition is the largest, ``zeta = max_j zeta_j``.

Baselines: ``range`` (contiguous blocks of ids) and ``interval`` (``v mod M``).

``re_flexbicut`` follows Alg. 3: while vertices are unassigned, each trainer ``t_i`` in turn cuts the
unassigned vertices ``U`` between itself (source) and the other trainers (sink). In this bipartite
graph a vertex costs ``demand[i, v]`` on the sink side and ``sum_{j != i} demand[j, v]`` on the source
side, so the minimum cut puts on the source side exactly the vertices with
``gain = demand[i, v] - sum_{j != i} demand[j, v] > 0``; the approximate cut takes the best-ranked
of them, at most a round's quota. The vertices every trainer needs about equally (``gain <= 0``
for each: the overlap of lines 8-12) are left to the sink until no trainer's cut takes anything;
then each, the most needed first, goes where it lowers the balance cost ``max_j zeta_j`` most: to
the trainer with room that receives the most (the flexible reassignment). Hot vertices are thus
dealt out by what each trainer receives, not in blocks to whichever trainer cuts first. Every
part holds at most ``ceil((1 + capacity_slack) N / M)`` vertices: without a limit the cut gives
nearly everything to one trainer. Vertices nobody needs fill the parts with room, smallest first.

``partition_vertices`` runs the requested method and, for ``reflexbicut``, falls back to the better
baseline if the cut's balance cost is worse, saying so in ``note``. Numpy and scipy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from dygsched.data.partition import names, partitioner
from dygsched.errors import ConfigError

if TYPE_CHECKING:
    from scipy.sparse import spmatrix

Demand: TypeAlias = "np.ndarray | spmatrix"  # [trainers, vertices]: dense, or a SciPy sparse matrix


@dataclass(frozen=True)
class VertexPartition:
    """Each vertex's owner, with the receive volumes it gives the trainers."""

    owner: np.ndarray  # [N] int64, the owning rank of each vertex
    method: str  # the method asked for
    used: str  # the method whose partition this is (a fallback baseline, or the method asked for)
    note: str  # why a fallback was used ('' when none was)
    receive_volumes: np.ndarray  # [M] zeta_j
    part_sizes: np.ndarray  # [M] vertices owned per rank

    @property
    def largest_receive_volume(self) -> float:
        return float(self.receive_volumes.max()) if self.receive_volumes.size else 0.0


def _dense(demand: Demand) -> np.ndarray:
    matrix = demand.toarray() if hasattr(demand, "toarray") else np.asarray(demand)
    if matrix.ndim != 2 or matrix.shape[0] < 1:
        raise ConfigError(f"the demand matrix must be [ranks, vertices], got shape {matrix.shape}")
    matrix = matrix.astype(np.float64, copy=False)
    if not np.isfinite(matrix).all() or (matrix < 0).any():
        raise ConfigError("the demand matrix must hold finite, non-negative counts")
    return matrix


def interval_partition(num_vertices: int, num_ranks: int) -> np.ndarray:
    return np.arange(num_vertices, dtype=np.int64) % num_ranks


def range_partition(num_vertices: int, num_ranks: int) -> np.ndarray:
    """Contiguous id blocks whose sizes differ by at most one."""
    return (np.arange(num_vertices, dtype=np.int64) * num_ranks) // max(num_vertices, 1)


def interval_owner(demand: np.ndarray, capacity_slack: float = 0.1) -> np.ndarray:
    """The ``interval`` baseline on a ``[ranks, vertices]`` demand matrix (its shape is all it reads)."""
    return interval_partition(demand.shape[1], demand.shape[0])


def range_owner(demand: np.ndarray, capacity_slack: float = 0.1) -> np.ndarray:
    """The ``range`` baseline on a ``[ranks, vertices]`` demand matrix (its shape is all it reads)."""
    return range_partition(demand.shape[1], demand.shape[0])


def receive_volumes(demand: Demand, owner: np.ndarray) -> np.ndarray:
    """``zeta_j``: what trainer ``j`` needs and does not own."""
    matrix = _dense(demand)
    owned = np.zeros_like(matrix, dtype=bool)
    owned[owner, np.arange(owner.size)] = True
    return np.where(owned, 0.0, matrix).sum(axis=1)


def link_balance(pairs: np.ndarray) -> dict[str, np.ndarray]:
    """Per step, the balance of one all-to-all as section 5.4 measures it (Equation 2).

    ``pairs [steps, M, M]``: ``C[s, i, j]``, the N&M rows trainer ``i`` receives from trainer ``j``
    in step ``s`` (the diagonal, a trainer's own rows, is no link and is ignored). The residual
    ``R = max(C) J - C`` is how far each link is below the slowest one. Returns, per step,
    ``balance_cost`` (the largest residual: the slowest link minus the fastest), ``slowest_link``
    (``max C``, what the all-to-all waits for) and ``mean_residual``."""
    steps, ranks, _ = pairs.shape
    if ranks < 2:
        raise ConfigError("link balance needs at least 2 trainers")
    links = pairs[:, ~np.eye(ranks, dtype=bool)].astype(np.float64)
    slowest = links.max(axis=1)
    return {
        "balance_cost": slowest - links.min(axis=1),
        "slowest_link": slowest,
        "mean_residual": (slowest[:, None] - links).mean(axis=1),
    }


def capacity(num_vertices: int, num_ranks: int, capacity_slack: float) -> int:
    return max(1, math.ceil((1.0 + capacity_slack) * num_vertices / num_ranks))


def re_flexbicut(demand: Demand, capacity_slack: float = 0.1, rounds: int = 8) -> np.ndarray:
    """Alg. 3 under the capacity limit; returns each vertex's owner."""
    matrix = _dense(demand)
    num_ranks, num_vertices = matrix.shape
    limit = capacity(num_vertices, num_ranks, capacity_slack)
    total = matrix.sum(axis=0)
    owner = np.full(num_vertices, -1, dtype=np.int64)
    sizes = np.zeros(num_ranks, dtype=np.int64)
    zeta = matrix.sum(axis=1)  # nothing owned yet: every trainer receives all it needs
    unassigned = np.flatnonzero(total > 0)
    quota = max(1, math.ceil(unassigned.size / (num_ranks * rounds)))

    while unassigned.size:
        progressed = False
        for trainer in range(num_ranks):
            room = limit - sizes[trainer]
            if room <= 0 or not unassigned.size:
                continue
            wanted = matrix[trainer, unassigned]
            gain = wanted - (total[unassigned] - wanted)  # the cut's cost of the sink side minus the source side
            candidates = np.flatnonzero((wanted > 0) & (gain > 0))
            if not candidates.size:
                continue
            order = candidates[np.lexsort((-wanted[candidates], -gain[candidates]))]
            taken = order[: min(quota, room)]
            if not taken.size:
                continue
            vertices = unassigned[taken]
            owner[vertices] = trainer
            sizes[trainer] += vertices.size
            zeta[trainer] -= matrix[trainer, vertices].sum()
            unassigned = np.delete(unassigned, taken)
            progressed = True
        if not progressed:
            # Every trainer left the rest to the others (vertices all of them need about equally),
            # or has no room for what it needs. Each remaining vertex, the most needed first, goes
            # where it lowers the balance cost zeta(W) = max_j zeta_j most: to the trainer with room
            # that receives the most now (among those that need it; ties: the one needing it most).
            for vertex in unassigned[np.argsort(-total[unassigned], kind="stable")]:
                needs = matrix[:, vertex]
                open_ = sizes < limit
                eligible = open_ & (needs > 0) if (open_ & (needs > 0)).any() else open_
                chosen = int(np.lexsort((-needs, -np.where(eligible, zeta, -np.inf)))[0])
                owner[vertex] = chosen
                sizes[chosen] += 1
                zeta[chosen] -= needs[chosen]
            unassigned = unassigned[:0]

    for vertex in np.flatnonzero(owner < 0):
        chosen = int(np.argmin(sizes))
        owner[vertex] = chosen
        sizes[chosen] += 1
    return owner


def partition_vertices(method: str, demand: Demand, capacity_slack: float = 0.1, seed: int = 0) -> VertexPartition:
    """The partition ``method`` asks for; ``reflexbicut`` falls back to the better baseline when its
    largest receive volume is higher. ``seed`` is accepted for a uniform signature (every method here
    is deterministic)."""
    del seed
    entry = partitioner("vertex", method)
    if capacity_slack < 0:
        raise ConfigError(f"the capacity slack must be 0 or more, got {capacity_slack}")
    matrix = _dense(demand)
    num_ranks = matrix.shape[0]
    owner, note, used = entry.load()(matrix, capacity_slack), "", method
    if not entry.baseline:  # Re-FlexBiCut: no worse than the better baseline
        volume = receive_volumes(matrix, owner).max(initial=0.0)
        baselines = {name: partitioner("vertex", name).load()(matrix, capacity_slack) for name in names("vertex", baseline=True)}
        largest = {name: receive_volumes(matrix, baseline).max(initial=0.0) for name, baseline in baselines.items()}
        best = min(largest, key=largest.__getitem__)
        best_volume = largest[best]
        if best_volume < volume:
            note = f"Re-FlexBiCut's largest receive volume {volume:g} is above {best}'s {best_volume:g}: {best} is used"
            owner, used = baselines[best], best
    return VertexPartition(
        owner=owner,
        method=method,
        used=used,
        note=note,
        receive_volumes=receive_volumes(matrix, owner),
        part_sizes=np.bincount(owner, minlength=num_ranks),
    )
