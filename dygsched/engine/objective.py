"""The snapshot-group objective: a model's loss on the last snapshot of a group of snapshots.

What the strategies that train on sliding snapshot groups share (the snapshot-group strategies and
FlareDTDG): the groups split by time (``build_split``), the task's loss and its evaluation. A
strategy decides where each piece of a loss is computed, never what the loss is:

* ``GroupObjective``: node targets (regression: MSE; classification: cross-entropy and accuracy);
* ``LinkObjective`` (``dygsched.engine.link_objective``): link prediction, the node embeddings
  after a group's last snapshot scoring the pairs of the next one.

``group_objective`` builds the one the graph's task asks for. Both are called the same way by
every executor (``forward`` or ``loss_from_predictions`` on the group's last snapshot), start
each epoch with ``start_epoch`` and evaluate a phase through ``phase_evaluation``: ``add`` each
group's predictions, then ``metrics`` (one collective over the ranks).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from dygsched.data.groups import Split, sliding_groups, split_by_time
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.engine import comm
from dygsched.engine.run_config import RunConfig
from dygsched.engine.strategy import MetricValue
from dygsched.models.dgnn import DGNN
from dygsched.models.hooks import PLAIN, LayerHooks


def build_split(graph: TemporalGraph, settings: RunConfig) -> Split:
    """The sliding groups of ``settings.window`` snapshots, split by time."""
    groups = sliding_groups(graph.num_snapshots, settings.window)
    return split_by_time(groups, settings.split.train, settings.split.val)


def metric_name(task: Task) -> str:
    """The task's headline metric: accuracy for classification, MSE for regression, AP for links
    (which every link evaluation gives; MRR only with several negatives per positive)."""
    return {Task.CLASSIFICATION: "accuracy", Task.REGRESSION: "mse", Task.LINK: "ap"}[task]


class PhaseEvaluation(ABC):
    """One phase's evaluation: ``add`` each evaluated group's predictions (the model's output on
    the group, this rank's rows), then ``metrics`` once, the same on every rank."""

    @abstractmethod
    def add(self, predictions: torch.Tensor, last: Snapshot) -> None:
        """Score one group: ``predictions`` of the model after ``last``, the group's last snapshot."""

    @abstractmethod
    def metrics(self, shared: bool = False) -> dict[str, MetricValue]:
        """The phase's metrics over every rank's groups (a collective; ``shared``: every rank added
        the same groups, so nothing is combined)."""


class NodeEvaluation(PhaseEvaluation):
    """Mean loss and the task's metric over the scored nodes: sums kept on the device, read once."""

    def __init__(self, objective: GroupObjective) -> None:
        self.objective = objective
        self.sums: torch.Tensor | None = None

    def add(self, predictions: torch.Tensor, last: Snapshot) -> None:
        losses, correct = self.objective.node_losses(predictions, last)
        count = losses.new_full((), float(losses.numel()))  # a fill on the device, no copy from the host
        part = torch.stack([losses.sum(), correct.sum(), count]).double()
        self.sums = part if self.sums is None else self.sums + part

    def metrics(self, shared: bool = False) -> dict[str, MetricValue]:
        sums = torch.zeros(3, dtype=torch.float64) if self.sums is None else self.sums.cpu()
        if not shared:
            comm.all_reduce(sums)  # host float64 sums: gloo under a device-keyed backend, read on the host once
        loss_sum, correct, count = sums.tolist()
        count = max(count, 1.0)
        loss = loss_sum / count
        task = self.objective.task
        return {"loss": loss, metric_name(task): correct / count if task is Task.CLASSIFICATION else loss}


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

    def start_epoch(self, epoch: int) -> None:
        """What the objective draws anew each epoch (node targets: nothing)."""

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

    def phase_evaluation(self, phase: str) -> PhaseEvaluation:
        """An empty evaluation of ``phase`` (``val`` or ``test``)."""
        return NodeEvaluation(self)


def check_task(graph: TemporalGraph, split: Split, settings: RunConfig) -> None:
    """Refuse what the graph's task cannot train on this split, before any rank starts: link
    prediction needs every group's last snapshot to have pairs in the next one, and its stored
    negatives (``eval.one_vs_many``) are generated here, once, before the ranks read them."""
    if graph.task is Task.LINK:
        from dygsched.data.link_targets import check_targets
        from dygsched.engine.link_objective import stored_negatives

        check_targets(graph, range(split.train[0].stop - 1, split.test[-1].stop))
        stored_negatives(graph, split, settings)  # files that do not match the cut: one line here


def group_objective(model: DGNN, graph: TemporalGraph, split: Split, settings: RunConfig) -> GroupObjective:
    """The objective ``graph``'s task asks for: node targets, or link prediction (``Task.LINK``)."""
    if graph.task is Task.LINK:
        from dygsched.engine.link_objective import LinkObjective, LinkProtocol

        return LinkObjective(model, LinkProtocol.build(graph, split, settings))
    return GroupObjective(model, graph.task)
