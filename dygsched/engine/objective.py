"""The snapshot-group objective: a model's loss on the last snapshot of a group of snapshots.

What the strategies that train on sliding snapshot groups share (the snapshot-group strategies and
FlareDTDG): the groups split by time (``build_split``), the loss (``GroupObjective``) and the name
of the task's metric (``metric_name``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from dygsched.data.groups import Split, sliding_groups, split_by_time
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.engine.strategy import RunSettings
from dygsched.models.dgnn import DGNN
from dygsched.models.hooks import PLAIN, LayerHooks


def build_split(graph: TemporalGraph, settings: RunSettings) -> Split:
    """The sliding groups of ``settings.window`` snapshots, split by time."""
    groups = sliding_groups(graph.num_snapshots, settings.window)
    return split_by_time(groups, settings.train_fraction, settings.val_fraction)


def metric_name(task: Task) -> str:
    """The task's evaluation metric: accuracy for classification, MSE for regression."""
    return "accuracy" if task is Task.CLASSIFICATION else "mse"


@dataclass(frozen=True)
class EvalSums:
    """Additive evaluation sums over groups (so ranks can all-reduce them)."""

    loss_sum: float
    correct: float
    count: float


class GroupObjective(nn.Module):
    """``forward(snapshots, scale)`` is ``scale`` times the model's mean loss over the nodes that
    exist at the group's last snapshot (MSE for regression, cross-entropy for classification).

    ``owned`` (a boolean mask over nodes) scores only those nodes, still divided by the count of
    every existing node: ranks that own disjoint node sets then add up to the whole group's loss.
    ``hooks`` go to the model's layer loop (``DGNN.unroll``): precomputed first layers, timers.
    """

    def __init__(self, model: DGNN, task: Task) -> None:
        super().__init__()
        self.model = model
        self.task = task

    def node_losses(
        self, predictions: torch.Tensor, last: Snapshot, owned: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(per-node losses, per-node correctness) of ``predictions`` on the nodes that exist at ``last``
        (and are ``owned``, when given)."""
        mask = last.node_mask if owned is None else last.node_mask & owned
        pred = predictions[mask]
        target = last.y[mask]
        if self.task is Task.CLASSIFICATION:
            return F.cross_entropy(pred, target, reduction="none"), (pred.argmax(-1) == target).float()
        return F.mse_loss(pred, target, reduction="none"), torch.zeros_like(target)

    def loss_from_predictions(
        self, predictions: torch.Tensor, last: Snapshot, scale: float = 1.0, owned: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``scale`` times the loss summed over the scored nodes, divided by the nodes that exist at ``last``.

        Executors that run the forward in pieces (ESDG across ranks, BLAD with precomputed
        first-layer aggregations, REAL's chains) call this on the predictions they assembled.
        A group whose last snapshot has no node gives an exact zero that backpropagates nothing.
        """
        losses, _ = self.node_losses(predictions, last, owned)
        if owned is None:
            return losses.mean() * scale if losses.numel() else losses.sum()
        count = last.num_active_nodes
        return losses.sum() * (scale / count) if count else losses.sum()

    def forward(
        self, snapshots: Sequence[Snapshot], scale: float = 1.0, hooks: LayerHooks = PLAIN, owned: torch.Tensor | None = None
    ) -> torch.Tensor:
        return self.loss_from_predictions(self.model(snapshots, hooks=hooks), snapshots[-1], scale, owned)

    @torch.no_grad()
    def evaluate(self, snapshots: Sequence[Snapshot]) -> EvalSums:
        losses, correct = self.node_losses(self.model(snapshots), snapshots[-1])
        return EvalSums(float(losses.sum()), float(correct.sum()), float(losses.numel()))
