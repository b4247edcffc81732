"""One DistDy experiment measured in this process: its graph, placements and counted epochs (``Stream``), and an epoch's
counted traffic and work priced for K stores with a device profile (``Simulator``; dygsched/engine/distdy/cluster.py)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dygsched.errors import ConfigError

if TYPE_CHECKING:
    from dygsched.data.partition.online import SnapshotPartition
    from dygsched.engine.distdy.cluster import StepCounts
    from dygsched.engine.run_config import RunConfig


class Stream:
    """One experiment's graph and what every partitioner and count needs of it, computed once: the
    run's typed configuration, DistDy's settings read from its own class (``DistDyConfig``)."""

    def __init__(self, run: RunConfig) -> None:
        from dygsched.data.loading import load_graph
        from dygsched.engine.distdy.config import DistDyConfig
        from dygsched.engine.distdy.placement import feature_segments, snapshot_graphs
        from dygsched.engine.distdy.sampler import InNeighbours
        from dygsched.engine.distdy.strategy import node_split

        self.run, self.sched = run, run.strategy_settings(DistDyConfig)
        self.graph = load_graph(run.dataset)  # DistDy partitions snapshots
        self.train, _, _ = node_split(self.graph.num_nodes, run.split.train, run.split.val, run.seed)
        sched = self.sched
        self.segments = feature_segments(sched.segments, self.graph.num_features)
        self.snapshot_graphs = snapshot_graphs(self.graph, self.train, sched.batch, sched.fanouts, self.segments)
        self.neighbours = [InNeighbours.of(s.edge_index.numpy(), self.graph.num_nodes) for s in self.graph.snapshots]

    @property
    def row_bytes(self) -> int:
        return self.graph.num_features * self.graph.snapshots[0].x.element_size()

    def options(self, **changes: float) -> dict[str, Any]:
        """``OnlinePartitioner``'s options as configured, with ``changes``."""
        sched = self.sched
        configured = {
            "eta": sched.eta,
            "budget": sched.budget,
            "clip_rewards": sched.clip_rewards,
            "message_weight": sched.message_weight,
            "fetch_weight": sched.fetch_weight,
        }
        return {key: changes.get(key, value) for key, value in configured.items()}

    def capacity(self, stores: int, factor: float | None = None) -> np.ndarray:
        """``D^k`` as configured (or at ``factor`` times the balanced window storage)."""
        from dygsched.data.partition.online import store_capacity

        sched, window = self.sched, self.run.window
        if factor is not None:
            return store_capacity(self.snapshot_graphs, window, stores, factor)
        return store_capacity(self.snapshot_graphs, window, stores, sched.capacity_factor, sched.capacity_bytes)

    def place(
        self, stores: int, method: str, factor: float | None = None, **changes: float
    ) -> tuple[list[SnapshotPartition], float, np.ndarray]:
        """Every snapshot's placement on ``stores`` stores, the seconds partitioning took, the capacities."""
        from dygsched.data.partition.online import partition_stream

        capacity, window = self.capacity(stores, factor), self.run.window
        options = self.options(**changes) if method == "distdy" else {}
        if method == "distdy":  # compiles the refinement (once per machine: numba caches it on disk), not timed
            partition_stream(method, self.snapshot_graphs[:1], stores, capacity, window, **options)
        start = time.perf_counter()
        parts = partition_stream(method, self.snapshot_graphs, stores, capacity, window, self.run.seed, **options)
        return parts, time.perf_counter() - start, capacity

    def balance(self, parts: Sequence[SnapshotPartition], stores: int) -> dict[str, float]:
        """Largest store over the mean, the worst step: the window's stored bytes, the newest snapshot's
        nodes and training targets (the targets whose temporal model a store's rank runs), and the
        expected sampled messages its encoders compute over the window."""
        window, worst = self.run.window, dict.fromkeys(("bytes", "nodes", "targets", "messages"), 0.0)
        training = np.zeros(self.graph.num_nodes, dtype=bool)
        training[self.train] = True
        for tau in range(window - 1, len(parts)):
            held = sum(p.stored_bytes for p in parts[tau - window + 1 : tau + 1])
            store = parts[tau].store
            nodes = np.bincount(store[store >= 0], minlength=stores)
            targets = np.bincount(store[(store >= 0) & training], minlength=stores)
            messages = np.zeros(stores)
            for t in range(tau - window + 1, tau + 1):  # a target's encoder runs where it lives in each snapshot
                on = (parts[t].store >= 0) & training & (store >= 0)
                expected = self.snapshot_graphs[t].messages
                assert expected is not None, "snapshot_graphs counts every snapshot's expected messages"
                messages += np.bincount(parts[t].store[on], weights=expected[on], minlength=stores)
            for name, per_store in (("bytes", held), ("nodes", nodes), ("targets", targets), ("messages", messages)):
                worst[name] = max(worst[name], float(np.max(per_store) / max(np.mean(per_store), 1e-12)))
        return {f"balance_{name}": value for name, value in worst.items()}

    def counts(self, placements: Sequence[SnapshotPartition], stores: int) -> list[StepCounts]:
        """The counts of one epoch's mini-batches on ``stores`` stores."""
        from dygsched.engine.distdy.cluster import epoch_counts

        run, sched = self.run, self.sched
        return epoch_counts(
            self.graph,
            placements,
            stores,
            self.train,
            run.window,
            sched.batch,
            sched.batches_per_step,
            sched.fanouts,
            run.seed,
            neighbours=self.neighbours,
        )


class Simulator:
    """Prices an epoch's counted traffic and work for K stores (see dygsched/engine/distdy/cluster.py),
    with the compute costs of a device profile (``cpu``: calibrated here; a GPU's: from its datasheet)."""

    def __init__(self, stream: Stream, profile: str) -> None:
        import torch

        from dygsched.engine.build import build_model
        from dygsched.engine.distdy.cluster import compute_cost
        from dygsched.models.sage_temporal import SAGETemporal

        run, graph = stream.run, stream.graph
        torch.manual_seed(run.seed)
        model = build_model(run.model, graph)
        if not isinstance(model, SAGETemporal):
            raise ConfigError(
                f"DistDy's simulator prices a sampled GraphSAGE encoder with a temporal model, not {type(model).__name__}: "
                "use model=sage_temporal"
            )
        self.profile = profile
        self.cost = compute_cost(profile, model, stream.neighbours[:1], graph.snapshots[0].x, stream.sched.fanouts, run.window)
        self.row_bytes = stream.row_bytes
        self.embedding_bytes = model.hidden_channels * 4
        self.parameter_bytes = sum(p.numel() * p.element_size() for p in model.parameters())

    def epoch(self, counts: Sequence[StepCounts], gbps: float) -> dict[str, float]:
        from dygsched.engine.distdy.cluster import Network, simulate_epoch

        return simulate_epoch(
            counts, self.cost, Network(gbps, latency_s=50e-6), self.row_bytes, self.embedding_bytes, self.parameter_bytes
        )
