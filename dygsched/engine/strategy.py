"""The one interface every training strategy implements, and what the worker hands it.

A strategy is named by ``conf/sched/<name>.yaml``, whose ``_target_`` is its configuration class (a
frozen ``StrategyConfig`` dataclass: its flat settings, its typed blocks and its ``_target_`` parts,
the one place of their defaults); the run's ``sched`` block composes into it, and its ``build()``
makes the strategy, ``Strategy(config)``, the one way every strategy is built. It reads the run's
own settings from the typed run (``RunConfig``: ``settings.window``, ``settings.split.train``). It
owns everything that differs between the published methods:

* its units of work, built from the data (sliding snapshot groups; group x node-partition blocks;
  event batches) and its planning, including any profiling or re-planning timeline;
* its objective (``objective(model)``: the module the optimizer trains) and its evaluation;
* ``run_epoch``: every optimizer step of one epoch, each ended by ``Epoch.finish_iteration``, and
  as soon as it knows how many there will be (after any planning), ``Epoch.expect_steps`` (the
  progress bar's total, so it can show the time left);
* its checkpoint state (``state_dict`` / ``load_state_dict``).

The worker (``dygsched.engine.worker``) owns only what every strategy shares: the process group,
the model and optimizer, gradient synchronisation (inside ``finish_iteration``), metrics,
checkpoint files and failure handling. It imports no strategy.

Metrics are honest: a strategy returns, per epoch, the metrics it measured, and ``Missing(reason)``
for one it does not measure; the worker records those as NaN with the reason, never as 0.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from dygsched.data.kinds import DynamicData
from dygsched.data.temporal_graph import Task, TemporalGraph
from dygsched.engine import comm
from dygsched.engine.gradient_sync import GradientSync
from dygsched.engine.run_config import NodeTask, RunConfig
from dygsched.engine.strategy_config import StrategyConfig
from dygsched.engine.timing import Region
from dygsched.errors import ConfigError
from dygsched.metrics.atomic import write_json
from dygsched.metrics.missing import MetricValue, Missing  # noqa: F401 (the strategies' and the worker's names for them)
from dygsched.metrics.run_folder import RunFolder
from dygsched.models.flops import FlopCounter
from dygsched.planner.plan import Plan


@dataclass
class IterationStats:
    """One rank's share of one optimizer step.

    ``units``: units of work whose losses this rank reports (0 when it only helped, e.g. ESDG's
    earlier ranks); ``loss_sum``: the sum of their unscaled losses, a float or a 0-dimensional
    tensor on the device (``add_loss``: kept there, summed in float64, and read by the worker once
    per epoch, so a step never waits for the device to report its loss); ``busy_s``: compute time;
    ``wait_s``: time blocked on other ranks; ``comm_s``: time moving data; ``bytes[kind]``: bytes
    this rank moved of each kind (``allreduce``, ``hidden_state``, ``host_to_device``, ...).

    Times are of finished work (``dygsched.engine.timing``): ``add_time(name, region)`` keeps a
    region pending, and ``settle()`` adds the pending regions to their fields once, when the step's
    figures are read (``Epoch.finish_iteration`` settles before recording), so timing a region
    never stalls the host while the device still works.
    """

    iteration: int
    units: int = 0
    loss_sum: float | torch.Tensor = 0.0
    busy_s: float = 0.0
    wait_s: float = 0.0
    comm_s: float = 0.0
    bytes: dict[str, int] = field(default_factory=dict)
    pending: list[tuple[str, Region]] = field(default_factory=list, repr=False, compare=False)

    def add_bytes(self, kind: str, count: int) -> None:
        self.bytes[kind] = self.bytes.get(kind, 0) + int(count)

    def add_loss(self, loss: torch.Tensor, scale: float = 1.0) -> None:
        """Add the unscaled loss ``loss / scale`` where it is (on the device), in float64: no read
        on the host, and the same sum a float would give (float32 to float64 is exact)."""
        self.loss_sum = self.loss_sum + unscaled_loss(loss, scale)

    def add_time(self, name: str, region: Region) -> None:
        """Add ``region``'s seconds to the field ``name`` (``busy_s``, ``wait_s``, ``comm_s``) when settled."""
        if name not in ("busy_s", "wait_s", "comm_s"):
            raise ValueError(f"no time field {name!r} in IterationStats (busy_s, wait_s, comm_s)")
        self.pending.append((name, region))

    def settle(self) -> IterationStats:
        """Read the pending regions into their fields (waiting for their work, not the device)."""
        for name, region in self.pending:
            setattr(self, name, getattr(self, name) + region.seconds)
        self.pending.clear()
        return self

    def busy_from(self, step: Region) -> None:
        """``busy_s``: the whole step's time (``step``, stopped) less the waiting and communicating
        timed inside it; settles the regions pending so far."""
        self.settle()
        self.busy_s = step.seconds - self.wait_s - self.comm_s


def unscaled_loss(loss: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """``loss / scale`` as a float64 tensor where ``loss`` is, detached: what a step reports without
    reading the device (``float(loss) / scale`` would wait for it)."""
    value = loss.detach().to(torch.float64)
    return value / scale if scale != 1.0 else value


def is_link_task(data: DynamicData) -> bool:
    """Whether a run on ``data`` predicts links: an event stream (unless ``task=node`` reads its
    labels), or snapshots under ``task=link``."""
    return data.task is Task.LINK


@dataclass(frozen=True)
class Artifacts:
    """Where rank 0 writes a strategy's files (plans, profiles) in the run folder; other ranks write nothing."""

    folder: RunFolder | None
    is_main: bool

    def write_json(self, name: str, data: Any) -> None:
        if self.is_main and self.folder is not None:
            write_json(self.folder.path / name, data)

    def write_plan(self, plan: Plan[Any], name: str = "plan.json") -> None:
        if self.is_main and self.folder is not None:
            self.folder.write_plan(plan.to_dict(), name)

    @property
    def cache_dir(self) -> Path | None:
        """A folder shared by the runs of one results folder, for what is worth computing once
        (a graph's METIS partition): ``<results_dir>/.cache``."""
        return Path(self.folder.results_dir) / ".cache" if self.folder is not None else None


@dataclass(frozen=True)
class RunContext:
    """What a strategy gets once per run, on every rank, before the model exists."""

    data: DynamicData
    settings: RunConfig  # the run's typed configuration: its run-level settings (window, split, seed, ...)
    rank: int
    world_size: int
    device: torch.device
    artifacts: Artifacts

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def broadcast_from_rank0(value: Any) -> Any:
    """Rank 0's ``value`` on every rank (the plan: rank 0 plans, no rank re-plans on its own)."""
    return comm.broadcast_object(value, src=0)


class Epoch:
    """One epoch as a strategy runs it: the trained module, the optimizer step, and the sinks.

    ``finish_iteration(stats)`` ends every optimizer step on every rank: it waits for the slowest
    rank (``wait_s``), sums the ranks' gradients (``comm_s``, ``bytes["allreduce"]``), steps the
    optimizer, clears the gradients and records the iteration. With the all-reduce overlapping
    the backward there is no separate wait: waiting for the slowest rank is part of ``comm_s``. ``backward(loss, final=True)``
    marks the last backward of this rank's step, which the gradient synchronisation may overlap.
    ``record`` adds an epoch-level row (e.g. a plan switch). ``expect_steps(count, unit)`` says how
    many optimizer steps this epoch takes, once the strategy knows (after planning, which is part of
    the timed epoch and may need every rank): ``on_expected`` receives it (rank 0's progress bar).
    """

    def __init__(
        self,
        index: int,
        module: nn.Module,
        optimizer: torch.optim.Optimizer,
        sync: GradientSync,
        device: torch.device,
        rank: int,
        world_size: int,
        on_iteration: Callable[[IterationStats], None],
        record: Callable[[str, str, float], None],
        flops: FlopCounter | None = None,
        on_expected: Callable[[int, str], None] | None = None,
    ) -> None:
        self.index = index
        self.module = module
        self.optimizer = optimizer
        self.sync = sync
        self.device = device
        self.rank = rank
        self.world_size = world_size
        self._on_iteration = on_iteration
        self._record = record
        self.flops = flops
        self._on_expected = on_expected
        self._ready = torch.zeros(1, device=device)

    def backward(self, loss: torch.Tensor, final: bool = False) -> None:
        if final:
            with self.sync.final_backward():
                loss.backward()
        else:
            loss.backward()

    @contextmanager
    def final_backward(self) -> Iterator[None]:
        with self.sync.final_backward():
            yield

    @property
    def measures_wait(self) -> bool:
        """Whether ``wait_s`` is measured apart from ``comm_s``: not when the gradient all-reduce
        overlaps the backward, whose first buckets leave before a rank could say it is ready."""
        return not self.sync.overlap

    def finish_iteration(self, stats: IterationStats) -> None:
        clock = comm.clock_for(self.device)  # NCCL's work by events, gloo's (which blocks the host) by the host clock
        if self.world_size > 1 and self.measures_wait:
            waiting = Region(clock)
            comm.all_reduce(self._ready)  # every rank, busy or idle: the time until the slowest is ready
            stats.add_time("wait_s", waiting.stop())
        communicating = Region(clock)  # until the summed gradients are in place (the planner's alpha)
        moved = self.sync.synchronize()
        stats.add_time("comm_s", communicating.stop())
        stats.bytes["allreduce"] = moved
        self.optimizer.step()
        self.sync.zero_grad()
        self._on_iteration(stats.settle())

    def record(self, phase: str, metric: str, value: float) -> None:
        self._record(phase, metric, value)

    def expect_steps(self, count: int, unit: str = "step") -> None:
        """This epoch takes ``count`` optimizer steps (``finish_iteration`` calls), each training one
        ``unit`` ("iteration", "window", "batch"). A strategy that never says so still shows its rate."""
        if self._on_expected is not None:
            self._on_expected(int(count), unit)


class Strategy(ABC):
    """A way of splitting DGNN training over ranks (see the module docstring).

    ``data_kind``: the data type it trains on (``TemporalGraph`` or ``EventStream``). ``exact``:
    whether its parameters after any number of steps equal single-process training on the same
    units, step for step (the contract tests hold it to that). ``gradient_staleness``: 1 when each
    step applies the previous step's summed gradients (``GradientSync``), so the all-reduce
    overlaps the next step; 0 (the default) for fresh gradients. ``predicts_links``: it trains link
    prediction (event streams, or snapshots under ``task=link``) and reads its settings
    (``eval_negatives``, ``eval.negatives``; on streams ``split.new_nodes``, ``split.by``); others refuse them.
    ``communicates_in_backward``: its backward pass runs collectives of its own (all-to-alls of
    halos or rows), which bucket all-reduces started during that backward would interleave with in
    a different order on each rank, so ``grad_sync.overlap=true`` is refused for it. ``exact``,
    ``communicates_in_backward`` and ``gradient_staleness`` are class defaults a strategy may set per
    instance, from its configuration. ``config``: its configuration (``StrategyConfig``), what
    ``StrategyConfig.build`` hands the constructor; ``name``: the ``conf/sched`` file's.
    """

    data_kind: ClassVar[type] = object
    exact: bool = True
    predicts_links: ClassVar[bool] = False
    link_procedures: ClassVar[tuple[str, ...]] = ("windows",)  # the link.procedure values it trains
    communicates_in_backward: bool = False
    gradient_staleness: int = 0

    def __init__(self, config: StrategyConfig) -> None:
        self.config = config
        self.name = config.name

    def check(self, data: DynamicData, settings: RunConfig, world_size: int) -> None:
        """Raise ``ConfigError`` if this strategy cannot run on ``data`` with ``world_size`` ranks;
        runs in the launching process, before any rank starts."""
        if not isinstance(data, self.data_kind):
            raise ConfigError(
                f"sched={self.name} trains on {self.data_kind.__name__} data, but the dataset gives {type(data).__name__} "
                "(cut a stream into snapshots with dataset.snapshot=daily, weekly, ... or a number of time units; "
                "for an edge list, set dataset.kind)"
            )
        links = is_link_task(data)
        if links and not self.predicts_links:
            raise ConfigError(f"sched={self.name} does not train link prediction (task=link): use task=node or another sched")
        stream_only = {
            "split.new_nodes": settings.split.new_nodes != 0.0,
            "split.by": settings.split.by != "events",
        }
        link_only = {
            "eval_negatives": settings.eval_negatives != 1,
            "eval.negatives": not settings.eval.default_negatives,
            "eval.one_vs_many": settings.eval.one_vs_many != 0,
            "tgb_negatives": bool(settings.tgb_negatives),
            **stream_only,
        }
        if not isinstance(data, TemporalGraph):  # a stream's node task splits it as its link task does
            link_only.pop("split.by")
        if not links and any(link_only.values()):
            named = ", ".join(name for name, given in link_only.items() if given)
            raise ConfigError(
                f"{named} set link prediction's evaluation, and this run trains node targets (task=link predicts links)"
            )
        if links and isinstance(data, TemporalGraph) and settings.link.procedure not in self.link_procedures:
            raise ConfigError(
                f"link.procedure={settings.link.procedure}: sched={self.name} trains {', '.join(self.link_procedures)} "
                "(UTG's procedure carries each window's state into the next: sched=psg at world_size=1 trains it)"
            )
        if settings.node_task != NodeTask() and (links or isinstance(data, TemporalGraph)):
            raise ConfigError(
                "node_task.* sets node property prediction on a labelled event stream (task=node); this run "
                + ("predicts links" if links else "trains snapshot node targets")
            )
        if settings.eval.one_vs_many and (
            settings.eval_negatives != 1 or not settings.eval.default_negatives or settings.tgb_negatives
        ):
            raise ConfigError(
                f"eval.one_vs_many={settings.eval.one_vs_many} ranks every positive against stored negatives: leave "
                "eval_negatives at 1, eval.negatives at random and tgb_negatives unset"
            )
        if links and isinstance(data, TemporalGraph) and any(stream_only.values()):
            named = ", ".join(name for name, given in stream_only.items() if given)
            raise ConfigError(
                f"{named} split or score event streams; snapshot link prediction splits its groups by time "
                "(split.train, split.val) and draws its negatives by eval.negatives"
            )

    def check_model(self, model: nn.Module) -> None:
        """Raise ``ConfigError`` if this strategy cannot train ``model`` (before any rank starts)."""

    @abstractmethod
    def setup(self, run: RunContext) -> None:
        """On every rank, once per run: build the units of work (planning may wait for the first epoch)."""

    @abstractmethod
    def objective(self, model: nn.Module) -> nn.Module:
        """The module the optimizer trains and checkpoints hold: the model inside the strategy's loss."""

    @abstractmethod
    def run_epoch(self, epoch: Epoch) -> Mapping[str, MetricValue]:
        """Train one epoch, ending every optimizer step with ``epoch.finish_iteration`` and saying how
        many there will be with ``epoch.expect_steps`` once known; returns this rank's epoch-level
        metrics (measured values, or ``Missing`` with the reason)."""

    @abstractmethod
    def evaluate(self, phase: str) -> Mapping[str, MetricValue]:
        """Loss and the task's metric over the ``val`` or ``test`` part, the same on every rank."""

    def evaluation_metrics(self, data: DynamicData, settings: RunConfig) -> frozenset[str]:
        """The names ``evaluate`` reports on ``data`` (what ``early_stop.metric`` may name), known
        before any rank starts: the loss and the task's metric (accuracy, or MSE for regression)."""
        task = getattr(data, "task", None)
        if getattr(task, "name", "") == "LINK":
            return settings.link_metric_names(ranking=settings.eval_negatives > 1 or settings.eval.one_vs_many > 1)
        return frozenset({"loss", "accuracy" if getattr(task, "name", "") == "CLASSIFICATION" else "mse"})

    def lr_multiplier(self, epoch: int) -> float:
        """Factor on the configured learning rate in ``epoch`` (e.g. for more units per step)."""
        return 1.0

    def describe(self) -> dict[str, Any]:
        """Run-level facts for the summary (units, plan size, predicted epoch time)."""
        return {}

    def collect_for_checkpoint(self) -> None:
        """Every rank, at an epoch's end before rank 0 writes the checkpoint: bring to rank 0 what
        ``state_dict`` keeps of per-rank state (a collective; nothing by default)."""

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint after the last finished epoch keeps (plain containers and tensors)."""
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from ``state_dict()``'s output (called after ``setup``)."""
