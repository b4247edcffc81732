"""The price of FlareDTDG: node-partitioned windows, halo exchanges, decayed history.

On ``W`` ranks every rank owns a part of the nodes (the strategy's own partitioner, cut into its
chunks); a training step is one window, each rank computing on its part: the ``K`` newest
snapshots in full (its owned rows, the halo rows its edges read, and every edge into its nodes, as
``PartitionedSnapshot.full`` builds them) and the older ones decayed to the nodes of its first
``N_j`` chunks in the epoch's survival order (``decay_counts``, ``chunk_survival``) and the edges
among them (``PartitionedSnapshot.prefix``). The step lasts as long as the busiest rank's work,
priced by FlareDTDG's own cost curve (``t = a1 * nodes + a2 * edges + a3``, fitted on the profiled
windows on one rank, whose features are counted the same way), plus its halo exchanges: per full
block, one all-to-all per layer that reads computed rows (the input features' halo rows are held
locally) and its reverse in the backward, each rank sending the rows its peers' halos need (the
exchange's ``send_index``), plus the optimizer step and the gradient all-reduce. With
``overlap`` on, a layer's exchanges are posted before the decayed blocks are computed, so they hide
behind that much of the busiest rank's work. Each epoch also renumbers every rank's nodes once
(``start_epoch``), measured on one rank and shared out over ``W``.

Memory: FlareDTDG's peak per step against its features, at the busiest rank's window. Nothing here
trains; the counts are numpy over the partition.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dygsched.advise.pricing import DECAYED, EXACT, Prediction, Target, exposed, step_cost
from dygsched.advise.profile import Profile, time_curve
from dygsched.advise.snapshot_groups import memory_of, peak_memory
from dygsched.data.groups import SnapshotGroup
from dygsched.data.partition.nodes import NodePartition, partition_nodes
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.engine.flare.config import FlareConfig
from dygsched.engine.flare.decay import decay_counts
from dygsched.engine.flare.strategy import FlareStrategy, chunk_survival
from dygsched.engine.objective import build_split
from dygsched.engine.run_config import RunConfig


@dataclass(frozen=True)
class WindowWork:
    """One window on each of ``W`` ranks: the nodes and edges it computes (``nodes``, ``edges``),
    the halo rows it receives and sends per exchange summed over its full blocks (``received``,
    ``sent``), the decayed blocks' share of its work (``decayed``), and its full blocks."""

    nodes: np.ndarray
    edges: np.ndarray
    received: np.ndarray
    sent: np.ndarray
    decayed: np.ndarray
    full_blocks: int


class Counter:
    """Per-rank counts of every snapshot under one partition, for one epoch's survival order."""

    def __init__(self, graph: TemporalGraph, partition: NodePartition, config: FlareConfig, seed: int, epoch: int = 0) -> None:
        self.graph, self.partition, self.config = graph, partition, config
        ranks = partition.num_parts
        self.ranks = ranks
        self.owned = np.bincount(partition.part, minlength=ranks).astype(float)
        survival = np.stack([chunk_survival(seed, epoch, r, config.chunks) for r in range(ranks)])
        self.place = survival[partition.part, partition.chunk]  # each node's chunk's place in its rank's order
        self._full: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        self._decayed: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

    def full(self, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Snapshot ``t`` in full on every rank: (nodes, edges, halo rows received, rows sent)."""
        if t not in self._full:
            part, n = self.partition.part, self.graph.num_nodes
            src, dst = self.graph.snapshots[t].edge_index.numpy()
            into = np.bincount(part[dst], minlength=self.ranks).astype(float)
            cross = part[src] != part[dst]
            pairs = np.unique(part[dst[cross]].astype(np.int64) * n + src[cross]) if cross.any() else np.zeros(0, np.int64)
            received = np.bincount(pairs // n, minlength=self.ranks).astype(float)  # halo rows, by receiving rank
            sent = np.bincount(part[pairs % n], minlength=self.ranks).astype(float)  # the same rows, by owner
            # owned rows and halo rows; edges into owned nodes and each halo row's degree loop
            self._full[t] = (self.owned + received, into + received, received, sent)
        return self._full[t]

    def decayed(self, t: int, keep: int) -> tuple[np.ndarray, np.ndarray]:
        """Snapshot ``t`` decayed to each rank's first ``keep`` chunks: (nodes, edges among them)."""
        key = (t, keep)
        if key not in self._decayed:
            part = self.partition.part
            kept = self.place < keep
            nodes = np.bincount(part[kept], minlength=self.ranks).astype(float)
            src, dst = self.graph.snapshots[t].edge_index.numpy()
            inner = (part[src] == part[dst]) & kept[src] & kept[dst]
            edges = np.bincount(part[dst[inner]], minlength=self.ranks).astype(float)
            self._decayed[key] = (nodes, edges)
        return self._decayed[key]

    def window(self, group: SnapshotGroup, full: int, counts: Sequence[int]) -> WindowWork:
        """The window's blocks as ``FlareStrategy.blocks`` lays them out: the older ``window - full``
        decayed (block ``j`` from the newest keeping ``counts[j]`` chunks), the newest ``full`` in full."""
        zeros = np.zeros(self.ranks)
        nodes, edges, received, sent, decayed = zeros.copy(), zeros.copy(), zeros.copy(), zeros.copy(), zeros.copy()
        old = group.size - full
        blocks = 0
        for position, t in enumerate(range(group.start, group.stop)):
            if position < old:
                keep = counts[old - position - 1]
                if keep == 0:
                    continue
                n, e = self.decayed(t, keep)
                nodes, edges, decayed = nodes + n, edges + e, decayed + n + e
            else:
                n, e, r, s = self.full(t)
                nodes, edges, received, sent = nodes + n, edges + e, received + r, sent + s
                blocks += 1
        return WindowWork(nodes, edges, received, sent, decayed, blocks)


def windows(graph: TemporalGraph, settings: RunConfig) -> tuple[SnapshotGroup, ...]:
    return build_split(graph, settings).train


def counter_for(graph: TemporalGraph, strategy: FlareStrategy, settings: RunConfig, ranks: int) -> Counter:
    """The partition the strategy would make on ``ranks`` ranks, counted."""
    config = strategy.config
    train_stop = windows(graph, settings)[-1].stop
    partition = partition_nodes(graph, range(train_stop), ranks, config.chunks, config.partition, settings.seed)
    return Counter(graph, partition, config, settings.seed)


def price(
    case_name: str, strategy: FlareStrategy, graph: TemporalGraph, settings: RunConfig, profile: Profile, target: Target
) -> Prediction:
    """FlareDTDG on ``target`` (see the module docstring)."""
    from dygsched.advise.cases import FLARE

    config = strategy.config
    ranks = target.gpus
    counter = counter_for(graph, strategy, settings, ranks)
    counts = decay_counts(config.schedule, config.chunks, settings.window - config.full, config.alpha)
    threads = target.threads
    step = step_cost(profile, target)
    samples = profile.of(FLARE, threads)
    curve = time_curve(samples, profile.step_s(threads))
    kernels = profile.kernels(FLARE)
    row_bytes = profile.fact("halo_row_bytes", 0.0)  # one halo row over every exchange of a full block
    exchanges = int(profile.fact("halo_exchanges", 0.0))  # all-to-alls per full block, each way
    rank_sums = int(profile.fact("rank_sums", 0.0))  # sums over ranks per full block (batch norms' statistics)
    compute = communication = halo_bytes = 0.0
    largest = (0.0, 0.0)
    groups = windows(graph, settings)
    for group in groups:
        work = counter.window(group, config.full, counts)
        seconds = np.array([curve(n, e) for n, e in zip(work.nodes, work.edges)])
        busiest = int(np.argmax(seconds))
        slowest = target.compute(float(seconds[busiest]), kernels)
        compute += slowest
        if ranks > 1:
            rows = float(np.maximum(work.received, work.sent).max())  # the busiest rank's rows, every full block
            one_way = target.link.all_to_all_s(rows * row_bytes, ranks, calls=work.full_blocks * exchanges)
            sums = work.full_blocks * rank_sums * target.link.all_reduce_s(8.0, ranks)
            if config.overlap != "none":  # the forward's exchanges are posted before the decayed blocks run
                share = float(work.decayed[busiest] / max(work.nodes[busiest] + work.edges[busiest], 1.0))
                communication += exposed(one_way, slowest * share) + one_way + sums
            else:
                communication += 2 * one_way + sums
            halo_bytes += 2 * float(work.sent.sum()) * row_bytes  # rows forward, their gradients back
        if work.nodes[busiest] + work.edges[busiest] > sum(largest):
            largest = (float(work.nodes[busiest]), float(work.edges[busiest]))
    steps = len(groups)
    epoch_start = target.compute(profile.fact("flare_epoch_start_s", 0.0)) / ranks
    traffic = {"halo": halo_bytes, "allreduce": steps * ranks * step.allreduce_bytes} if ranks > 1 else {}
    memory = memory_of(profile, FLARE, samples, target)
    full_history = config.full >= settings.window
    return Prediction(
        strategy=case_name,
        family=FLARE,
        gpus=ranks,
        epoch_time_s=compute + communication + steps * step.total_s + epoch_start,
        compute_s=compute + epoch_start,
        communication_s=communication + steps * step.communication_s,
        overhead_s=steps * step.optimizer_s,
        steps=steps,
        peak_memory_bytes=peak_memory(profile, memory, target, *largest),
        traffic=traffic,
        training=EXACT if full_history else DECAYED,
        exact=full_history,
        terms=f"{counter.partition.method} partition (edge cut {counter.partition.edge_cut}), "
        f"{exchanges} halo exchange(s) each way per full block; window curve R^2 {curve.r2:.2f}",
    )


def window_features(counter: Counter, group: SnapshotGroup, config: FlareConfig, window: int) -> tuple[float, float]:
    """Rank 0's (nodes, edges) of ``group``'s window: a profiled step's features (one rank)."""
    counts = decay_counts(config.schedule, config.chunks, window - config.full, config.alpha)
    work = counter.window(group, config.full, counts)
    return float(work.nodes[0]), float(work.edges[0])
