"""FlareDTDG (Huang et al., PVLDB 19(7), 2026): node-partitioned training on hybrid batches.

Every rank owns one part of the nodes (``dygsched.data.partition``: METIS, hash or range, cut into
``chunks`` chunks per part) in every snapshot. A training step is a window of ``W`` snapshots (the
run's ``window``) ending at ``t``: the ``K = full`` most recent in full (each layer's halo rows
exchanged with their owners) and ``m = W - K`` older ones decayed, block ``j`` keeping only the
rank's nodes in the first ``N_j`` of its chunks (``decay.decay_counts``) and the edges among them,
with no communication. One optimizer step per window.

Per epoch each rank draws a survival order of its chunks and renumbers its nodes once so the
nodes of the first ``c`` chunks are the row prefix ``[0, ends[c])`` (shrinking, section 3.3); a
decayed block is then a slice. ``shrink=false`` is the baseline the paper measures against: the
same renumbering done again at every step. Hidden states are inherited from window to window
(``dygsched.models.inherited_states``) and reset at each epoch's start and at its random split point: the
training snapshots are cut at a random point, the part after it trained first, and no window
crosses the cut (Algorithm 1, section 3.2). The loss is on the last block's nodes (``loss_on=last``)
or the mean over blocks (``all``); each rank's loss is its nodes' share of the whole mean, so the
ranks' gradients add up to the one-process step. Evaluation runs every validation and test window
in full, from zero states: the same windows and the same metric as every other strategy.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from dygsched.data.groups import SnapshotGroup
from dygsched.data.kinds import DynamicData
from dygsched.data.link_targets import links_of
from dygsched.data.partition.nodes import NodePartition, partition_nodes
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.engine import comm
from dygsched.engine.flare.config import FlareConfig
from dygsched.engine.flare.decay import decay_counts
from dygsched.engine.flare.memory import SavedTensors, tensor_bytes
from dygsched.engine.link_objective import LinkObjective
from dygsched.engine.node_partition.exchange import HaloAccounting
from dygsched.engine.node_partition.hooks import PartitionHooks
from dygsched.engine.node_partition.layout import GCNNorm, PartitionedSnapshot, RankLayout
from dygsched.engine.node_partition.overlap import OverlapSchedule
from dygsched.engine.node_partition.pairs import PairRows, every_row
from dygsched.engine.objective import GroupObjective, build_split, check_task, group_objective
from dygsched.engine.run_config import RunConfig
from dygsched.engine.strategy import Epoch, IterationStats, MetricValue, Missing, RunContext, Strategy, broadcast_from_rank0
from dygsched.engine.timing import Region, Tally, timed
from dygsched.errors import ConfigError
from dygsched.models.dgnn import DGNN
from dygsched.models.inherited_states import InheritedStates


class Breakdown:
    """Seconds per phase of an epoch (FlareDTDG table 12): shuffle, remap, load, forward, backward.

    Each phase is a timed region of finished work on the device's current stream
    (``dygsched.engine.timing``; the host clock without a device), read when ``seconds`` is."""

    PHASES = ("shuffle", "remap", "load", "forward", "backward")

    def __init__(self, device: torch.device | None = None) -> None:
        self.device = device or torch.device("cpu")
        self.timings = Tally()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        with timed(self.device) as region:
            yield
        self.timings.add(name, region)

    @property
    def seconds(self) -> dict[str, float]:
        return {name: self.timings.seconds(name) for name in self.PHASES}


def model_norm(model: nn.Module) -> GCNNorm:
    """The GCN normalisation every convolution of ``model`` uses (one setting for the whole model)."""
    from torch_geometric.nn import GCNConv

    settings = {(m.add_self_loops, m.improved) for m in model.modules() if isinstance(m, GCNConv)}
    settings |= {
        (m.add_self_loops, m.improved)
        for m in model.modules()
        if hasattr(m, "add_self_loops") and hasattr(m, "improved") and not isinstance(m, GCNConv)
    }
    if len(settings) > 1:
        raise ConfigError("node partitions need one GCN normalisation for the whole model (add_self_loops, improved)")
    add_self_loops, improved = settings.pop() if settings else (True, False)
    return GCNNorm(bool(add_self_loops), bool(improved))


def chunk_survival(seed: int, epoch: int, rank: int, chunks: int) -> np.ndarray:
    """``survival[c]``: chunk ``c``'s place in ``rank``'s survival order of ``epoch`` (a decayed block
    keeping ``N`` chunks keeps those placed below ``N``), drawn from the run's seed."""
    order = np.random.default_rng([seed, epoch, rank, 17]).permutation(chunks)
    survival = np.empty(chunks, dtype=np.int64)
    survival[order] = np.arange(chunks)
    return survival


class FlareStrategy(Strategy):
    """FlareDTDG's hybrid batching over node partitions (see the module docstring)."""

    data_kind = TemporalGraph
    exact = False  # decayed blocks depend on the partition; with full blocks only, P ranks equal one process (tests)

    predicts_links = True  # task=link: a pair is scored where its source lives (node_partition.pairs)
    communicates_in_backward = True  # halo/row all-to-alls inside backward: no overlapped gradient buckets

    def __init__(self, config: FlareConfig) -> None:
        super().__init__(config)
        self.config: FlareConfig = config
        self.full, self.alpha = config.full, config.alpha  # where the decay starts; the auto-tuning moves them
        self.overlap_schedule = OverlapSchedule(config.overlap) if config.overlap != "none" else None
        self._state_bytes = 0
        self._pair_exchanges: list[Region] = []  # a step's link-pair row exchanges (task=link), read when it is settled
        self._pair_bytes = 0
        self._local_rows: np.ndarray | None = None
        self._last_epoch = -1
        self._partition_reported = False

    # ---- before any rank starts -------------------------------------------------------------------
    def check(self, data: DynamicData, settings: RunConfig, world_size: int) -> None:
        super().check(data, settings, world_size)
        assert isinstance(data, TemporalGraph)
        if self.full > settings.window:
            raise ConfigError(f"sched.full (K={self.full}) must be at most the window (W={settings.window})")
        check_task(data, build_split(data, settings), settings)
        if data.task is Task.LINK and self.config.loss_on != "last":
            raise ConfigError(
                "sched=flare with task=link scores the pairs of a window's last block, which holds every node; "
                "a decayed block holds only part of them (sched.loss_on=all): use sched.loss_on=last"
            )
        decay_counts(self.config.schedule, self.config.chunks, settings.window - self.full, self.alpha)
        if world_size * self.config.chunks > data.num_nodes:
            raise ConfigError(
                f"{world_size} ranks x {self.config.chunks} chunks are more chunks than the graph's {data.num_nodes} nodes"
            )
        # a graph the partitioner cannot cut (a part left without nodes) fails here, not on rank 0 later
        partition_nodes(
            data,
            range(build_split(data, settings).train[-1].stop),
            world_size,
            self.config.chunks,
            self.config.partition,
            settings.seed,
        )

    def check_model(self, model: nn.Module) -> None:
        layers = getattr(model, "layers", [])
        refused = [layer for layer in layers if not getattr(layer, "partitionable", False)]
        if refused or not isinstance(model, DGNN):
            what = type(refused[0] if refused else model).__name__
            because = getattr(refused[0], "not_partitionable_because", "") if refused else "it is not a snapshot model"
            raise ConfigError(
                f"sched={self.name} splits every snapshot's nodes over the ranks, and {what} cannot run on a part of them "
                f"({because or 'it is not partitionable'}); use another model"
            )
        model_norm(model)

    # ---- on every rank ------------------------------------------------------------------------------
    def setup(self, run: RunContext) -> None:
        assert isinstance(run.data, TemporalGraph)
        self.graph, self.settings = run.data, run.settings
        self.rank, self.world_size, self.device = run.rank, run.world_size, run.device
        self.split = build_split(self.graph, run.settings)
        self.window = run.settings.window
        self.counts = decay_counts(self.config.schedule, self.config.chunks, self.window - self.full, self.alpha)
        train_stop = self.split.train[-1].stop
        start = time.perf_counter()
        partition = (
            partition_nodes(
                self.graph,
                range(train_stop),
                self.world_size,
                self.config.chunks,
                self.config.partition,
                run.settings.seed,
                run.artifacts.cache_dir,
            )
            if run.is_main
            else None
        )
        self.partition: NodePartition = broadcast_from_rank0(partition)
        self.partition_s = time.perf_counter() - start
        run.artifacts.write_json("partition.json", {**self.partition.describe(), "seconds": self.partition_s})

    def objective(self, model: nn.Module) -> nn.Module:
        self.check_model(model)
        self.model = cast(DGNN, model)  # check_model refuses any other model
        self.layout = RankLayout(self.graph, self.partition, self.rank, model_norm(model), self.device)
        self.loss: GroupObjective = group_objective(self.model, self.graph, self.split, self.settings)
        return self.loss

    # ---- one epoch ----------------------------------------------------------------------------------
    def chunk_order(self, epoch: int) -> tuple[np.ndarray, np.ndarray]:
        """This rank's node order for ``epoch`` (owned rows sorted by their chunk's survival rank,
        then by id) and ``ends[c]``: how many of its nodes lie in the first ``c`` chunks."""
        rank_of_chunk = chunk_survival(self.settings.seed, epoch, self.rank, self.config.chunks)
        owned_rank = rank_of_chunk[self.partition.chunk[self.layout.owned]]
        order = np.lexsort((np.arange(owned_rank.size), owned_rank))
        ends = np.concatenate([[0], np.cumsum(np.bincount(owned_rank, minlength=self.config.chunks))])
        return order, ends

    def epoch_windows(self, epoch: int) -> list[list[SnapshotGroup]]:
        """The training windows of ``epoch`` in order, as segments between which states reset: after
        a random cut of the training snapshots, the later part first; no window crosses the cut."""
        groups = list(self.split.train)
        stop = groups[-1].stop
        cut = int(np.random.default_rng([self.settings.seed, epoch, 29]).integers(0, stop)) if self.config.random_split else 0
        later = [g for g in groups if g.start >= cut]
        earlier = [g for g in groups if g.stop <= cut]
        return [segment for segment in (later, earlier) if segment]

    def start_epoch(self, index: int, clock: Breakdown | None = None) -> None:
        """Draw the epoch's chunk order and, with shrinking, renumber the nodes by it."""
        clock = clock or Breakdown()
        with clock.phase("shuffle"):
            self.order, self.ends = self.chunk_order(index)
        if self.config.shrink:
            with clock.phase("remap"):
                self.layout.reorder(self.order)
        self.loss.start_epoch(index)
        self._local_rows = self.layout.local_ids(self.order) if self.graph.task is Task.LINK else None

    def run_epoch(self, epoch: Epoch) -> Mapping[str, MetricValue]:
        schedule = self.overlap_schedule
        fit_error = schedule.refit(self.settings.seed + epoch.index) if schedule is not None else None
        clock = Breakdown(self.device)
        self.start_epoch(epoch.index, clock)
        accounting = HaloAccounting()
        largest_saved = 0
        iteration = 0
        segments = self.epoch_windows(epoch.index)
        epoch.expect_steps(sum(len(segment) for segment in segments), "window")
        for segment in segments:
            saved: dict[int, Any] | None = {} if self.config.inherit else None  # states reset at each segment's start
            for group in segment:
                stats = IterationStats(iteration=iteration, units=1 if self.rank == 0 else 0)
                before_comm, before_bytes = accounting.seconds, accounting.total_bytes
                with timed(self.device) as step:
                    largest_saved = max(largest_saved, self._step(group, saved, accounting, epoch, stats, clock))
                stats.comm_s += accounting.seconds - before_comm  # the step's exchanges, read once it is done
                stats.add_bytes("halo", accounting.total_bytes - before_bytes)
                stats.busy_from(step)
                epoch.finish_iteration(stats)
                iteration += 1
        self._last_epoch = epoch.index
        metrics: dict[str, MetricValue] = {
            "shuffle_s": clock.seconds["shuffle"],
            "remap_s": clock.seconds["remap"],
            "load_s": clock.seconds["load"],
            "forward_s": clock.seconds["forward"] - (accounting.seconds - accounting.backward_seconds),
            "backward_s": clock.seconds["backward"] - accounting.backward_seconds,
            "halo_s": accounting.seconds,
            # what autograd saved for the backward in the largest window, counted as it is saved
            "saved_for_backward_bytes": largest_saved,
            # that, plus the parameters and the inherited states: the window's training memory
            "train_memory_bytes": largest_saved + tensor_bytes(list(self.model.parameters())) + self._state_bytes,
        }
        for layer in range(len(self.model.layers)):
            metrics[f"halo_bytes_layer{layer}_forward"] = accounting.forward_bytes.get(layer, 0)
            metrics[f"halo_bytes_layer{layer}_backward"] = accounting.backward_bytes.get(layer, 0)
        if fit_error is not None:
            metrics["overlap_fit_mse"] = fit_error
        if self.config.autotune_every and (epoch.index + 1) % self.config.autotune_every == 0:
            metrics.update(self.autotune(epoch))
        if not self._partition_reported and self.rank == 0:  # rank 0 partitions, once per run
            metrics["partition_s"] = self.partition_s
            self._partition_reported = True
        return metrics

    def blocks(
        self, group: SnapshotGroup, full_only: bool = False
    ) -> tuple[list[Snapshot], list[PartitionedSnapshot | None], list[int]]:
        """The window's blocks, oldest first: the model's snapshots, the partitioned snapshot of each
        full block (``None`` for a decayed one), and the snapshot indices. Empty blocks are left out."""
        snapshots: list[Snapshot] = []
        partitioned: list[PartitionedSnapshot | None] = []
        ids: list[int] = []
        decayed = 0 if full_only else self.window - self.full
        for position, t in enumerate(range(group.start, group.stop)):
            held = self.layout.snapshot(t) if self.config.shrink else self.layout.localise(t, self.order)
            if position < decayed:
                rows = int(self.ends[self.counts[decayed - position - 1]])
                if rows == 0:
                    continue
                snapshots.append(held.prefix(rows))
                partitioned.append(None)
            else:
                snapshots.append(held.full())
                partitioned.append(held)
            ids.append(t)
        return snapshots, partitioned, ids

    def _step(
        self,
        group: SnapshotGroup,
        saved: dict[int, Any] | None,
        accounting: HaloAccounting,
        epoch: Epoch,
        stats: IterationStats,
        clock: Breakdown,
    ) -> int:
        """One window: forward, loss and backward; returns the bytes its forward saved for the backward."""
        self._pair_exchanges, self._pair_bytes = [], 0
        with SavedTensors() as kept:
            loss = self.window_loss(group, saved, accounting, clock)
        with clock.phase("backward"):
            epoch.backward(loss, final=True)
        stats.add_loss(loss)
        if self.graph.task is Task.LINK:  # the link pairs' destination rows from their owners
            for region in self._pair_exchanges:
                stats.add_time("comm_s", region)
            stats.add_bytes("link_pair_rows", self._pair_bytes)
        if saved is not None:
            self._state_bytes = tensor_bytes(saved)
        return kept.bytes

    def window_loss(
        self,
        group: SnapshotGroup,
        saved: dict[int, Any] | None,
        accounting: HaloAccounting | None = None,
        clock: Breakdown | None = None,
    ) -> torch.Tensor:
        """This rank's share of the window's loss (the ranks' shares add up to it)."""
        clock = clock or Breakdown()
        with clock.phase("remap" if not self.config.shrink else "load"):
            snapshots, partitioned, ids = self.blocks(group)  # without shrinking, renumbered here, at every step
        # each block's existing nodes, counted on the host where the blocks are built (the loss's denominators)
        existing = [float(s.node_mask.sum()) for s in snapshots] if self.config.loss_on != "last" else []
        with clock.phase("load"):
            snapshots = [s.to(self.device) for s in snapshots]
        with clock.phase("forward"):
            hooks = InheritedStates(
                self.model, ids, saved, PartitionHooks(partitioned, accounting, schedule=self.overlap_schedule)
            )
            h, _ = self.model.unroll(snapshots, hooks=hooks, layer_major=self.overlap_schedule is not None)
            if self.config.loss_on == "last":
                last = partitioned[-1]
                assert last is not None, "the last block of a window is always full"
                if self.graph.task is Task.LINK:
                    return self._link_loss(h, self.graph.snapshots[ids[-1]])
                return self._partial_loss(h, snapshots[-1], last.active_nodes)
            counts = comm.all_reduce(torch.tensor(existing, dtype=torch.float64))  # host: gloo
            terms = [
                self._partial_loss(out, s, float(c)) for out, s, c in zip(hooks.outputs, snapshots, counts.tolist()) if c > 0
            ]
            return torch.stack(terms).mean() if terms else h.sum() * 0.0

    # ---- auto-tuning (section 3.5) ------------------------------------------------------------------
    def neighbours(self) -> list[tuple[int, float]]:
        """The current (K, alpha) and its neighbours K +- 1, alpha +- 0.1 inside [1, W] x [0, 1]."""
        options = [(self.full, self.alpha)]
        for full, alpha in (
            (self.full - 1, self.alpha),
            (self.full + 1, self.alpha),
            (self.full, self.alpha - 0.1),
            (self.full, self.alpha + 0.1),
        ):
            alpha = round(alpha, 10)
            if 1 <= full <= self.window and 0.0 <= alpha <= 1.0:
                options.append((full, alpha))
        return options

    def set_decay(self, full: int, alpha: float) -> None:
        self.full, self.alpha = full, alpha
        self.counts = decay_counts(self.config.schedule, self.config.chunks, self.window - full, alpha)

    def autotune(self, epoch: Epoch) -> dict[str, MetricValue]:
        """Try each neighbouring (K, alpha) for ``autotune_windows`` windows from a copy of the weights,
        compare validation losses, and move to the best only if it beats staying (every rank agrees:
        the losses are summed over ranks)."""
        weights = {k: v.detach().clone() for k, v in self.loss.state_dict().items()}
        optimizer = copy.deepcopy(epoch.optimizer.state_dict())
        windows = [g for segment in self.epoch_windows(epoch.index + 1) for g in segment][: self.config.autotune_windows]
        current = (self.full, self.alpha)
        results = {}
        for full, alpha in self.neighbours():
            self.set_decay(full, alpha)
            for group in windows:
                loss = self.window_loss(group, None)
                loss.backward()
                epoch.sync.synchronize()
                epoch.optimizer.step()
                epoch.sync.zero_grad()
            val_loss = self.evaluate("val")["loss"]
            assert not isinstance(val_loss, Missing), "evaluation always measures the loss"
            results[(full, alpha)] = float(val_loss)
            self.loss.load_state_dict(weights)
            epoch.optimizer.load_state_dict(copy.deepcopy(optimizer))
        best = min(results, key=lambda option: (results[option], option != current))
        self.set_decay(*(best if results[best] < results[current] else current))
        return {
            "autotune_full": float(self.full),
            "autotune_alpha": self.alpha,
            "autotune_moved": float((self.full, self.alpha) != current),
            "autotune_val_loss": results[(self.full, self.alpha)],
        }

    def _partial_loss(self, h: torch.Tensor, snapshot: Snapshot, count: float) -> torch.Tensor:
        """This rank's nodes' share of the mean loss over the ``count`` existing nodes of the block (all ranks)."""
        losses, _ = self.loss.node_losses(self.model.readout(h), snapshot.to(self.device))
        return losses.sum() / count if count > 0 else losses.sum()

    def _link_loss(self, h: torch.Tensor, last: Snapshot) -> torch.Tensor:
        """This rank's share of the window's link loss: the pairs whose source it owns, each
        destination's embedding fetched from its owner where another rank owns it (``PairRows``)."""
        assert isinstance(self.loss, LinkObjective) and self._local_rows is not None
        negatives, _ = self.loss.negatives_of(last)
        pairs = links_of(last)
        plan = PairRows.plan(pairs.numpy(), negatives.numpy(), self.partition.part, self._local_rows, self.rank, self.world_size)
        z = self.model.readout(h)
        with timed(self.device) as exchanging:
            rows = plan.rows(z)
        self._pair_exchanges.append(exchanging)
        self._pair_bytes += 2 * plan.rows_sent * z.shape[1] * z.element_size()  # the rows, and their gradients back
        src, dst, negative_dst = plan.scored_rows(z.device)
        return self.loss.pair_loss(rows, src, dst, negative_dst, int(pairs.shape[1]), 1.0)

    # ---- evaluation ---------------------------------------------------------------------------------
    def evaluate(self, phase: str) -> dict[str, MetricValue]:
        """Every window of ``phase`` in full from zero states, on every rank's own nodes; summed over
        ranks (link prediction: every rank scores the pairs on the whole graph's embeddings)."""
        self.loss.eval()
        evaluation = self.loss.phase_evaluation(phase)
        with torch.no_grad():
            for group in self.split.phase(phase):
                snapshots, partitioned, ids = self.blocks(group, full_only=True)
                h, _ = self.model.unroll([s.to(self.device) for s in snapshots], hooks=PartitionHooks(partitioned))
                if self.graph.task is Task.LINK:
                    evaluation.add(self._every_embedding(self.model.readout(h)), self.graph.snapshots[ids[-1]].to(self.device))
                else:
                    evaluation.add(self.model.readout(h), snapshots[-1].to(self.device))
        self.loss.train()
        return evaluation.metrics(shared=self.graph.task is Task.LINK)

    def _every_embedding(self, z: torch.Tensor) -> torch.Tensor:
        """Every node's embedding row, in node order, from each rank's owned rows (evaluation only)."""
        nodes = self.layout.owned[self.layout.order]  # local row i holds node owned[order[i]]
        return every_row(nodes, z, self.graph.num_nodes).to(z.device)

    def describe(self) -> dict[str, Any]:
        return {
            "num_snapshots": self.graph.num_snapshots,
            "num_nodes": self.graph.num_nodes,
            "training_units": len(self.split.train),
            "partition_edge_cut": self.partition.edge_cut,
            "partition_balance": self.partition.balance,
        }

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self._last_epoch}  # chunk orders and cuts follow from the seed and the epoch

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self._last_epoch = int(state.get("epoch", -1))
