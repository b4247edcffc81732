"""What one rank does with its part of a plan in one epoch: group-sequential execution.

Each iteration, the rank trains the groups the plan gives it one after another, accumulating
gradients locally (``no_sync``); then every rank, busy or idle, meets at a one-scalar all-reduce
(the time spent there is *wait*: the rank was ready, a slower one was not) and DistributedDataParallel
all-reduces the accumulated gradients (*communication*). Losses are scaled so that the averaged
gradient is the mean over all groups of the iteration, whatever their spread over ranks. This is
PSG when the plan gives one group per rank per iteration, and DyGNeX/REAL cross-group training
when it gives several.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from dygsched.data.groups import SnapshotGroup
from dygsched.data.temporal_graph import Snapshot, TemporalGraph
from dygsched.engine.profiler import PhaseTimer, Profiler
from dygsched.errors import ConfigError
from dygsched.models.flops import count_conv_flops
from dygsched.sched.plan import Plan


@dataclass
class IterationStats:
    iteration: int
    groups: int
    loss_sum: float = 0.0
    busy_s: float = 0.0
    wait_s: float = 0.0
    comm_s: float = 0.0
    bytes: dict[str, int] = field(default_factory=dict)
    conv_flops: int = 0  # graph-convolution FLOPs of the forward passes (REAL figure 11)


@dataclass(frozen=True)
class EpochRun:
    """One rank's epoch, as every executor receives it: the model (wrapped), the optimizer, the
    data, the plan, where this rank runs, where per-iteration statistics go, and the profiler
    (``None`` outside profiling epochs)."""

    ddp: DistributedDataParallel
    optimizer: torch.optim.Optimizer
    graph: TemporalGraph
    train_groups: tuple[SnapshotGroup, ...]
    plan: Plan
    rank: int
    device: torch.device
    on_iteration: Callable[[IterationStats], None]
    profiler: Profiler | None = None


def wrap_ddp(objective: torch.nn.Module, device: torch.device) -> DistributedDataParallel:
    """DistributedDataParallel that tolerates ranks running different numbers of groups.

    DDP rebuilds its gradient buckets once, in the first forward after the first synchronised
    backward, and that rebuild is a collective: two warm-up steps on every rank settle it before
    ranks diverge. Buffers (batch-norm statistics) are averaged at each synchronisation point
    instead of broadcast in every forward, which would also be a collective.
    """
    # torch >= 2.13 spells "no buffer broadcast in forward" forward_sync_buffers; older ones broadcast_buffers.
    no_forward_sync = (
        {"forward_sync_buffers": False}
        if "forward_sync_buffers" in inspect.signature(DistributedDataParallel.__init__).parameters
        else {"broadcast_buffers": False}
    )
    ddp = DistributedDataParallel(objective, device_ids=[device.index] if device.type == "cuda" else None, **no_forward_sync)
    for _ in range(2):
        ddp(None).backward()
    objective.zero_grad(set_to_none=True)
    return ddp


def average_buffers(module: torch.nn.Module, world_size: int) -> None:
    for buffer in module.buffers():
        if buffer.is_floating_point():
            dist.all_reduce(buffer)
            buffer.div_(world_size)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def refuse_profiling(profiler: Profiler | bool | None, name: str) -> None:
    """Profiling epochs time whole groups on one rank, which strategies that split groups do not run."""
    if profiler is not None:
        raise ConfigError(f"sched={name} does not profile snapshot groups: set sched.profile_epochs=0")


def gradient_bytes(module: torch.nn.Module) -> int:
    """Bytes of the trainable parameters' gradients: what one DDP all-reduce moves."""
    return sum(p.numel() * p.element_size() for p in module.parameters() if p.requires_grad)


def sync_step(
    ddp: DistributedDataParallel,
    optimizer: torch.optim.Optimizer,
    device: torch.device,
    ready: torch.Tensor,
    grad_bytes: int,
    stats: IterationStats,
) -> None:
    """End an iteration on every rank: wait, all-reduce the accumulated gradients, step.

    The one-scalar all-reduce on ``ready`` is time the rank spent waiting for the slowest one
    (added to ``stats.wait_s``); ``ddp(None).backward()`` outside ``no_sync`` makes DDP all-reduce
    (average) the gradients every rank accumulated, then buffers are averaged (added to
    ``stats.comm_s``); then the optimizer steps.
    """
    start = time.perf_counter()
    dist.all_reduce(ready)
    stats.wait_s += time.perf_counter() - start

    start = time.perf_counter()
    ddp(None).backward()  # every rank: triggers the gradient all-reduce of what it accumulated
    average_buffers(ddp.module, dist.get_world_size())
    synchronize(device)
    stats.comm_s += time.perf_counter() - start
    stats.bytes["allreduce"] = grad_bytes
    optimizer.step()


class GroupExecutor:
    """Runs ``plan`` on ``rank``: the mechanics shared by PSG, DyGNeX and REAL.

    Subclasses change how a rank trains its groups of one iteration (``train_local_groups``) and
    what is set up around an epoch (``epoch_scope``); the iteration loop, loss scaling,
    synchronisation and accounting stay here.
    """

    def check(self, window: int, world_size: int, profile_epochs: int) -> None:
        """Raise ``ConfigError`` before any worker starts if this strategy cannot run the config."""

    @contextmanager
    def epoch_scope(self, epoch: EpochRun) -> Iterator[None]:
        """What the executor sets up for one epoch and tears down after it (nothing here)."""
        yield

    def run_epoch(self, epoch: EpochRun) -> None:
        ddp, optimizer, device = epoch.ddp, epoch.optimizer, epoch.device
        world_size = dist.get_world_size()
        grad_bytes = gradient_bytes(ddp)
        ready = torch.zeros(1, device=device)
        with self.epoch_scope(epoch):
            for i, iteration in enumerate(epoch.plan.iterations):
                mine = iteration[epoch.rank]
                stats = IterationStats(iteration=i, groups=len(mine))
                scale = world_size / max(1, sum(len(groups) for groups in iteration))
                optimizer.zero_grad(set_to_none=False)

                start = time.perf_counter()
                with ddp.no_sync():
                    self.train_local_groups(epoch, mine, scale, stats)
                synchronize(device)
                stats.busy_s = time.perf_counter() - start

                sync_step(ddp, optimizer, device, ready, grad_bytes, stats)
                epoch.on_iteration(stats)

    def train_local_groups(self, epoch: EpochRun, mine: tuple[int, ...], scale: float, stats: IterationStats) -> None:
        """This rank's groups of one iteration, one after another, gradients accumulating."""
        stats.bytes["host_to_device"] = 0
        for k in mine:
            group = epoch.train_groups[k]
            stats.loss_sum += self.train_group(epoch.ddp, epoch.graph, group, k, scale, epoch.device, stats, epoch.profiler)

    def train_group(
        self,
        ddp: DistributedDataParallel,
        graph: TemporalGraph,
        group: SnapshotGroup,
        index: int,
        scale: float,
        device: torch.device,
        stats: IterationStats,
        profiler: Profiler | None,
    ) -> float:
        """Forward and backward of one group (gradients accumulate); returns its unscaled loss."""
        timer = PhaseTimer(device) if profiler is not None else None
        objective = ddp.module
        objective.timer = timer
        try:
            with timer.phase("host_to_device") if timer else nullcontext():
                snapshots, moved = self.fetch(graph, group, device)
            stats.bytes["host_to_device"] += moved
            with count_conv_flops(objective.model) as flops:
                loss = ddp(snapshots, scale)
            stats.conv_flops += flops.total
            with timer.phase("backward") if timer else nullcontext():
                loss.backward()
        finally:
            objective.timer = None
        if profiler is not None:
            profiler.record(index, timer)
        return float(loss.detach()) / scale

    @staticmethod
    def fetch(graph: TemporalGraph, group: SnapshotGroup, device: torch.device) -> tuple[tuple[Snapshot, ...], int]:
        """The group's snapshots on ``device`` and the bytes that copy moved."""
        snapshots = group.snapshots(graph)
        if device.type == "cpu":
            return snapshots, 0
        return tuple(s.to(device) for s in snapshots), sum(s.nbytes() for s in snapshots)
