"""Training memory-based continuous-time models (TGN, JODIE, APAN) on an event stream, over ranks.

``NodeMemoryStrategy`` is the one-process reference, DepCache, DepComm and Sven: one loop, driving
a memory backend (``NodeMemory``, ``backend.py``) that owns where the node state lives, how a step
reads it and how its writes reach it, as ``SnapshotGroupStrategy`` drives a ``GroupExecutor``. Each
``conf/sched`` file names a configuration class (``config.py``) that binds a backend and types its
settings: the strategy is this class, the backend whichever the configuration names.

One optimizer step is one global batch of ``batch_size x world_size`` consecutive training events;
rank ``r`` takes its contiguous slice (``rank_slice``), so a run on ``M`` ranks takes exactly the
steps of one process with the global batch. Per step a rank:

1. builds its series: roots (sources, destinations, one random negative per event, seeded per
   global batch: ``negatives.py``), then the roots' most recent earlier neighbours when the model's
   embedding reads them (``RecentNeighbours``);
2. gets every series vertex's recomputed memory ``s'`` from the backend (``memory_of``: a local
   table, a replica, the owners' updates sent per occurrence, or deduplicated rows fetched from the
   owners), embeds the roots, scores positive and negative pairs, and back-propagates its share of
   the global batch's BCE loss (sum over its events divided by the global batch size: the ranks'
   summed gradients are the one-process gradient);
3. writes the positive endpoints' new memory and mails (``aggregate``; the latest event wins),
   and ends the step (gradient all-reduce, optimizer step).

A rank's batch may be cut into ``micro_batches`` consecutive slices (Sven's pipeline): each reads
the state as it was before the batch, back-propagates its share, and the writes of all slices are
aggregated once at the end, so the step is the same whatever the count.

Memory is reset at the start of each epoch; validation continues from the end of training, test
from the end of validation (TGL's protocol; ``evaluation.py``, which also keeps the state validation
started from for the checkpoint). Timestamps are shifted so the stream starts at 0.
Evaluation reports the link-prediction metrics of ``dygsched.metrics.link_prediction`` over every
positive and negative pair: transductive, inductive (``split.new_nodes`` hides DyGLib's share of
nodes from training, ``dygsched/data/new_nodes.py``) and, with ``eval_negatives = m > 1`` or TGB's
fixed negatives, the mean reciprocal rank.

Under ``task=node`` on a labelled stream, the loop trains and scores node property prediction
instead: the task (``node_task.py``) adds the rows it embeds and decides the loss and the metrics;
the loop, the backends and their exchanges are the same (``model=persistent`` is its floor).

Epoch metrics: ``redundancy_dispatch`` and ``redundancy_aggregate`` (the share of the series and
of the written endpoints that repeats a vertex: eta1, eta2), ``state_bytes`` (this rank's table) and
``exchange_s`` (seconds in node-state exchanges, inside ``comm_s``). Bytes per kind and peer:
``transport.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from dygsched.components import load_target
from dygsched.data.event_batches import (
    NEW_NODE_PASSES,
    RecentNeighbours,
    SampledNeighbours,
    batch_series,
    evaluated_phase,
    rank_slice,
    relative_times,
)
from dygsched.data.events import EventSplit, EventStream
from dygsched.data.kinds import DynamicData
from dygsched.data.new_nodes import NewNodeSplit, new_node_split
from dygsched.data.temporal_graph import Task
from dygsched.data.tgb_negatives import read_phase_negatives
from dygsched.engine.node_memory.backend import MemoryRun, NodeMemory
from dygsched.engine.node_memory.batches import BatchInputs, RankBatch, Series
from dygsched.engine.node_memory.config import NodeMemoryConfig
from dygsched.engine.node_memory.evaluation import NodeMemoryEvaluation
from dygsched.engine.node_memory.negatives import (
    NegativeSampler,
    check_evaluation,
    fixed_negatives_prefix,
    negative_sampler,
    new_node_sampler,
)
from dygsched.engine.node_memory.node_task import NodePropertyTask, check_node_model, node_task_for
from dygsched.engine.node_memory.transport import Transport
from dygsched.engine.node_memory.updates import StateUpdates
from dygsched.engine.run_config import RunConfig
from dygsched.engine.strategy import Epoch, IterationStats, MetricValue, RunContext
from dygsched.engine.timing import timed
from dygsched.errors import ConfigError
from dygsched.models.edgebank import EdgeBank
from dygsched.models.memory_base import MemoryModel, gather_rows
from dygsched.models.persistent_forecast import PersistentForecast


class NodeMemoryStrategy(NodeMemoryEvaluation):
    """The node-memory loop over a memory backend (see the module docstring)."""

    data_kind = EventStream
    predicts_links = True
    embed_distinct_roots = True  # one embedding per distinct (root, time) pair (``_embedded_roots``)

    def __init__(self, config: NodeMemoryConfig) -> None:
        super().__init__(config)
        backend: Any = load_target(config.memory) if config.memory else None
        if not (isinstance(backend, type) and issubclass(backend, NodeMemory)):
            raise ConfigError(f"sched={config.name}: {type(config).__name__} names no memory backend (a NodeMemory class)")
        self.config: NodeMemoryConfig = config
        self.memory: NodeMemory = backend(config)
        self.batch_size, self.micro_batches = config.batch_size, self.memory.micro_batches
        self.exact, self.gradient_staleness = self.memory.exact, self.memory.gradient_staleness
        self.communicates_in_backward = self.memory.communicates_in_backward
        self._position: str | None = None  # the last phase whose events the state has absorbed
        self._epoch = 0
        self._task = Task.LINK  # the data's (task=node: its labels), known from check() or setup()
        self.node_task: NodePropertyTask | None = None  # task=node (node_task.py)
        self._series_vertices = self._series_unique = 0  # an epoch's counts (a pass outside an epoch counts too)

    # ---- before any rank starts -------------------------------------------------------------------
    def check(self, data: DynamicData, settings: RunConfig, world_size: int) -> None:
        super().check(data, settings, world_size)
        self.memory.check(self.name, data, settings, world_size)
        assert isinstance(data, EventStream)
        split = data.split(settings.split.train, settings.split.val, settings.split.by)
        check_evaluation(data, split, settings)
        training_events = int(
            new_node_split(data, split, settings.split.new_nodes, settings.split.new_nodes_draw).train_events.numel()
        )  # refuses an impossible share
        if self.batch_size * world_size > training_events:
            raise ConfigError(
                f"a global batch of {self.batch_size} x {world_size} ranks is more than the {training_events} training events"
            )
        self._task = data.task  # task=node: its labels' task, its own checks (node_task.py)
        node_task = node_task_for(data, split, settings, self.batch_size, world_size)
        if node_task is not None:
            node_task.check(settings)

    def check_model(self, model: nn.Module) -> None:
        if not isinstance(model, (MemoryModel, EdgeBank, PersistentForecast)):
            raise ConfigError(
                f"sched={self.name} trains memory-based continuous-time models: use model=tgn, jodie or apan (or edgebank)"
            )
        check_node_model(model, self._task)

    # ---- on every rank ----------------------------------------------------------------------------
    def setup(self, run: RunContext) -> None:
        assert isinstance(run.data, EventStream)
        stream = self.stream = run.data
        self.settings, self.rank, self.world_size, self.device = run.settings, run.rank, run.world_size, run.device
        self.artifacts = run.artifacts
        self.transport = Transport(self.rank, self.world_size, self.device)
        self.times = relative_times(stream)
        self.split: EventSplit = stream.split(run.settings.split.train, run.settings.split.val, run.settings.split.by)
        self.new_nodes: NewNodeSplit = new_node_split(
            stream, self.split, run.settings.split.new_nodes, run.settings.split.new_nodes_draw
        )
        self.neighbours = RecentNeighbours(stream, self.times)
        # training samples neighbours among the events it trains on (all of them unless nodes are hidden)
        self.train_neighbours = (
            RecentNeighbours(stream, self.times, self.new_nodes.train_events) if self.new_nodes.drops_events else self.neighbours
        )
        prefix = fixed_negatives_prefix(stream, self.split, run.settings)
        fixed = read_phase_negatives(prefix, stream, {"val": self.split.val, "test": self.split.test}) if prefix else {}
        self.negatives = negative_sampler(stream, self.split, run.settings, fixed)
        # eval.inductive=apart: each evaluated phase's events with a new endpoint, and their own negatives
        self.new_node_events: dict[str, torch.Tensor] = {}
        self.new_node_negatives: dict[str, NegativeSampler] = {}
        if run.settings.eval.inductive == "apart":
            for phase, new_node_pass in NEW_NODE_PASSES.items():
                start, stop = self.split.phase(phase)
                new = self.new_nodes.inductive(stream.src[start:stop], stream.dst[start:stop])
                events = self.new_node_events[new_node_pass] = torch.arange(start, stop)[new]
                self.new_node_negatives[new_node_pass] = new_node_sampler(stream, self.split, run.settings, events)
        self.edge = stream.edge_matrix().to(self.times.dtype)  # weight and edge features, as the models read them
        self._task = stream.task
        self.node_task = node_task_for(stream, self.split, run.settings, self.batch_size, self.world_size)  # task=node

    def objective(self, model: nn.Module) -> nn.Module:
        self.check_model(model)
        self.model = cast(MemoryModel, model)  # check_model refuses any other model
        # task=node: the model under its classifier, its weights from node_task.init_from (node_task.py)
        module = self.node_task.objective(model, self.device) if self.node_task is not None else model
        self.memory.attach(
            MemoryRun(
                self.name,
                self.stream,
                self.settings,
                self.split.phase("train"),
                self.batch_size,
                self.rank,
                self.world_size,
                self.device,
                self.model,
                self.neighbours,
                self.times.dtype,
                self.transport,
            )
        )
        return module

    # ---- batches ----------------------------------------------------------------------------------
    def phase_size(self, phase: str) -> int:
        if phase in self.new_node_events:
            return int(self.new_node_events[phase].numel())
        if phase == "train" and self.new_nodes.drops_events:
            return int(self.new_nodes.train_events.numel())
        start, stop = self.split.phase(phase)
        return stop - start

    def events_of(self, batch: RankBatch) -> slice | torch.Tensor:
        """The stream indices of ``batch``'s events (a slice, unless training skips hidden nodes' events
        or the batch is a new-node pass's)."""
        if batch.phase in self.new_node_events:
            return self.new_node_events[batch.phase][batch.start : batch.stop]
        if batch.phase == "train" and self.new_nodes.drops_events:
            return self.new_nodes.train_events[batch.start : batch.stop]
        first = self.split.phase(batch.phase)[0]
        return slice(first + batch.start, first + batch.stop)

    def sampler(self, phase: str) -> RecentNeighbours:
        return self.train_neighbours if phase == "train" else self.neighbours

    def batches(self, phase: str) -> list[RankBatch]:
        size = self.batch_size * self.world_size
        out = []
        for index, (g0, g1) in enumerate(self.stream.batches(0, self.phase_size(phase), size)):
            a, b = rank_slice(g0, g1, self.rank, self.world_size)
            out.append(RankBatch(phase, index, g0, g1, a, b))
        return out

    def parts(self, batch: RankBatch) -> list[RankBatch]:
        """``batch`` cut into ``micro_batches`` consecutive slices (every rank the same count, some maybe empty)."""
        n, events = self.micro_batches, batch.events
        cuts = [batch.start + events * i // n for i in range(n + 1)]
        return [RankBatch(batch.phase, batch.index, batch.global_start, batch.global_stop, a, b) for a, b in zip(cuts, cuts[1:])]

    def prepared(self, phase: str) -> Iterator[tuple[RankBatch, list[tuple[RankBatch, BatchInputs]]]]:
        """Each batch of ``phase`` with the inputs of its micro-batches (the backend may prepare them ahead)."""
        return self.memory.ahead(self._prepared(phase))

    def _prepared(self, phase: str) -> Iterator[tuple[RankBatch, list[tuple[RankBatch, BatchInputs]]]]:
        for batch in self.batches(phase):
            yield batch, [(part, self.inputs(part)) for part in self.parts(batch)]

    # ---- one batch ----------------------------------------------------------------------------------
    def inputs(self, batch: RankBatch, sampler: str = "random") -> BatchInputs:
        """The events of ``batch``, its roots (sources, destinations, negatives under ``sampler``:
        destinations, then sources where it corrupts whole edges), their sampled neighbours and the series."""
        events = self.events_of(batch)
        src, dst, t = self.stream.src[events], self.stream.dst[events], self.times[events]
        negatives = self.new_node_negatives.get(batch.phase, self.negatives).of(batch, self._epoch, sampler)
        roots = negatives.destinations if negatives.sources is None else torch.cat([negatives.destinations, negatives.sources])
        extra = self.node_task.extra_roots(batch) if self.node_task is not None else None  # task=node's rows, last
        read = batch_series(self.sampler(batch.phase), src, dst, roots, t, int(self.model.embedding_neighbours), extra)
        return BatchInputs(
            src,
            dst,
            t,
            read.roots,
            read.root_times,
            read.neighbours,
            self.memory.prepare(Series(read.vertices, read.times)),
            negative_sources=negatives.sources is not None,
            extra_roots=0 if extra is None else int(extra[0].numel()),
        )

    def _step(
        self, batch: RankBatch, inputs: BatchInputs, stats: IterationStats, upcoming: Series | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, StateUpdates]:
        """This rank's loss sum, positive logits ``[n]``, negative logits ``[n, m]`` (``m`` negatives
        per event), and state writes for ``batch`` (``upcoming``: the series of the next
        micro-batch of the same batch, if any)."""
        if isinstance(self.model, EdgeBank):
            return self._edgebank_step(batch, inputs)
        if isinstance(self.model, PersistentForecast):  # task=node's floor scores its rows alone (node_task.py)
            assert self.node_task is not None
            self.node_task.baseline_step(batch, self.events_of(batch))
            return torch.zeros((), dtype=torch.float64), torch.zeros(0), torch.zeros(0, 1), self._no_writes()
        model, n = self.model, batch.events
        src, dst, t, roots, root_times, sampled, series = (
            inputs.src,
            inputs.dst,
            inputs.times,
            inputs.roots,
            inputs.root_times,
            inputs.neighbours,
            inputs.series,
        )
        self._series_vertices += int(series.vertices.numel())
        unique = series.organised.unique if series.organised is not None else torch.unique(series.vertices)
        self._series_unique += int(unique.numel())
        memory, tau = self.memory.memory_of(series, stats, upcoming)
        z = self.embed_roots(roots, root_times, sampled, memory, tau)
        z, z_extra = z[: z.shape[0] - inputs.extra_roots], z[z.shape[0] - inputs.extra_roots :]  # task=node's rows
        per_event = (roots.numel() - inputs.extra_roots - 2 * n) // max(n, 1) // (2 if inputs.negative_sources else 1)
        positive = model.score(z[:n], z[n : 2 * n])
        negative_dst = z[2 * n : (2 + per_event) * n]
        negative_src = (
            z[(2 + per_event) * n :] if inputs.negative_sources else z[:n].repeat(per_event, 1) if per_event > 1 else z[:n]
        )
        negative = model.score(negative_src, negative_dst)
        loss_sum = F.binary_cross_entropy_with_logits(positive, torch.ones_like(positive), reduction="sum") + (
            F.binary_cross_entropy_with_logits(negative, torch.zeros_like(negative), reduction="sum")
        )
        negative = negative.detach().view(per_event, n).t()
        if self.node_task is not None:  # task=node: its loss (with the link loss under backbone=link), node_task.py
            loss_sum = self.node_task.step_loss(batch, self.events_of(batch), z[:n], z_extra, loss_sum)
        return loss_sum, positive.detach(), negative, self._updates(batch, memory[: 2 * n].detach(), src, dst, t)

    def embed_roots(
        self,
        roots: torch.Tensor,
        root_times: torch.Tensor,
        sampled: SampledNeighbours,
        memory: torch.Tensor,
        tau: torch.Tensor,
    ) -> torch.Tensor:
        """The model's embedding of each root at its time, from its series' recomputed memory and
        ``tau`` (``memory_of``: the roots' rows, then their sampled neighbours' in mask order)."""
        k, mask, dev = sampled.mask.shape[1], sampled.mask, self.device
        root_count, width = roots.numel(), memory.shape[1]
        slots = mask.reshape(-1).nonzero().flatten().to(dev, non_blocking=True)  # on the host, where the mask is
        neighbour_memory = memory.new_zeros(root_count * k, width).index_copy(0, slots, memory[root_count:])
        neighbour_memory = neighbour_memory.view(root_count, k, width)
        embedded, expand = self._embedded_roots(roots, root_times)
        # each distinct neighbour event's features once (neighbours repeat across roots); padding reads event 0, weighted 0
        events, event_index = torch.unique(sampled.events[embedded].clamp(min=0), return_inverse=True)
        at = embedded.to(dev, non_blocking=True)
        z = self.model.embed(
            gather_rows(memory[:root_count], at),
            tau[:root_count][at],
            root_times[embedded].to(dev, non_blocking=True),
            gather_rows(neighbour_memory, at),
            sampled.times[embedded].to(dev, self.times.dtype, non_blocking=True),
            self.edge[events].to(dev, non_blocking=True),
            mask[embedded].to(dev, non_blocking=True),
            neighbour_edge_index=event_index.to(dev, non_blocking=True),
        )
        return gather_rows(z, expand)

    def _edgebank_step(
        self, batch: RankBatch, inputs: BatchInputs
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, StateUpdates]:
        """EdgeBank's probabilities for ``batch``'s pairs, its memory the events before the global
        batch (stream order; training events hidden by ``split.new_nodes`` left out), and no state writes."""
        n, phase = batch.events, batch.phase
        a = self.split.phase("train")[1]
        train = self.new_nodes.train_events if self.new_nodes.drops_events else torch.arange(a)
        # the stream's events before the global batch's first (a new-node pass: the whole stream's, as in its phase)
        upto = (
            int(self.new_node_events[phase][batch.global_start])
            if phase in self.new_node_events
            else self.split.phase(evaluated_phase(phase))[0] + batch.global_start
        )
        history = train[: batch.global_start] if phase == "train" else torch.cat([train, torch.arange(a, upto)])
        bank = cast(EdgeBank, self.model)
        # the roots: sources, destinations, m blocks of n negative destinations, then (whole-edge samplers)
        # m blocks of n negative sources; a negative without its own source pairs with the event's
        m = (inputs.roots.numel() - 2 * n) // max(n, 1) // (2 if inputs.negative_sources else 1)
        negatives = inputs.roots[2 * n : (2 + m) * n].view(m, n).t()
        sources = inputs.roots[(2 + m) * n :].view(m, n).t() if inputs.negative_sources else inputs.src[:, None].expand(n, m)
        start, stop = self.split.phase(evaluated_phase(phase))
        scored = bank(
            self.stream.src[history],
            self.stream.dst[history],
            self.times[history],
            torch.cat([inputs.src[:, None], sources], dim=1),
            torch.cat([inputs.dst[:, None], negatives], dim=1),
            proportion=(stop - start) / self.stream.num_events,
        ).to(self.device)
        positive, negative = scored[:, 0], scored[:, 1:]
        return bank.loss_sum(positive, negative.reshape(-1)), positive, negative, self._no_writes()

    def _no_writes(self) -> StateUpdates:
        """A step that writes no node state (EdgeBank, the persistent forecast)."""
        table, none = self.memory.table, torch.zeros(0, dtype=torch.int64)
        return StateUpdates(
            none, none, table.memory.new_zeros(0, table.memory_dim), table.memory.new_zeros(0, table.mail_dim),
            table.memory_time.new_zeros(0), none, none, table.memory.new_zeros(0, table.mail_dim),
            table.memory_time.new_zeros(0),
        )  # fmt: skip

    def _embedded_roots(self, roots: torch.Tensor, root_times: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The roots to embed (the first of each distinct (vertex, time) pair) and the index that
        expands their embeddings back to every root.

        A root's embedding is a function of its vertex and query time alone (its ``s'``, its most
        recent neighbours strictly before that time, their ``s'`` and events), and tied event times
        repeat pairs (on Enron 46% of a batch's roots), so one row per pair gives the same values and
        the same gradients (the expansion sums them back). With dropout, repeats share one draw.
        ``embed_distinct_roots = False`` embeds every root (the tests compare the two)."""
        if not self.embed_distinct_roots:
            every = torch.arange(roots.numel())
            return every, every
        distinct_times, time_index = torch.unique(root_times, return_inverse=True)
        pairs, expand = torch.unique(roots.long() * max(int(distinct_times.numel()), 1) + time_index, return_inverse=True)
        first = torch.full((pairs.numel(),), roots.numel(), dtype=torch.int64)
        first.scatter_reduce_(0, expand, torch.arange(roots.numel()), reduce="amin")
        return first, expand.to(self.device, non_blocking=True)

    def _updates(
        self, batch: RankBatch, endpoint_memory: torch.Tensor, src: torch.Tensor, dst: torch.Tensor, t: torch.Tensor
    ) -> StateUpdates:
        model, n, dev = self.model, batch.events, self.device
        s_src, s_dst = endpoint_memory[:n], endpoint_memory[n:]
        events = self.events_of(batch)
        edge = self.edge[events].to(dev, non_blocking=True)
        with torch.no_grad():
            mail_src, mail_dst = model.mail(s_src, s_dst, edge), model.mail(s_dst, s_src, edge)
        k = int(model.mail_neighbours)
        slots = 2 + 2 * k
        event = torch.arange(events.start, events.stop) if isinstance(events, slice) else events
        keys = torch.cat([event * slots, event * slots + 1])
        endpoints, endpoint_times = torch.cat([src, dst]), t.repeat(2)
        if k:
            sampled = self.sampler(batch.phase).sample(endpoints, endpoint_times, k)
            slot = 2 + torch.arange(2 * k).reshape(2, 1, k).expand(2, n, k).reshape(2 * n, k)
            delivery_keys = (keys[:, None] - keys[:, None] % slots + slot)[sampled.mask]
            delivered_to = sampled.nodes[sampled.mask]
            source_row = torch.arange(2 * n)[:, None].expand(-1, k)[sampled.mask]
            delivered_mail = torch.cat([mail_src, mail_dst])[source_row.to(dev, non_blocking=True)]
            delivered_time = endpoint_times[source_row]
        else:
            delivery_keys = delivered_to = torch.zeros(0, dtype=torch.int64)
            delivered_mail = endpoint_memory.new_zeros(0, model.mail_dim)
            delivered_time = t.new_zeros(0)
        return StateUpdates(
            endpoints,
            keys,
            endpoint_memory,
            torch.cat([mail_src, mail_dst]),
            endpoint_times.to(dev, non_blocking=True),
            delivered_to,
            delivery_keys,
            delivered_mail,
            delivered_time.to(dev, non_blocking=True),
        )

    # ---- an epoch ---------------------------------------------------------------------------------
    def run_epoch(self, epoch: Epoch) -> Mapping[str, MetricValue]:
        self._epoch = epoch.index
        if isinstance(self.model, (EdgeBank, PersistentForecast)):  # nothing to train: evaluation streams the phases it scores
            return {}
        self._reset_state()
        self.model.train()
        node_task = self.node_task  # task=node: what a step's loss is counted in, and which batches step (node_task.py)
        if node_task is not None:
            node_task.train_mode(self.model)
        self._series_vertices = self._series_unique = self._endpoints = self._endpoints_unique = 0
        exchange_s = 0.0
        epoch.expect_steps(sum(self._trains(batch) for batch in self.batches("train")), "batch")
        for batch, parts in self.prepared("train"):
            steps = self._trains(batch)
            stats = IterationStats(batch.index, units=node_task.units(batch) if node_task is not None else batch.events)
            divisor = node_task.divisor(batch) if node_task is not None else batch.global_events
            self.transport.new_step()
            with timed(self.device) as step:
                writes = []
                for i, (part, inputs) in enumerate(parts):
                    upcoming = parts[i + 1][1].series if i + 1 < len(parts) else None
                    loss_sum, _, _, updates = self._step(part, inputs, stats, upcoming)
                    if steps:
                        epoch.backward(loss_sum / divisor, final=i + 1 == len(parts))
                        stats.add_loss(loss_sum)
                    writes.append(updates)
                updates = StateUpdates.cat(writes)
                self._count_writes(updates)
                self.memory.aggregate(updates, stats)
            exchanged = self.transport.seconds()  # read once the step's work is done
            stats.comm_s += exchanged
            exchange_s += exchanged
            stats.busy_s = step.seconds - exchanged
            if steps:
                epoch.finish_iteration(stats)
        self._position = "train"
        self.artifacts.write_json("node_memory_traffic.json", self.transport.traffic_by_pair())
        return {
            "redundancy_dispatch": self._share_repeated(self._series_vertices, self._series_unique),
            "redundancy_aggregate": self._share_repeated(self._endpoints, self._endpoints_unique),
            "state_bytes": self.memory.table.nbytes,
            "exchange_s": exchange_s,  # the node-state exchanges' share of comm_s (the rest: the gradient all-reduce)
            **(node_task.epoch_metrics() if node_task is not None else {}),
        }

    def _trains(self, batch: RankBatch) -> bool:
        """Whether a training batch takes an optimizer step (task=node on affinities: only with label rows)."""
        return self.node_task is None or self.node_task.trains(batch)

    def _reset_state(self) -> None:
        """The node state as before the stream (and the persistent forecast's, under task=node)."""
        self.memory.table.reset()
        if self.node_task is not None:
            self.node_task.reset()

    @staticmethod
    def _share_repeated(total: int, unique: int) -> float:
        return 1.0 - unique / total if total else float("nan")

    def _count_writes(self, updates: StateUpdates) -> None:
        self._endpoints += updates.endpoint_count
        self._endpoints_unique += int(torch.unique(updates.vertices).numel())

    def describe(self) -> dict[str, Any]:
        return {
            "train_batches": len(self.batches("train")),
            "global_batch_events": self.batch_size * self.world_size,
            "state_rows_per_rank": self.memory.ownership.rows_on(self.rank) if hasattr(self.memory, "ownership") else None,
            **self.memory.describe(),
            **(self.node_task.describe() if self.node_task is not None else {}),
        }
