"""The one multi-rank harness the tests share: spawned gloo ranks and one epoch of an executor.

``run_ranks(fn, args, nprocs)`` spawns ``nprocs`` processes running ``fn(rank, *args)`` after
``join_gloo`` put them in one gloo group; a failing or hanging rank fails the test instead of
blocking it. ``train_epoch`` runs one epoch of a snapshot-group executor exactly as the strategy
does (its iteration loop, gradient synchronisation and optimizer step), outside any run folder.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from dygsched.data.groups import SnapshotGroup
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.engine.gradient_sync import GradientSync
from dygsched.engine.objective import GroupObjective
from dygsched.engine.snapshot_groups.executor import EpochRun, GroupExecutor
from dygsched.engine.snapshot_groups.profiler import Profiler
from dygsched.engine.strategy import Epoch, IterationStats
from dygsched.launch.local import free_port

CPU = torch.device("cpu")


def _entry(rank: int, fn: Callable[..., Any], world_size: int, port: int, args: tuple, backend: str = "gloo") -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group(backend, rank=rank, world_size=world_size)
    try:
        fn(rank, *args)
    finally:
        dist.destroy_process_group()


def run_ranks(fn: Callable[..., Any], args: tuple = (), nprocs: int = 2, timeout_s: float = 300.0, backend: str = "gloo") -> None:
    """``nprocs`` spawned ranks in one gloo group, each running ``fn(rank, *args)`` (a module-level
    function); ``backend`` may name gloo per device type instead (``cpu:gloo``, as a CUDA run's
    ``cpu:gloo,cuda:nccl`` group routes CPU tensors)."""
    context = mp.start_processes(
        _entry, args=(fn, nprocs, free_port(), args, backend), nprocs=nprocs, start_method="spawn", join=False
    )
    deadline = time.monotonic() + timeout_s
    while not context.join(timeout=1.0):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail(f"the ranks did not finish within {timeout_s:.0f} s")


class RecordingSGD(torch.optim.SGD):
    """SGD that keeps a copy of the gradients of its last step (the synchronised ones)."""

    def step(self, closure=None):  # type: ignore[override]
        self.last_grads = [p.grad.clone() if p.grad is not None else None for group in self.param_groups for p in group["params"]]
        return super().step(closure)


def train_epoch(
    executor: GroupExecutor,
    objective: GroupObjective,
    graph: TemporalGraph,
    groups: Sequence[SnapshotGroup],
    iterations: tuple,
    optimizer: torch.optim.Optimizer,
    profiler: Profiler | None = None,
    overlap: bool = False,
) -> list[IterationStats]:
    """One epoch of ``executor`` over ``iterations`` on this rank (``dist`` already initialised);
    the iteration stats it recorded. The loop is ``SnapshotGroupStrategy.run_epoch``'s."""
    rank, world_size = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
    sync = GradientSync(objective, world_size, overlap=overlap)
    seen: list[IterationStats] = []
    epoch = Epoch(0, objective, optimizer, sync, CPU, rank, world_size, seen.append, lambda *row: None)
    run = EpochRun(objective, graph, tuple(groups), iterations, rank, world_size, CPU, epoch, profiler)
    with executor.epoch_scope(run):
        for i, iteration in enumerate(iterations):
            stats = IterationStats(iteration=i)
            start = time.perf_counter()
            executor.train_iteration(run, iteration, stats)
            stats.busy_s = time.perf_counter() - start - stats.wait_s - stats.comm_s
            epoch.finish_iteration(stats)
    sync.close()
    return seen


def reference_steps(
    objective: GroupObjective, graph: TemporalGraph, groups: Sequence[SnapshotGroup], iterations: tuple, lr: float
) -> list[float]:
    """Single-process SGD on the mean loss of each iteration's groups; the loss sums per iteration."""
    optimizer = torch.optim.SGD(objective.parameters(), lr=lr)
    sums = []
    for iteration in iterations:
        optimizer.zero_grad()
        members = [k for ranks in iteration for k in ranks]
        losses = [objective(groups[k].snapshots(graph)) for k in members]
        sums.append(sum(float(loss.detach()) for loss in losses))
        (sum(losses) / len(members)).backward()
        optimizer.step()
    return sums
