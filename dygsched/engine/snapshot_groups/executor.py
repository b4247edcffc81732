"""How a rank trains the snapshot groups of one plan iteration: the executor contract.

``SnapshotGroupStrategy`` runs the iteration loop (loss scaling, timing, the optimizer step);
an executor trains the groups of one iteration on this rank (``train_iteration``), with any
set-up around an epoch (``epoch_scope``). Every executor scales each group's loss by
``1 / m`` for the ``m`` groups of the iteration (over all ranks), so the gradients the ranks
accumulate sum to the gradient of the iteration's mean loss: the step single-process training
takes on the same groups.

``SequentialExecutor`` trains a rank's groups one after another: PSG when the plan gives one
group per rank per iteration, DyGNeX/REAL cross-group training when it gives several. REAL's
reuse engine, BLAD's pipeline and ESDG's snapshot split are the other executors.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import ClassVar

import torch

from dygsched.data.groups import SnapshotGroup
from dygsched.data.temporal_graph import Snapshot, TemporalGraph
from dygsched.engine.objective import GroupObjective
from dygsched.engine.snapshot_groups.profiler import PhaseTimer, Profiler, TimedHooks
from dygsched.engine.strategy import Epoch, IterationStats, MetricValue
from dygsched.errors import ConfigError
from dygsched.models.dgnn import DGNN, DGNNLayer, State
from dygsched.models.hooks import PLAIN, LayerHooks
from dygsched.models.inherited_states import InheritedStates

Iteration = tuple[tuple[int, ...], ...]  # one plan iteration: the group indices of each rank


def first_layer(model: DGNN) -> DGNNLayer:
    """``model.layers[0]`` as the layer it is (indexing an ``nn.ModuleList`` is typed as a plain ``Module``)."""
    return model.dgnn_layers()[0]


@dataclass(frozen=True)
class EpochRun:
    """One rank's epoch, as every executor receives it: the objective, the data, where this
    rank runs, the epoch (for its backward and optimizer steps) and the profiler (``None``
    outside profiling epochs)."""

    objective: GroupObjective
    graph: TemporalGraph
    train_groups: tuple[SnapshotGroup, ...]
    iterations: tuple[Iteration, ...]
    rank: int
    world_size: int
    device: torch.device
    epoch: Epoch | None = None
    profiler: Profiler | None = None
    # link.procedure=utg: the states each window leaves for the next (``InheritedStates``); None: zero states
    inherited: dict[int, list[State | None]] | None = None

    def backward(self, loss: torch.Tensor, final: bool) -> None:
        """``loss.backward()``; ``final`` marks this rank's last backward of the iteration."""
        if self.epoch is not None:
            self.epoch.backward(loss, final)
        else:
            loss.backward()


def fetch(graph: TemporalGraph, group: SnapshotGroup, device: torch.device) -> tuple[tuple[Snapshot, ...], int]:
    """The group's snapshots on ``device`` and the bytes that copy moved."""
    snapshots = group.snapshots(graph)
    if device.type == "cpu":
        return snapshots, 0
    return tuple(s.to(device) for s in snapshots), sum(s.nbytes() for s in snapshots)


def loss_scale(iteration: Iteration) -> float:
    """``1 / m`` for the ``m`` groups the iteration trains over all ranks."""
    return 1.0 / max(1, sum(len(groups) for groups in iteration))


class GroupExecutor(ABC):
    """The contract: ``train_iteration`` trains this rank's part of one plan iteration.

    ``exact``: the parameters equal single-process training on the same iterations.
    ``profiles``: it can run profiling epochs (time each group whole, on one rank).
    ``merges_pairs``: it trains a rank's overlapping groups as one chain (type II reuse).
    """

    exact: ClassVar[bool] = True
    profiles: ClassVar[bool] = True

    @property
    def merges_pairs(self) -> bool:
        return False

    def check(self, window: int, world_size: int, profile_epochs: int) -> None:
        """Raise ``ConfigError`` before any worker starts if this executor cannot run the config."""
        if profile_epochs and not self.profiles:
            raise ConfigError(f"{type(self).__name__} does not profile snapshot groups: set sched.timeline.profile_epochs=0")

    def check_model(self, model: DGNN) -> None:
        """Raise ``ConfigError`` before any worker starts if this executor cannot train ``model``."""

    @contextmanager
    def epoch_scope(self, run: EpochRun) -> Iterator[None]:
        """What the executor sets up for one epoch and tears down after it (nothing here)."""
        yield

    @abstractmethod
    def train_iteration(self, run: EpochRun, iteration: Iteration, stats: IterationStats) -> None:
        """Forward and backward of this rank's part of ``iteration``; gradients accumulate.

        Fill ``stats``: ``units`` and ``loss_sum`` (unscaled) of the groups whose loss this rank
        computed, ``wait_s``/``comm_s`` spent on other ranks inside the iteration, ``bytes``.
        """

    def epoch_metrics(self) -> Mapping[str, MetricValue]:
        """Executor-specific epoch metrics (e.g. REAL's preprocessing time)."""
        return {}


class SequentialExecutor(GroupExecutor):
    """A rank's groups of one iteration, one after another, gradients accumulating."""

    def train_iteration(self, run: EpochRun, iteration: Iteration, stats: IterationStats) -> None:
        mine = iteration[run.rank]
        scale = loss_scale(iteration)
        stats.units = len(mine)
        stats.add_bytes("host_to_device", 0)
        for position, k in enumerate(mine):
            stats.add_loss(self.train_group(run, k, scale, stats, final=position == len(mine) - 1), scale)

    def train_group(self, run: EpochRun, index: int, scale: float, stats: IterationStats, final: bool) -> torch.Tensor:
        """Forward and backward of one group; returns its scaled loss, detached, on the device (not read)."""
        timer = PhaseTimer(run.device) if run.profiler is not None else None
        hooks: LayerHooks = TimedHooks(timer) if timer is not None else PLAIN
        if run.inherited is not None:  # UTG's procedure: the window starts from the state the one before left
            group = run.train_groups[index]
            hooks = InheritedStates(run.objective.model, range(group.start, group.stop), run.inherited, hooks)
        with timer.phase("host_to_device") if timer else nullcontext():
            snapshots, moved = fetch(run.graph, run.train_groups[index], run.device)
        stats.add_bytes("host_to_device", moved)
        loss = run.objective(snapshots, scale, hooks=hooks)
        with timer.phase("backward") if timer else nullcontext():
            run.backward(loss, final)
        if run.profiler is not None and timer is not None:
            run.profiler.record(index, timer)
        return loss.detach()
