"""The training objective: a model's loss on one snapshot group, as one module DDP can wrap."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from dygsched.data.temporal_graph import Snapshot, Task
from dygsched.engine.profiler import PhaseTimer, timed_forward
from dygsched.models.base import DGNN


@dataclass(frozen=True)
class EvalSums:
    """Additive evaluation sums over groups (so ranks can all-reduce them)."""

    loss_sum: float
    correct: float
    count: float


class GroupObjective(nn.Module):
    """``forward(group, scale)`` returns ``scale * loss`` on the group's last-snapshot targets.

    ``forward(None)`` returns a zero that still touches every parameter: a rank with no group in an
    iteration runs it so that DistributedDataParallel's gradient all-reduce sees every rank.
    """

    def __init__(self, model: DGNN, task: Task) -> None:
        super().__init__()
        self.model = model
        self.task = task
        self.timer: PhaseTimer | None = None  # set during profiling epochs

    def predict(self, snapshots: Sequence[Snapshot]) -> torch.Tensor:
        return self.model(snapshots) if self.timer is None else timed_forward(self.model, snapshots, self.timer)

    def node_losses(self, predictions: torch.Tensor, last: Snapshot) -> tuple[torch.Tensor, torch.Tensor]:
        """(per-node losses, per-node correctness) of ``predictions`` on the nodes that exist at ``last``."""
        pred = predictions[last.node_mask]
        target = last.y[last.node_mask]
        if self.task is Task.CLASSIFICATION:
            return F.cross_entropy(pred, target, reduction="none"), (pred.argmax(-1) == target).float()
        return F.mse_loss(pred, target, reduction="none"), torch.zeros_like(target)

    def loss_terms(self, snapshots: Sequence[Snapshot]) -> tuple[torch.Tensor, torch.Tensor]:
        return self.node_losses(self.predict(snapshots), snapshots[-1])

    def loss_from_predictions(self, predictions: torch.Tensor, last: Snapshot, scale: float = 1.0) -> torch.Tensor:
        """``scale`` times the mean loss over the nodes that exist at ``last``.

        Executors that run the forward in pieces (ESDG across ranks, BLAD with precomputed
        first-layer aggregations) call this on the predictions they assembled; ``forward`` does too.
        """
        losses, _ = self.node_losses(predictions, last)
        if losses.numel() == 0:  # no node exists at the last snapshot: nothing to learn from
            return self.idle_loss()
        return losses.mean() * scale

    def idle_loss(self) -> torch.Tensor:
        """A zero that touches every parameter, so DDP's gradient all-reduce sees this rank."""
        return sum(p.sum() for p in self.parameters()) * 0.0

    def forward(self, snapshots: Sequence[Snapshot] | None, scale: float = 1.0) -> torch.Tensor:
        if snapshots is None:
            return self.idle_loss()
        return self.loss_from_predictions(self.predict(snapshots), snapshots[-1], scale)

    @torch.no_grad()
    def evaluate(self, snapshots: Sequence[Snapshot]) -> EvalSums:
        losses, correct = self.loss_terms(snapshots)
        return EvalSums(float(losses.sum()), float(correct.sum()), float(losses.numel()))
