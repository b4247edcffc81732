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
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from dygsched.data.groups import SnapshotGroup
from dygsched.data.temporal_graph import Snapshot, TemporalGraph
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


class GroupExecutor:
    """Runs ``plan`` on ``rank``: the mechanics shared by PSG, DyGNeX and REAL."""

    def run_epoch(
        self,
        ddp: DistributedDataParallel,
        optimizer: torch.optim.Optimizer,
        graph: TemporalGraph,
        train_groups: tuple[SnapshotGroup, ...],
        plan: Plan,
        rank: int,
        device: torch.device,
        on_iteration: Callable[[IterationStats], None],
    ) -> None:
        world_size = dist.get_world_size()
        grad_bytes = sum(p.numel() * p.element_size() for p in ddp.parameters() if p.requires_grad)
        ready = torch.zeros(1, device=device)
        for i, iteration in enumerate(plan.iterations):
            mine = iteration[rank]
            stats = IterationStats(iteration=i, groups=len(mine))
            scale = world_size / max(1, sum(len(groups) for groups in iteration))
            optimizer.zero_grad(set_to_none=False)

            start = time.perf_counter()
            with ddp.no_sync():
                for k in mine:
                    snapshots, moved = self.fetch(graph, train_groups[k], device)
                    stats.bytes["host_to_device"] = stats.bytes.get("host_to_device", 0) + moved
                    loss = ddp(snapshots, scale)
                    loss.backward()
                    stats.loss_sum += float(loss.detach()) / scale
            synchronize(device)
            stats.busy_s = time.perf_counter() - start

            start = time.perf_counter()
            dist.all_reduce(ready)
            stats.wait_s = time.perf_counter() - start

            start = time.perf_counter()
            ddp(None).backward()  # every rank: triggers the gradient all-reduce of what it accumulated
            average_buffers(ddp.module, world_size)
            synchronize(device)
            stats.comm_s = time.perf_counter() - start
            stats.bytes["allreduce"] = grad_bytes
            optimizer.step()
            on_iteration(stats)

    @staticmethod
    def fetch(graph: TemporalGraph, group: SnapshotGroup, device: torch.device) -> tuple[tuple[Snapshot, ...], int]:
        """The group's snapshots on ``device`` and the bytes that copy moved."""
        snapshots = group.snapshots(graph)
        if device.type == "cpu":
            return snapshots, 0
        return tuple(s.to(device) for s in snapshots), sum(s.nbytes() for s in snapshots)
