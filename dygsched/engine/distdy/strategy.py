"""DistDy (Zhang and Wu): online partitioning of a growing dynamic graph, additive stores, sampled training.

Snapshots arrive one per step. At step ``tau`` rank 0 places snapshot ``tau``'s nodes on the ``K``
stores (one per rank) with the configured partitioner (``dygsched.data.partition.online``:
DistDy's Algorithms 1-3, or a baseline) and every rank adds its share to its own additive store
(``dygsched.data.additive_store``); then the window ``[tau - w + 1, tau]`` trains
``batches_per_step`` mini-batches (section 3.1):

* the targets are ``batch`` training nodes (a ``train`` share of all nodes) of snapshot ``tau``,
  drawn from a generator seeded by the step, and the same nodes are targets in every snapshot of
  the window;
* in snapshot ``t`` the rank whose store holds target ``v`` samples its neighbourhood
  (``sampler``: GraphSAGE fan-outs, keyed so a node's sample does not depend on which rank draws
  it), fetches the features of the sampled nodes held elsewhere from their stores
  (``bytes_feature_fetch``, per rank pair) and computes ``v``'s structural embedding;
* the rank holding ``v`` at ``tau`` gathers its ``w`` embeddings (zeros where ``v`` is absent)
  (``bytes_embedding``), runs the temporal model and the loss; every exchange is differentiable,
  and the gradients are summed over ranks (the paper's parameter server becomes an all-reduce).

What is trained does not depend on the partition: every partitioner gives the same losses (tested
on 2 ranks). Two loops (``loop``): ``epochs`` replays every step in order each epoch, the
placements of the first kept (the partitioner's decisions do not depend on training); ``online`` is
the paper's: each window trains ``epochs_per_window`` epochs as its newest snapshot arrives, so
the run's epochs walk the stream once. Placements and prices are in the checkpoint.
Evaluation: the validation and test nodes of the newest snapshot trained on (the last one at the
end of a run), with its window, summed over ranks.

``task=link`` (``dygsched.engine.distdy.links``): the steps are the windows of the training groups
(split by time, as every snapshot strategy's), a mini-batch's targets are the nodes its sampled
pairs read, and each pair is scored by the rank holding its source; evaluation scores every
validation or test group's pairs (``LinkEvaluation``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from dygsched.data.additive_store import EDGE_BYTES, GraphStore
from dygsched.data.kinds import DynamicData
from dygsched.data.link_targets import links_of
from dygsched.data.partition.online import (
    CapacityError,
    OnlinePartitioner,
    over_capacity,
    partition_stream,
    smallest_feasible_factor,
    store_capacity,
)
from dygsched.data.partition.online_baselines import baseline_partitions
from dygsched.data.partition.snapshot_graph import SnapshotGraph, SnapshotPartition
from dygsched.data.temporal_graph import Task, TemporalGraph
from dygsched.engine import comm
from dygsched.engine.distdy.config import DistDyConfig
from dygsched.engine.distdy.features import fetch_features
from dygsched.engine.distdy.links import PairBatch, evaluate_pairs, home_ranks, pair_share
from dygsched.engine.distdy.placement import PAPER_SEGMENTS, feature_segments, sampled_targets, snapshot_graphs
from dygsched.engine.distdy.sampler import InNeighbours, sample_key, sample_neighbourhood, step_targets
from dygsched.engine.link_objective import LinkObjective
from dygsched.engine.node_partition.exchange import exchange_counts, exchange_rows
from dygsched.engine.objective import build_split, check_task, group_objective
from dygsched.engine.run_config import RunConfig
from dygsched.engine.strategy import Epoch, IterationStats, MetricValue, RunContext, Strategy, broadcast_from_rank0
from dygsched.engine.timing import HOST, Region, timed
from dygsched.errors import ConfigError

if TYPE_CHECKING:
    from dygsched.models.dgnn import DGNN
    from dygsched.models.sage_temporal import SampledModel

log = logging.getLogger("dygsched")


def node_split(num_nodes: int, train: float, val: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Training, validation and test nodes: a seeded permutation cut by the run's split fractions."""
    order = np.random.default_rng([seed, 41]).permutation(num_nodes)
    a, b = int(round(num_nodes * train)), int(round(num_nodes * (train + val)))
    return np.sort(order[:a]), np.sort(order[a:b]), np.sort(order[b:])


class DistDyStrategy(Strategy):
    """DistDy's online partitioning, additive stores and sampled training (see the module docstring)."""

    data_kind = TemporalGraph
    exact = False  # sampled mini-batches: not the group objective of the contract's reference
    predicts_links = True  # task=link: sampled pairs, each scored by its source's holder (distdy.links)
    communicates_in_backward = True  # halo/row all-to-alls inside backward: no overlapped gradient buckets

    def __init__(self, config: DistDyConfig) -> None:
        super().__init__(config)
        self.config: DistDyConfig = config
        self.placements: list[SnapshotPartition] = []
        self._store: GraphStore | None = None
        self._baseline: list[SnapshotPartition] | None = None
        self._last_held: dict[int, tuple[np.ndarray, np.ndarray]] | None = None  # the window trained last
        self._held_step = -1
        self._last_epoch = -1
        self.loss: LinkObjective | None = None  # task=link: the pair objective (its decoder trains with the model)
        self._evaluation_held: dict[int, tuple[np.ndarray, np.ndarray]] | None = None  # task=link: val/test windows

    # ---- before any rank starts -------------------------------------------------------------------
    def check(self, data: DynamicData, settings: RunConfig, world_size: int) -> None:
        super().check(data, settings, world_size)
        assert isinstance(data, TemporalGraph)
        if settings.window > data.num_snapshots:
            raise ConfigError(f"window ({settings.window}) is larger than the number of snapshots ({data.num_snapshots})")
        if world_size > data.num_nodes:
            raise ConfigError(f"{world_size} stores are more than the graph's {data.num_nodes} nodes")
        if self.config.segments is not None and self.config.segments > data.num_features:
            raise ConfigError(f"sched.segments={self.config.segments} is more than the {data.num_features} feature columns")
        self._window = settings.window
        if data.task is Task.LINK:
            check_task(data, build_split(data, settings), settings)
        if self.config.partition == "distdy":
            self._check_capacity(data, settings, world_size)
        windows = len(self.steps(data, settings))
        if self.config.loop == "online" and settings.epochs != windows * self.config.epochs_per_window:
            raise ConfigError(
                f"sched.loop=online trains {self.config.epochs_per_window} epoch(s) on each of the {windows} windows "
                f"as their snapshots arrive: set epochs={windows * self.config.epochs_per_window} (or sched.epochs_per_window)"
            )

    def _segments(self, num_features: int) -> int:
        return feature_segments(self.config.segments, num_features)

    def steps(self, data: TemporalGraph, settings: RunConfig) -> list[int]:
        """Every window's newest snapshot, in order: every window of the stream, or under ``task=link``
        the training groups' (the later groups are validation and test, split by time)."""
        if data.task is Task.LINK:
            return [group.stop - 1 for group in build_split(data, settings).train]
        return list(range(settings.window - 1, data.num_snapshots))

    def _snapshot_graphs(self, graph: TemporalGraph, settings: RunConfig) -> list[SnapshotGraph]:
        train = node_split(graph.num_nodes, settings.split.train, settings.split.val, settings.seed)[0]
        targets, batch = sampled_targets(graph, train, self.config.batch, settings.link.negatives)
        return snapshot_graphs(graph, targets, batch, self.config.fanouts, self._segments(graph.num_features))

    def _capacity(self, snapshots: Sequence[SnapshotGraph], window: int, stores: int) -> np.ndarray:
        return store_capacity(snapshots, window, stores, self.config.capacity_factor, self.config.capacity_bytes)

    def _partitioner_options(self) -> dict[str, Any]:
        c = self.config
        return {
            "eta": c.eta,
            "budget": c.budget,
            "clip_rewards": c.clip_rewards,
            "message_weight": c.message_weight,
            "fetch_weight": c.fetch_weight,
        }

    def _check_capacity(self, data: TemporalGraph, settings: RunConfig, world_size: int) -> None:
        """Algorithms 1-3 over the whole stream (they are causal and do not depend on training): a capacity
        at which Algorithm 1 cannot place some snapshot is refused with the smallest one that works."""
        snapshots = self._snapshot_graphs(data, settings)
        options = self._partitioner_options()
        capacity = self._capacity(snapshots, settings.window, world_size)
        try:
            partition_stream("distdy", snapshots, world_size, capacity, settings.window, **options)
        except CapacityError:
            factor = smallest_feasible_factor(snapshots, settings.window, world_size, **options)
            smallest = store_capacity(snapshots, settings.window, world_size, factor)[0]
            given = (
                f"sched.capacity_bytes={self.config.capacity_bytes:.0f}"
                if self.config.capacity_bytes is not None
                else f"sched.capacity_factor={self.config.capacity_factor:g}"
            )
            raise ConfigError(
                f"{given} is too small for Algorithm 1 to place every snapshot on {world_size} stores: the smallest "
                f"feasible capacity is sched.capacity_factor={factor:g} ({smallest:.0f} bytes per store)"
            ) from None

    def check_model(self, model: nn.Module) -> None:
        if not (hasattr(model, "encode") and hasattr(model, "predict") and hasattr(model, "convs")):
            raise ConfigError(
                f"sched={self.name} trains a sampled GraphSAGE encoder with a temporal model: use model=sage_temporal"
            )
        sampled = cast("SampledModel", model)  # it has what DistDy uses (just checked)
        if len(sampled.convs) != len(self.config.fanouts):
            raise ConfigError(
                f"sched.fanouts has {len(self.config.fanouts)} entries for a model of {len(sampled.convs)} layers: one per layer"
            )
        window = getattr(self, "_window", None)
        if window is not None and sampled.window != window:
            raise ConfigError(f"the model reads {sampled.window} snapshots, the run's window is {window}")

    # ---- on every rank ------------------------------------------------------------------------------
    def setup(self, run: RunContext) -> None:
        assert isinstance(run.data, TemporalGraph)
        graph = self.graph = run.data
        self.settings, self.rank, self.world_size, self.device = run.settings, run.rank, run.world_size, run.device
        self.window = run.settings.window
        self.train_nodes, self.val_nodes, self.test_nodes = node_split(
            graph.num_nodes, run.settings.split.train, run.settings.split.val, run.settings.seed
        )
        self.num_segments = self._segments(graph.num_features)
        if self.config.segments is None and self.rank == 0:
            log.info(
                "dygsched: sched.segments=%d (the paper's %d, at most the %d feature columns)",
                self.num_segments,
                PAPER_SEGMENTS,
                graph.num_features,
            )
        self.snapshots = self._snapshot_graphs(graph, run.settings)
        self.training_steps = self.steps(graph, run.settings)
        self.split = build_split(graph, run.settings) if graph.task is Task.LINK else None
        self.neighbours = [InNeighbours.of(s.edge_index.numpy(), graph.num_nodes) for s in graph.snapshots]
        self.capacity = self._capacity(self.snapshots, self.window, run.world_size)
        self.online = OnlinePartitioner(run.world_size, self.capacity, self.window, **self._partitioner_options())

    def objective(self, model: nn.Module) -> nn.Module:
        self.check_model(model)
        self.model = cast("SampledModel", model)
        if self.split is None:
            return model
        # the link objective's pair loss, negatives, decoder and evaluation; never its forward (which
        # runs a DGNN on whole snapshots): DistDy computes the representations it scores
        self.loss = cast(LinkObjective, group_objective(cast("DGNN", model), self.graph, self.split, self.settings))
        return self.loss

    def place(self, tau: int) -> tuple[SnapshotPartition, float]:
        """Snapshot ``tau``'s placement: rank 0 partitions each snapshot as it arrives, in order, and every
        rank receives it. Returns it and the seconds placing it took (0 when it was placed before); every
        earlier one is in ``placements`` (set up as rank 0 of N ranks outside a process group: N stores')."""
        seconds = 0.0
        while len(self.placements) <= tau:
            t = len(self.placements)
            start = time.perf_counter()
            placement = None
            if self.rank == 0:
                if self.config.partition == "distdy":
                    placement = self.online.partition(t, self.snapshots[t])
                else:  # a baseline sees every snapshot at once (METIS on the aggregate graph needs them)
                    if self._baseline is None:
                        self._baseline = baseline_partitions(
                            self.config.partition, self.snapshots, self.world_size, self.settings.seed
                        )
                    placement = self._baseline[t]
            self.placements.append(broadcast_from_rank0(placement))
            seconds += time.perf_counter() - start
        return self.placements[tau], seconds

    # ---- one epoch ---------------------------------------------------------------------------------------
    def windows(self, epoch_index: int) -> list[int]:
        """The steps (each window's latest snapshot) epoch ``epoch_index`` trains, in order."""
        if self.config.loop == "epochs":
            return list(self.training_steps)
        return [self.training_steps[epoch_index // self.config.epochs_per_window]]

    def run_epoch(self, epoch: Epoch) -> Mapping[str, MetricValue]:
        steps = self.windows(epoch.index)
        if self.config.loop == "epochs" or self._store is None or self._store.snapshots[-1:] > steps[-1:]:
            self._store = self._new_store()
        store = self._store
        clock = dict.fromkeys(("partition", "store", "reconstruct"), 0.0)
        traffic = self._no_traffic()
        cut, iteration, held = [], 0, None
        if self.loss is not None:
            self.loss.start_epoch(epoch.index)  # this epoch's training negatives
        batch_loss = self.batch_loss if self.loss is None else self.pair_batch_loss
        epoch.expect_steps(len(steps) * self.config.batches_per_step, "batch")
        for tau in steps:
            while not store.snapshots or store.snapshots[-1] < tau:  # the snapshots that arrived up to tau
                t = store.snapshots[-1] + 1 if store.snapshots else 0
                placement, seconds = self.place(t)
                clock["partition"] += seconds
                cut.append(placement.cut_edges)
                start = time.perf_counter()
                self._add_snapshot(store, t, placement)
                clock["store"] += time.perf_counter() - start
            start = time.perf_counter()
            held = {t: store.features(t) for t in range(tau - self.window + 1, tau + 1)}  # what the training reads
            clock["reconstruct"] += time.perf_counter() - start
            for b in range(self.config.batches_per_step):
                stats = IterationStats(iteration=iteration, units=1 if self.rank == 0 else 0)
                with timed(self.device) as step:
                    loss = batch_loss(epoch.index, tau, b, held, traffic, stats)
                    epoch.backward(loss, final=True)
                stats.add_loss(loss)
                stats.busy_from(step)
                epoch.finish_iteration(stats)
                iteration += 1
        self._last_held, self._held_step = held, steps[-1]
        self._last_epoch = epoch.index
        held_bytes = store.nbytes()
        full_bytes = sum(self._full_bytes(t) for t in store.snapshots)
        metrics: dict[str, MetricValue] = {
            "store_bytes": float(sum(held_bytes.values())),
            "store_feature_bytes": float(held_bytes["features_full"] + held_bytes["features_additive"]),
            "store_full_snapshot_bytes": float(full_bytes),
            "store_s": clock["store"],
            "reconstruct_s": clock["reconstruct"],
            "feature_fetch_in_bytes": float(traffic["fetch_in"].sum()),
            "feature_fetch_out_bytes": float(traffic["fetch_out"].sum()),
            "encoder_messages": float(traffic["messages"]),
            "temporal_targets": float(traffic["targets"]),
            "store_nodes": float(np.count_nonzero(self.placements[steps[-1]].store == self.rank)),
            "window_end": float(steps[-1]),
        }
        if cut:
            metrics["partition_cut_edges"] = float(np.mean(cut))
        if self.loss is not None:
            metrics["scored_pairs"] = float(traffic["pairs"])
        for q in range(self.world_size):
            metrics[f"feature_fetch_from_rank{q}_bytes"] = float(traffic["fetch_in"][q])
            metrics[f"feature_fetch_to_rank{q}_bytes"] = float(traffic["fetch_out"][q])
        if self.rank == 0 and clock["partition"] > 0:
            metrics["partition_s"] = clock["partition"]
        if self.rank == 0:  # a baseline ignores D^k: the snapshots at which a store would exceed it (out of memory)
            metrics["over_capacity_snapshots"] = float(
                len(over_capacity(self.placements[: steps[-1] + 1], self.capacity, self.window))
            )
        return metrics

    def _full_bytes(self, t: int) -> int:
        """What this rank's share of snapshot ``t`` takes stored whole: its nodes' rows and incident edges."""
        mine = np.flatnonzero(self.placements[t].store == self.rank)
        edges = self.graph.snapshots[t].edge_index.numpy()
        incident = int(np.count_nonzero(np.isin(edges, mine).any(axis=0)))
        return mine.size * self.snapshots[t].full_bytes + incident * EDGE_BYTES

    # ---- one mini-batch ------------------------------------------------------------------------------
    def targets(self, epoch: int, tau: int, b: int, nodes: np.ndarray) -> np.ndarray:
        return step_targets(
            self.graph.snapshots[tau].node_mask.numpy(), nodes, self.config.batch, self.settings.seed, epoch, tau, b
        )

    def batch_loss(
        self,
        epoch_index: int,
        tau: int,
        b: int,
        held: Mapping[int, tuple[np.ndarray, np.ndarray]],
        traffic: dict[str, Any],
        stats: IterationStats,
        targets: np.ndarray | None = None,
    ) -> torch.Tensor:
        """This rank's share of the mean loss over the batch's targets (the shares add up to it)."""
        targets = self.targets(epoch_index, tau, b, self.train_nodes) if targets is None else targets
        predictions, home, anchor = self.representations(epoch_index, tau, b, held, traffic, stats, targets)
        mine = targets[home == self.rank]
        y = self.graph.snapshots[tau].y[torch.from_numpy(mine)].to(self.device)
        losses = (
            F.mse_loss(predictions, y, reduction="none")
            if predictions.dim() == 1
            else F.cross_entropy(predictions, y, reduction="none")
        )
        return losses.sum() / max(len(targets), 1) + anchor

    def pair_batch_loss(
        self,
        epoch_index: int,
        tau: int,
        b: int,
        held: Mapping[int, tuple[np.ndarray, np.ndarray]],
        traffic: dict[str, Any],
        stats: IterationStats,
    ) -> torch.Tensor:
        """``task=link``: this rank's share of the mini-batch's pair loss (``links.pair_share``)."""
        assert self.loss is not None
        last = self.graph.snapshots[tau]
        negatives, _ = self.loss.negatives_of(last)
        batch = PairBatch.draw(
            links_of(last).numpy(), negatives.numpy(), self.config.batch, self.settings.seed, epoch_index, tau, b
        )
        represented = self.representations(epoch_index, tau, b, held, traffic, stats, batch.targets)
        return pair_share(self.loss, batch, represented, self.rank, self.world_size, stats, traffic)

    def representations(
        self,
        epoch_index: int,
        tau: int,
        b: int,
        held: Mapping[int, tuple[np.ndarray, np.ndarray]],
        traffic: dict[str, Any],
        stats: IterationStats,
        targets: np.ndarray,
    ) -> tuple[torch.Tensor, np.ndarray, torch.Tensor]:
        """The temporal model's output for the ``targets`` this rank is home to, in batch order: their
        structural embeddings computed where each snapshot of the window stores them and gathered here
        (section 3.1). Returns it, every target's home rank (``links.home_ranks``: its holder at
        ``tau``) and a zero that joins the loss to the gathering exchange on every rank."""
        window = list(range(tau - self.window + 1, tau + 1))
        # 1. each rank's targets per snapshot, their sampled neighbourhoods, the features they need
        owners = np.stack([self.placements[t].store[targets] for t in window])  # [w, B]; -1: absent
        hoods = {
            t: sample_neighbourhood(
                self.neighbours[t],
                targets[owners[slot] == self.rank],
                self.config.fanouts,
                sample_key(self.settings.seed, epoch_index, tau, b, t),
            )
            for slot, t in enumerate(window)
        }
        x_rows = fetch_features(
            window, hoods, held, self.placements, self.rank, self.world_size, self.graph.num_features, traffic, stats
        )
        # 2. structural embeddings of this rank's targets in each snapshot (in batch order: a hood's targets come first)
        embeddings = []
        for t in window:
            traffic["messages"] += sum(block.edge_index.shape[1] for block in hoods[t].blocks)
            blocks = [(torch.from_numpy(block.edge_index).to(self.device), block.num_dst) for block in hoods[t].blocks]
            embeddings.append(self.model.encode(x_rows[t].to(self.device), blocks))
        flat = torch.cat(embeddings)
        # 3. every embedding to its target's home rank, ordered by (destination, batch position, slot)
        positions = np.arange(targets.size)
        home = home_ranks(owners, targets, self.world_size)  # its holder at tau (links.home_ranks)
        slots, where = np.nonzero(owners == self.rank)  # this rank's (slot, position) pairs, slot-major: the rows of ``flat``
        order = np.lexsort((slots, where, home[where]))
        send_counts = np.bincount(home[where], minlength=self.world_size).tolist()
        send = flat[torch.from_numpy(order)]
        if torch.is_grad_enabled() and not send.requires_grad:  # every rank must run the exchange's backward too
            send = send.detach().requires_grad_()
        counting = Region(HOST)  # host integers through gloo: the host clock
        recv_counts = exchange_counts(send_counts)
        stats.add_time("comm_s", counting.stop())
        exchanging = Region(comm.clock_for(send.device))  # NCCL's rows: events; gloo's: the host clock
        received = exchange_rows(send, send_counts, recv_counts)
        stats.add_time("comm_s", exchanging.stop())
        stats.add_bytes("embedding", send.numel() * send.element_size())
        # 4. this rank's targets: their window of embeddings (zeros where absent), the temporal model
        mine = positions[home == self.rank]
        traffic["targets"] += mine.size
        row_of = np.full(targets.size, -1)
        row_of[mine] = np.arange(mine.size)
        arriving_slot, arriving_position = np.nonzero((owners >= 0) & (home == self.rank)[None, :])
        senders = owners[arriving_slot, arriving_position]
        arrival = np.lexsort((arriving_slot, arriving_position, senders))  # what each sender sent here, in its order
        grid = torch.zeros(mine.size, self.window, self.model.hidden_channels, device=self.device)
        if arrival.size:
            index = (
                torch.from_numpy(row_of[arriving_position[arrival]]).to(self.device),
                torch.from_numpy(arriving_slot[arrival]).to(self.device),
            )
            grid = grid.index_put(index, received)
        # ``received`` joins the loss on every rank (a zero where it holds nothing), so every rank's
        # backward runs the exchange's reverse all-to-all and the collectives pair up
        return self.model.predict(grid), home, received.sum() * 0.0

    # ---- evaluation -----------------------------------------------------------------------------------
    def evaluation_metrics(self, data: DynamicData, settings: RunConfig) -> frozenset[str]:
        if isinstance(data, TemporalGraph) and data.task is Task.LINK:
            return super().evaluation_metrics(data, settings)  # link prediction's, as every strategy's
        return frozenset({"loss", "mse"})  # node regression only

    def evaluate(self, phase: str) -> Mapping[str, MetricValue]:
        """The ``phase`` nodes of the latest snapshot trained on (the last one, once the run has seen
        them all), with its window, in batches; summed over ranks. ``task=link``: ``evaluate_links``."""
        if self.loss is not None:
            return self.evaluate_links(phase)
        nodes = self.val_nodes if phase == "val" else self.test_nodes
        if self._last_held is None:
            self._held_step = self.graph.num_snapshots - 1
            self._last_held = self._rebuild_window(self._held_step)
        tau, held = self._held_step, self._last_held
        present = nodes[self.graph.snapshots[tau].node_mask.numpy()[nodes]]
        sums = torch.zeros(2, dtype=torch.float64)
        with torch.no_grad():
            for start in range(0, present.size, self.config.batch):
                chunk = present[start : start + self.config.batch]
                stats = IterationStats(iteration=-1)
                traffic = self._no_traffic()
                loss = self.batch_loss(-1, tau, start, held, traffic, stats, targets=chunk)
                counted = float(len(chunk)) if self.rank == 0 else 0.0  # every rank has the chunk: one counts it
                sums += torch.tensor([float(loss) * len(chunk), counted], dtype=torch.float64)
        comm.all_reduce(sums)  # host float64 sums: gloo under a device-keyed backend
        mse = float(sums[0] / sums[1].clamp(min=1))
        return {"loss": mse, "mse": mse}

    def evaluate_links(self, phase: str) -> Mapping[str, MetricValue]:
        """``task=link``: every group of ``phase`` (split by time, as every snapshot strategy's) scored
        on its window's representations (``links.evaluate_pairs``)."""
        assert self.loss is not None and self.split is not None
        held = self._evaluation_windows()
        traffic, stats = self._no_traffic(), IterationStats(iteration=-1)

        def represent(tau: int, start: int, nodes: np.ndarray) -> tuple[torch.Tensor, np.ndarray, torch.Tensor]:
            return self.representations(-1, tau, start, held, traffic, stats, nodes)

        taus = [group.stop - 1 for group in self.split.phase(phase)]
        return evaluate_pairs(self.loss, phase, self.graph, taus, represent, self.config.batch, self.rank, self.device)

    def _evaluation_windows(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """This rank's stored rows of every snapshot a validation or test window reads, rebuilt once."""
        if self._evaluation_held is None:
            assert self.split is not None
            wanted = {t for group in (*self.split.val, *self.split.test) for t in range(group.start, group.stop)}
            self._evaluation_held = self.stored_windows(wanted)
        return self._evaluation_held

    def _rebuild_window(self, tau: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        return self.stored_windows(set(range(tau - self.window + 1, tau + 1)))

    def stored_windows(self, wanted: set[int]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """This rank's stored rows (nodes, features) of each snapshot of ``wanted``, its store rebuilt
        from the first snapshot (a store's versions depend on where nodes were before; placements,
        once made, never change)."""
        store, held = self._new_store(), {}
        for t in range(max(wanted) + 1):
            self._add_snapshot(store, t, self.place(t)[0])
            if t in wanted:
                held[t] = store.features(t)
        return held

    def _new_store(self) -> GraphStore:
        return GraphStore(self.graph.num_features, self.window, self.num_segments, self.graph.snapshots[0].x.element_size())

    def _add_snapshot(self, store: GraphStore, t: int, placement: SnapshotPartition) -> None:
        """This rank's share of snapshot ``t`` into ``store``."""
        snapshot = self.graph.snapshots[t]
        store.add(t, np.flatnonzero(placement.store == self.rank), snapshot.x.numpy(), snapshot.edge_index.numpy())

    def _no_traffic(self) -> dict[str, Any]:
        """What this rank's mini-batches do, to be counted: feature-fetch bytes per peer, in and out, the
        sampled messages its encoders compute, the targets whose temporal model it runs and (task=link) the
        pairs it scores."""
        peers = np.zeros(self.world_size)
        return {"fetch_in": peers, "fetch_out": peers.copy(), "messages": 0, "targets": 0, "pairs": 0}

    def describe(self) -> dict[str, Any]:
        return {
            "num_snapshots": self.graph.num_snapshots,
            "num_nodes": self.graph.num_nodes,
            # the training nodes; under task=link the pairs of the training groups' newest snapshots
            "training_units": (
                len(self.train_nodes)
                if self.split is None
                else sum(links_of(self.graph.snapshots[tau]).shape[1] for tau in self.training_steps)
            ),
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "epoch": self._last_epoch,
            "placements": [
                (p.store.tolist(), p.additive.tolist(), p.stored_bytes.tolist(), p.utility, p.cut_edges, p.seconds)
                for p in self.placements
            ],
            "partitioner": self.online.state_dict(),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self._last_epoch = int(state["epoch"])
        self.placements = [
            SnapshotPartition(np.asarray(s, np.int64), np.asarray(a, bool), np.asarray(b), float(u), int(c), float(sec))
            for s, a, b, u, c, sec in state["placements"]
        ]
        self.online.load_state_dict(dict(state["partitioner"]))
