"""Evaluation of a split, sharded over ranks and summed with one all-reduce."""

from __future__ import annotations

import torch
import torch.distributed as dist

from dygsched.data.groups import SnapshotGroup
from dygsched.data.temporal_graph import Task, TemporalGraph
from dygsched.engine.executor import GroupExecutor
from dygsched.engine.objective import GroupObjective


def metric_name(task: Task) -> str:
    return "accuracy" if task is Task.CLASSIFICATION else "mse"


def evaluate(
    objective: GroupObjective, graph: TemporalGraph, groups: tuple[SnapshotGroup, ...], rank: int, world_size: int, device: torch.device
) -> dict[str, float]:
    """Mean loss and the task's metric over every node of every group in ``groups``."""
    objective.eval()
    sums = torch.zeros(3, dtype=torch.float64)
    for group in groups[rank::world_size]:
        snapshots, _ = GroupExecutor.fetch(graph, group, device)
        result = objective.evaluate(snapshots)
        sums += torch.tensor([result.loss_sum, result.correct, result.count], dtype=torch.float64)
    objective.train()
    sums = sums.to(device)
    dist.all_reduce(sums)
    loss_sum, correct, count = sums.tolist()
    count = max(count, 1.0)
    loss = loss_sum / count
    metric = correct / count if objective.task is Task.CLASSIFICATION else loss
    return {"loss": loss, metric_name(objective.task): metric}
