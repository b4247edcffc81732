"""REAL's reuse engine in training (sections 4.1-4.3): group-sequential execution minus redundant work.

``ReuseExecutor`` runs any plan exactly like ``SequentialExecutor`` (same iterations, loss scaling
and accounting) and, with ``reuse=True``, removes the work REAL removes:

* **Type I, snapshot-level.** The groups a rank trains are cut into *chains* of consecutive
  snapshots. For each chain, layer 0's reusable convolution (GCN, GCN aggregation or GAT, see
  ``DGNNLayer.reuse``) runs once on the chain's first snapshot and then incrementally from diff
  maps (``dygsched.models.incremental_kernels``): exact, degree-aware for GCN, softmax-aware for GAT; the
  transformation is computed once per chain (selective for changed feature rows). Per snapshot,
  the fitted cost curve of REAL appendix B picks the full graph or the diff map (``reuse_path``).
* **Type II, group-level.** With ``reuse_group=True``, groups of one rank and iteration whose
  windows overlap form one chain, so the shared snapshots' transfers and first-layer convolutions
  are computed once (parameters are frozen within an iteration); their losses are backpropagated
  together.
* **Reconstruction (section 4.3).** On a GPU only the chain's first graph and its diff maps cross
  to the device; the full graphs that higher layers need are rebuilt there with ``apply_diff``.
  On CPU there is no transfer to save and higher layers read the snapshots in place.
* **No reads back.** Preprocessing also finds, on the host, the sizes of each diff map's
  incremental step for the first layer's kernel (``with_step_sizes``), which travel with the diff
  maps: a GPU step never waits to learn a set's size (``dygsched.models.incremental_kernels``).
* **Pipeline (section 4.1.3).** On a GPU the next chain's transfer runs on a copy stream and the
  chain's first-layer convolutions on a conv stream, while the main stream runs the dense work and
  backward of the chain before; events order them (``dygsched.engine.snapshot_groups.streams``): one
  event per chain, recorded after its copies, so a chain waits for its own transfer and never for
  the next chain's, queued behind it on the copy stream. On CPU the same code runs in order.

``reuse=False`` is ``SequentialExecutor`` unchanged, whatever the other options say. During profiling
epochs each group's time is recorded as usual, plus the seconds of its reusable part (transfer and
first-layer convolutions), from which the planner's reuse table is built (``planner.reuse_table``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

import torch

from dygsched.data.diffmap import DiffMap, EdgeSet, GraphDiffs, apply_diff, build_diff_maps, coalesce
from dygsched.data.groups import SnapshotGroup
from dygsched.data.temporal_graph import Snapshot, TemporalGraph
from dygsched.engine import comm
from dygsched.engine.snapshot_groups.aggregation_timing import chain_steps, choose_paths, fit_conv_cost_curve, fit_order_costs
from dygsched.engine.snapshot_groups.executor import EpochRun, Iteration, SequentialExecutor, first_layer, loss_scale
from dygsched.engine.snapshot_groups.profiler import PhaseTimer
from dygsched.engine.snapshot_groups.streams import Streams
from dygsched.engine.strategy import IterationStats, MetricValue, Missing
from dygsched.errors import ConfigError
from dygsched.models.dgnn import DGNN, DGNNLayer
from dygsched.models.hooks import PLAIN, GivenFirstConv, LayerHooks
from dygsched.planner.aggregation_cost import ChainStep, ConvCostCurve, OrderCosts, choose_projection_first

REUSE_PATHS = ("adaptive", "diff", "full")


@dataclass(frozen=True)
class Chain:
    """Snapshots ``start .. stop-1`` whose first-layer convolutions are computed once, for ``groups``."""

    start: int
    stop: int
    groups: tuple[int, ...]  # indices into the training groups, in time order


def plan_chains(groups: Sequence[SnapshotGroup], indices: Sequence[int], share: bool) -> list[Chain]:
    """Cut one rank's groups of one iteration into chains.

    Without ``share`` every group is its own chain (type I only). With it, groups whose snapshot
    ranges overlap are merged, in time order (type II): ``[0, 4)`` and ``[1, 5)`` become one chain
    over ``[0, 5)`` that computes snapshots 1-3 once.
    """
    ordered = sorted(zip(indices, groups, strict=True), key=lambda pair: (pair[1].start, pair[1].stop))
    chains: list[Chain] = []
    for index, group in ordered:
        last = chains[-1] if chains else None
        if share and last is not None and group.start < last.stop:
            chains[-1] = Chain(last.start, max(last.stop, group.stop), last.groups + (index,))
        else:
            chains.append(Chain(group.start, group.stop, (index,)))
    return chains


@dataclass(frozen=True)
class LoadedChain:
    """A chain's inputs on the device: first graph, diff maps, features, targets; bytes moved."""

    chain: Chain
    x: torch.Tensor
    first: EdgeSet
    diffs: tuple[DiffMap, ...]
    targets: tuple[tuple[torch.Tensor, ...], ...]  # (y, node_mask) per snapshot, and its links under task=link
    moved: int
    ready: torch.cuda.Event | None = None  # recorded on the copy stream after this chain's copies (GPU)


def moves_chains(device: torch.device) -> bool:
    """Whether a chain's inputs cross to ``device`` and its full graphs are rebuilt there (REAL 4.3):
    on a GPU; on CPU the snapshots are read where they are."""
    return device.type != "cpu"


class HostCache:
    """What preprocessing computes once per run on each rank: diff maps (each with the sizes of the
    first layer's incremental step along it, ``step_sizes``), coalesced graphs, paths."""

    def __init__(
        self,
        graph: TemporalGraph,
        device: torch.device,
        kind: str,
        path: str,
        curve: ConvCostCurve | None,
        layer: DGNNLayer | None = None,
    ) -> None:
        self.graph = graph
        self.kind = kind  # the first layer's reuse kind: gcn, gcn_aggregate or gat
        self.path = path
        self.pin = device.type == "cuda"
        start = time.perf_counter()
        self.diffs: GraphDiffs = build_diff_maps(graph)
        sized = with_step_sizes(graph, self.diffs, layer) if layer is not None else self.diffs.diffs
        self.preprocess_s = time.perf_counter() - start
        self._diffs = tuple(_pinned(d) if self.pin and d is not None else d for d in sized)
        self.curve = curve
        self._edge_sets: dict[int, EdgeSet] = {}
        self._paths: dict[tuple[int, int], list[str]] = {}
        self._steps: dict[tuple[int, int], list[ChainStep]] = {}

    def edge_set(self, t: int) -> EdgeSet:
        if t not in self._edge_sets:
            s = self.graph.snapshots[t]
            edges = coalesce(s.edge_index, s.edge_weight, s.num_nodes)
            self._edge_sets[t] = _pinned(edges) if self.pin else edges
        return self._edge_sets[t]

    def diff(self, t: int) -> DiffMap:
        diff = self._diffs[t]
        assert diff is not None, "snapshot 0 has no diff map"
        return diff

    def paths(self, chain: Chain) -> list[str]:
        """Full graph or diff map for each snapshot after the chain's first."""
        if self.path != "adaptive":  # a snapshot kept whole is computed in full on every path
            return ["full" if self.diff(t).is_full else self.path for t in range(chain.start + 1, chain.stop)]
        key = (chain.start, chain.stop)
        if key not in self._paths:
            assert self.curve is not None
            diffs = [self.diff(t) for t in range(chain.start + 1, chain.stop)]
            self._paths[key] = choose_paths(self.curve, self.edge_set(chain.start), diffs, self.kind)
        return self._paths[key]

    def steps(self, chain: Chain) -> list[ChainStep]:
        """The chain's workload per snapshot, for the choice of projection order."""
        key = (chain.start, chain.stop)
        if key not in self._steps:
            diffs = [self.diff(t) for t in range(chain.start + 1, chain.stop)]
            self._steps[key] = chain_steps(self.edge_set(chain.start), diffs, self.paths(chain), self.kind)
        return self._steps[key]


def with_step_sizes(graph: TemporalGraph, diffs: GraphDiffs, layer: DGNNLayer) -> tuple[DiffMap | None, ...]:
    """Each diff map with the sizes of ``layer``'s incremental step along it (``DGNNLayer.step_sizes``),
    found here on the host from the graph before it, once per run: a GPU then reads none back."""
    before = coalesce(graph.snapshots[0].edge_index, graph.snapshots[0].edge_weight, graph.num_nodes)
    sized: list[DiffMap | None] = [None]
    for diff in diffs.diffs[1:]:
        assert diff is not None
        after = apply_diff(before, diff)
        sized.append(replace(diff, step_sizes=layer.step_sizes(before, after, diff)))
        before = after
    return tuple(sized)


def _pinned(value: Any) -> Any:
    """A copy of a frozen dataclass of tensors in page-locked memory (asynchronous copies need it);
    nested dataclasses (a diff map's kept full graph) are pinned too."""
    fields = {name: getattr(value, name) for name in value.__dataclass_fields__}

    def pin(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return v.pin_memory()
        return _pinned(v) if hasattr(v, "__dataclass_fields__") else v

    return type(value)(**{k: pin(v) for k, v in fields.items()})


class ReuseExecutor(SequentialExecutor):
    """``SequentialExecutor`` with REAL's type I and type II reuse (see the module docstring).

    ``reuse``: master switch (False: plain group-sequential execution). ``reuse_group``: merge
    overlapping groups of a rank's iteration (type II). ``reuse_path``: ``adaptive`` (REAL's cost
    curve, fitted once per run on rank 0 and broadcast), ``diff`` (always incremental) or ``full``
    (every snapshot's first-layer aggregation from its full graph; the transformation is still
    shared). ``streams``: the triple-stream pipeline on GPU.
    """

    def __init__(self, reuse: bool = False, reuse_group: bool = True, reuse_path: str = "adaptive", streams: bool = True) -> None:
        if reuse_path not in REUSE_PATHS:
            raise ConfigError(f"unknown sched.reuse_path '{reuse_path}' (choose from {', '.join(REUSE_PATHS)})")
        self.reuse = bool(reuse)
        self.reuse_group = bool(reuse_group)
        self.reuse_path = reuse_path
        self.use_streams = bool(streams)
        self.cache: HostCache | None = None
        self.streams: Streams | None = None
        self.queue: list[Chain] = []  # this rank's chains still to train this epoch, in order
        self.ahead: LoadedChain | None = None  # the next chain, already on its way to the device
        self.order_costs: OrderCosts | None = None  # timed in preparation where layer 0's order can change
        self.project_first: bool | None = None  # this epoch's order for such a layer (REAL 4.1.2's case 1 or 2)

    @property
    def merges_pairs(self) -> bool:
        return self.reuse and self.reuse_group

    def check_model(self, model: DGNN) -> None:
        """Reuse needs layer 0 to convolve its input (``DGNNLayer.reuse``); GC-LSTM convolves its hidden state."""
        layer = first_layer(model)
        if self.reuse and layer.reuse is None:
            raise ConfigError(
                "REAL's reuse engine computes layer 0's convolution of its input once per chain of snapshots, and "
                f"{type(layer).__name__} has none to reuse (its graph convolution reads the hidden state): "
                "set sched.executor.reuse=false or use another model"
            )

    @contextmanager
    def epoch_scope(self, run: EpochRun) -> Iterator[None]:
        if self.reuse and (self.cache is None or self.cache.graph is not run.graph):
            self.prepare(run.objective.model, run.graph, run.device)
        if self.reuse:  # this rank's chains for the whole epoch, so transfers can run an iteration ahead
            rank, groups = run.rank, run.train_groups
            self.queue = [
                c for it in run.iterations for c in plan_chains([groups[k] for k in it[rank]], it[rank], self.reuse_group)
            ]
            self.ahead = None
            if self.order_costs is not None:  # every rank's chains, so every rank picks the same order
                chains = [
                    c
                    for it in run.iterations
                    for mine in it
                    for c in plan_chains([groups[k] for k in mine], mine, self.reuse_group)
                ]
                assert self.cache is not None  # prepared just above
                self.project_first = choose_projection_first([self.cache.steps(c) for c in chains], self.order_costs)
        yield

    def prepare(self, model: DGNN, graph: TemporalGraph, device: torch.device) -> None:
        """Preprocessing, once per run: diff maps, the cost curves (rank 0 fits, all use them), streams.

        Where layer 0 can project before or after its aggregation (``projection_widths``), the
        aggregation is timed at both widths and the projection too (``fit_order_costs``), and
        each epoch runs the order predicted faster over that epoch's chains."""
        layer = first_layer(model)
        kind: str | None = getattr(layer, "reuse", None)
        if kind is None:
            raise ConfigError(f"sched.reuse=true but {type(layer).__name__} has no reusable first-layer convolution")
        curve, self.order_costs, self.project_first = None, None, None
        if self.reuse_path == "adaptive":
            widths = layer.projection_widths()
            fitted = (
                (fit_conv_cost_curve(device), fit_order_costs(device, *widths) if widths else None) if comm.rank() == 0 else None
            )
            curve, self.order_costs = comm.broadcast_object(fitted)
        self.cache = HostCache(graph, device, kind, self.reuse_path, curve, layer)
        self.streams = Streams.create(device, self.use_streams)

    def epoch_metrics(self) -> Mapping[str, MetricValue]:
        """``reuse_preprocess_s``: the diff maps' build time with their steps' sizes (once per run), only when reuse runs;
        ``reuse_case``: REAL 4.1.2's case the engine chose this epoch (1: project first, 2:
        aggregate first), only where it chose one."""
        if self.cache is None:
            missing = Missing("no reuse engine ran (sched.executor.reuse=false)")
            return {"reuse_preprocess_s": missing, "reuse_case": missing}
        case: MetricValue = Missing("layer 0's order is fixed (by the model, the config or sched.executor.reuse_path)")
        if self.project_first is not None:
            case = 1.0 if self.project_first else 2.0
        return {"reuse_preprocess_s": self.cache.preprocess_s, "reuse_case": case}

    def train_iteration(self, run: EpochRun, iteration: Iteration, stats: IterationStats) -> None:
        if not self.reuse:
            return super().train_iteration(run, iteration, stats)
        assert self.cache is not None and self.streams is not None
        mine = iteration[run.rank]
        scale = loss_scale(iteration)
        stats.units = len(mine)
        train_groups, device, profiler = run.train_groups, run.device, run.profiler
        stats.add_bytes("host_to_device", 0)
        chains = plan_chains([train_groups[k] for k in mine], mine, self.reuse_group)
        if self.streams.conv is not None:  # the weights changed at the last step: conv work starts after it
            self.streams.conv.wait_stream(torch.cuda.current_stream(device))
        # Transfers run one chain ahead, across iterations too (data does not depend on the weights);
        # profiling times each chain's transfer in its own phase, so nothing is loaded ahead then.
        prefetch = profiler is None
        for position, chain in enumerate(chains):
            timer = PhaseTimer(device) if profiler is not None else None
            assert self.queue and self.queue[0] == chain
            self.queue.pop(0)
            if prefetch:
                loaded = self.ahead if self.ahead is not None and self.ahead.chain == chain else self.load(chain, device)
                self.ahead = self.load(self.queue[0], device) if self.queue else None  # overlaps this chain
            else:
                with timer.phase("host_to_device", self.streams.copy) if timer else nullcontext():
                    loaded = self.load(chain, device)
            assert loaded is not None
            # this chain's copies only: the next chain's, queued on the copy stream behind them, keep running
            self.streams.handoff_at(loaded, loaded.ready, self.streams.conv)
            self.streams.handoff_at(loaded, loaded.ready)
            stats.add_bytes("host_to_device", loaded.moved)
            losses = self.train_chain(run, loaded, scale, timer, final=position == len(chains) - 1)
            if profiler is not None and timer is not None:
                if len(chain.groups) == 1:
                    profiler.record(chain.groups[0], timer, reusable=timer.seconds["host_to_device"] + timer.seconds["spatial"])
                elif len(chain.groups) == 2:  # a merged pair: what type II reuse saves (REAL eq. 17's table)
                    first, second = sorted(chain.groups)
                    profiler.record_pair((first, second), timer)
            for loss in losses:
                stats.add_loss(loss, scale)

    def load(self, chain: Chain, device: torch.device) -> LoadedChain:
        """The chain's first graph, diff maps, features and targets on ``device`` (copy stream on GPU)."""
        assert self.cache is not None and self.streams is not None
        cache, snapshots = self.cache, self.cache.graph.snapshots
        first = cache.edge_set(chain.start)
        diffs = tuple(cache.diff(t) for t in range(chain.start + 1, chain.stop))
        x = snapshots[chain.start].x
        targets = tuple(target_tensors(snapshots[t]) for t in range(chain.start, chain.stop))
        if not moves_chains(device):
            return LoadedChain(chain, x, first, diffs, targets, 0)
        moved = first.nbytes() + sum(d.nbytes() for d in diffs) + x.element_size() * x.nelement()
        moved += sum(t.element_size() * t.nelement() for held in targets for t in held)
        with self.streams.on(self.streams.copy):
            loaded = LoadedChain(
                chain,
                x.to(device, non_blocking=True),
                first.to(device, non_blocking=True),
                tuple(d.to(device, non_blocking=True) for d in diffs),
                tuple(tuple(t.to(device, non_blocking=True) for t in held) for held in targets),
                moved,
            )
        return replace(loaded, ready=self.streams.mark(self.streams.copy))

    def train_chain(
        self, run: EpochRun, loaded: LoadedChain, scale: float, timer: PhaseTimer | None, final: bool
    ) -> list[torch.Tensor]:
        """Forward every group of the chain on shared first-layer outputs, one backward; the groups'
        scaled losses, detached, left on the device (reading one would stall the queue before the backward).

        Profiling times the first layer's shared convolutions as ``spatial`` and the groups'
        forward (higher layers' spatial work included) as ``temporal``, as before the reuse engine
        existed; the shared part is what another group of the chain does not redo.
        """
        assert self.cache is not None and self.streams is not None
        objective, chain = run.objective, loaded.chain
        model = objective.model
        streams = self.streams
        paths = self.cache.paths(chain)  # chosen once per chain and kept: preprocessing, not training
        with timer.phase("spatial", streams.conv) if timer else nullcontext(), streams.on(streams.conv):
            order = {} if self.project_first is None else {"project_first": self.project_first}
            conv_outs = first_layer(model).conv_chain(loaded.x, loaded.first, loaded.diffs, paths, **order)
            snapshots = self.chain_snapshots(run.graph, loaded, run.device)
        streams.handoff([conv_outs, snapshots], streams.conv)
        total: torch.Tensor | None = None
        losses = []
        with timer.phase("temporal") if timer else nullcontext():
            for k in chain.groups:
                group = run.train_groups[k]
                lo, hi = group.start - chain.start, group.stop - chain.start
                hooks: LayerHooks = GivenFirstConv(conv_outs[lo:hi], PLAIN)
                loss = objective.loss_from_predictions(model(snapshots[lo:hi], hooks=hooks), snapshots[hi - 1], scale)
                losses.append(loss.detach())
                total = loss if total is None else total + loss
        with timer.phase("backward") if timer else nullcontext():
            assert total is not None
            run.backward(total, final)
        return losses

    def chain_snapshots(self, graph: TemporalGraph, loaded: LoadedChain, device: torch.device) -> list[Snapshot]:
        """The chain's snapshots for the layers above the reused convolution.

        On CPU these are the graph's own snapshots. On a GPU the full graphs are rebuilt on the
        device from the first graph and the diff maps (REAL 4.3), so no full graph crosses again.
        """
        chain = loaded.chain
        if not moves_chains(device):
            return list(graph.snapshots[chain.start : chain.stop])
        edges, x = loaded.first, loaded.x
        rebuilt = []
        for offset, (y, mask, *links) in enumerate(loaded.targets):
            if offset:
                diff = loaded.diffs[offset - 1]
                edges = apply_diff(edges, diff)
                if diff.changed_nodes.numel():
                    x = x.index_copy(0, diff.changed_nodes, diff.changed_x)
            snapshot = graph.snapshots[chain.start + offset]
            edge_index, edge_weight = edges.expanded(snapshot.edge_index.size(1))  # its raw edges: a size the host knows
            target_index = snapshot.target_index
            rebuilt.append(Snapshot(edge_index, edge_weight, x, y, mask, links[0] if links else None, target_index))
        return rebuilt


def target_tensors(snapshot: Snapshot) -> tuple[torch.Tensor, ...]:
    """What a rebuilt snapshot takes from the graph's own: targets and node mask, and the pairs it
    scores under link prediction."""
    held = (snapshot.y, snapshot.node_mask)
    return held if snapshot.links is None else (*held, snapshot.links)
