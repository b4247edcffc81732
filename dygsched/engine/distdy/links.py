"""DistDy under ``task=link``: sampled pairs, their endpoints as target nodes, each pair scored by its source's holder.

The paper's training-node sampler draws node IDs from the newest snapshot ``tau``; their
structural embeddings are computed where each snapshot stores them and gathered at the worker
that holds the node at ``tau``, whose temporal model gives the node's representation, "fed to
downstream tasks" (section 2.1). Link prediction is such a task, on pairs. Here a mini-batch is
``batch`` pairs drawn from snapshot ``tau``'s ``links`` (the pairs of ``tau + 1``), each with this
epoch's training negatives (``LinkObjective.negatives_of``), and its target nodes are every node
those pairs read: sources, destinations and the negatives' destinations (PyG's
``LinkNeighborLoader`` chooses its seed nodes the same way). From the target IDs on, DistDy's
machinery is unchanged. A pair is scored by the rank that computed its source's representation;
the destination's row comes from the rank that computed it, by the node-partition layer's
differentiable row exchange (``PairRows``), and each rank's share of the loss is divided by the
mini-batch's pair count, so the shares add up to one process's loss of the same mini-batch.

A target absent from ``tau`` (an endpoint or a negative that appears later) has no holder at
``tau``: its representation is computed by the store that held it last in the window, or, absent
from the whole window (all its embeddings are zeros), by rank ``id mod K``. Where a
representation is computed does not change it, so the losses do not depend on the partition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from dygsched.data.temporal_graph import Snapshot, TemporalGraph
from dygsched.engine.link_objective import LinkObjective, LinkProtocol
from dygsched.engine.node_partition.pairs import PairRows, every_row
from dygsched.engine.strategy import IterationStats, MetricValue
from dygsched.engine.timing import Region

# a mini-batch's representations: the temporal model's output for the targets this rank is home
# to (in batch order), every target's home rank, and a zero that ties the loss to their exchange
Represented = tuple[torch.Tensor, np.ndarray, torch.Tensor]


def home_ranks(owners: np.ndarray, targets: np.ndarray, world_size: int) -> np.ndarray:
    """``[B]``: the rank that runs each target's temporal model. ``owners`` ``[w, B]``: each target's
    store in each snapshot of the window, oldest first (-1: absent); see the module docstring."""
    home = np.full(targets.size, -1, dtype=np.int64)
    for row in owners:  # oldest first: a later holder replaces an earlier one
        home = np.where(row >= 0, row, home)
    absent = home < 0
    home[absent] = targets[absent] % world_size
    return home


@dataclass(frozen=True)
class PairBatch:
    """One link mini-batch: ``targets``, the distinct nodes it reads (sorted); ``pairs`` ``[2, P]`` and
    ``negatives`` ``[k, P]`` (each pair's negative destinations), as positions in ``targets``."""

    targets: np.ndarray
    pairs: np.ndarray
    negatives: np.ndarray

    @classmethod
    def draw(cls, links: np.ndarray, negatives: np.ndarray, batch: int, seed: int, epoch: int, tau: int, b: int) -> PairBatch:
        """Up to ``batch`` of snapshot ``tau``'s ``links`` ``[2, P]`` (with their ``negatives`` ``[k, P]``),
        drawn from a generator seeded by the step: the same pairs whatever the partition."""
        count = links.shape[1]
        chosen = np.sort(np.random.default_rng([seed, epoch, tau, b, 47]).choice(count, size=min(batch, count), replace=False))
        picked, negative = links[:, chosen], negatives[:, chosen]
        targets, position = np.unique(np.concatenate([picked.reshape(-1), negative.reshape(-1)]), return_inverse=True)
        pairs = position[: picked.size].reshape(picked.shape)
        return cls(targets, pairs, position[picked.size :].reshape(negative.shape))

    @property
    def count(self) -> int:
        return int(self.pairs.shape[1])


def pair_plan(batch: PairBatch, home: np.ndarray, rank: int, world_size: int) -> PairRows:
    """What this rank sends and receives to score the pairs whose source it computed: ``home[i]``
    computed target ``i``, whose row here is its place among this rank's targets in batch order."""
    local = np.full(batch.targets.size, -1, dtype=np.int64)
    mine = np.flatnonzero(home == rank)
    local[mine] = np.arange(mine.size)
    return PairRows.plan(batch.pairs, batch.negatives, home, local, rank, world_size)


def evaluation_nodes(protocol: LinkProtocol, phase: str, last: Snapshot) -> np.ndarray:
    """Every node ``LinkEvaluation.add`` reads on ``last``: its pairs' endpoints and, under each
    sampler, its negatives' sources and destinations (the same seeded draws the evaluation makes)."""
    links = last.links
    assert links is not None, "a link graph's snapshots carry their links"
    read = [links.reshape(-1).cpu().numpy()]
    for sampler in protocol.samplers:
        sources, destinations = protocol.evaluation_negatives(phase, sampler, last)
        read.append(destinations.reshape(-1).numpy())
        if sources is not None:
            read.append(sources.reshape(-1).numpy())
    return np.unique(np.concatenate(read))


def pair_share(
    objective: LinkObjective,
    batch: PairBatch,
    represented: Represented,
    rank: int,
    world_size: int,
    stats: IterationStats,
    traffic: dict[str, Any],
) -> torch.Tensor:
    """This rank's share of ``batch``'s pair loss: the pairs whose source it computed, each
    destination's row fetched from the rank that computed it (timed as communication, its bytes
    counted as ``link_pair_rows``), divided by the mini-batch's pair count."""
    predictions, home, anchor = represented
    z = predictions.reshape(predictions.shape[0], -1)
    plan = pair_plan(batch, home, rank, world_size)
    exchanging = Region(z.device)
    rows = plan.rows(z)
    stats.add_time("comm_s", exchanging.stop())
    stats.add_bytes("link_pair_rows", plan.rows_sent * z.shape[1] * z.element_size())
    traffic["pairs"] += plan.mine.size
    device = z.device
    loss = objective.pair_loss(
        rows, plan.src_rows.to(device), plan.dst_rows.to(device), plan.negative_dst_rows.to(device), batch.count, 1.0
    )
    # the received rows join the loss on every rank (a zero where it scores no pair), so every
    # rank's backward runs the pair exchange's reverse all-to-all and the collectives pair up
    return loss + rows.sum() * 0.0 + anchor


def evaluate_pairs(
    objective: LinkObjective,
    phase: str,
    graph: TemporalGraph,
    taus: list[int],
    represent: Callable[[int, int, np.ndarray], Represented],
    chunk: int,
    rank: int,
    device: torch.device,
) -> Mapping[str, MetricValue]:
    """``LinkEvaluation`` of the groups ending at ``taus``: the representations of every node a
    group's pairs and negatives read (``represent(tau, start, nodes)``, ``chunk`` nodes at a time),
    gathered on every rank, which then scores every pair itself (the metrics are shared)."""
    evaluation = objective.phase_evaluation(phase)
    with torch.no_grad():
        for tau in taus:
            last = graph.snapshots[tau]
            nodes = evaluation_nodes(objective.protocol, phase, last)
            mine, rows = [], []
            for start in range(0, nodes.size, chunk):
                part = nodes[start : start + chunk]
                predictions, home, _ = represent(tau, start, part)
                mine.append(part[home == rank])
                rows.append(predictions.reshape(predictions.shape[0], -1))
            every = every_row(np.concatenate(mine), torch.cat(rows), graph.num_nodes)
            evaluation.add(every.to(device), last.to(device))
    return evaluation.metrics(shared=True)
