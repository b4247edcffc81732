"""The one value every data source produces: a sequence of graph snapshots."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import torch

from dygsched.errors import DataError


class Task(str, Enum):
    """What the targets are: a float per node (MSE) or a class per node (accuracy)."""

    REGRESSION = "regression"
    CLASSIFICATION = "classification"


@dataclass(frozen=True)
class Snapshot:
    """One graph at one time step, over a fixed id space of ``num_nodes`` nodes.

    ``edge_index`` is ``[2, E]`` (long, source row 0, target row 1), ``edge_weight`` is ``[E]``
    (float), ``x`` is ``[N, F]`` (float), ``y`` is ``[N]`` (float for regression, long for
    classification) and ``node_mask`` is ``[N]`` (bool): which nodes exist at this time.
    Nodes that do not exist have no edges and are ignored by the loss.
    """

    edge_index: torch.Tensor
    edge_weight: torch.Tensor
    x: torch.Tensor
    y: torch.Tensor
    node_mask: torch.Tensor

    @property
    def num_nodes(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.edge_index.shape[1])

    @property
    def num_active_nodes(self) -> int:
        return int(self.node_mask.sum())

    def to(self, device: torch.device | str) -> Snapshot:
        return Snapshot(
            edge_index=self.edge_index.to(device, non_blocking=True),
            edge_weight=self.edge_weight.to(device, non_blocking=True),
            x=self.x.to(device, non_blocking=True),
            y=self.y.to(device, non_blocking=True),
            node_mask=self.node_mask.to(device, non_blocking=True),
        )

    def nbytes(self) -> int:
        """Bytes this snapshot occupies (what a host-to-device copy moves)."""
        return sum(t.element_size() * t.nelement() for t in (self.edge_index, self.edge_weight, self.x, self.y, self.node_mask))


@dataclass(frozen=True)
class TemporalGraph:
    """A discrete-time dynamic graph: snapshots in time order, all over ``num_nodes`` ids."""

    name: str
    snapshots: tuple[Snapshot, ...]
    task: Task
    num_classes: int = 0  # only for classification

    def __post_init__(self) -> None:
        if not self.snapshots:
            raise DataError(f"dataset '{self.name}' has no snapshots")
        n, f = self.snapshots[0].x.shape
        checked_features: set[int] = set()  # sources often share one feature tensor across snapshots
        for t, snap in enumerate(self.snapshots):
            if snap.x.shape != (n, f):
                raise DataError(f"dataset '{self.name}': snapshot {t} has features of shape {tuple(snap.x.shape)}, expected {(n, f)}")
            if snap.edge_index.dim() != 2 or snap.edge_index.shape[0] != 2:
                raise DataError(f"dataset '{self.name}': snapshot {t} edge_index must be [2, E], got {tuple(snap.edge_index.shape)}")
            if snap.edge_weight.shape != (snap.num_edges,):
                raise DataError(f"dataset '{self.name}': snapshot {t} has {snap.edge_weight.numel()} weights for {snap.num_edges} edges")
            if snap.num_edges and (int(snap.edge_index.min()) < 0 or int(snap.edge_index.max()) >= n):
                raise DataError(
                    f"dataset '{self.name}': snapshot {t} has node ids outside [0, {n}) "
                    f"(min {int(snap.edge_index.min())}, max {int(snap.edge_index.max())})"
                )
            if snap.y.shape[0] != n or snap.node_mask.shape != (n,):
                raise DataError(f"dataset '{self.name}': snapshot {t} targets or node mask do not cover {n} nodes")
            if id(snap.x) not in checked_features and not torch.isfinite(snap.x).all():
                raise DataError(f"dataset '{self.name}': snapshot {t} has NaN or infinite features")
            if self.task is Task.REGRESSION and not torch.isfinite(snap.y).all():
                raise DataError(f"dataset '{self.name}': snapshot {t} has NaN or infinite targets")
            checked_features.add(id(snap.x))
        if self.task is Task.CLASSIFICATION and self.num_classes < 2:
            raise DataError(f"dataset '{self.name}': a classification dataset needs at least 2 classes")

    @property
    def num_snapshots(self) -> int:
        return len(self.snapshots)

    @property
    def num_nodes(self) -> int:
        return self.snapshots[0].num_nodes

    @property
    def num_features(self) -> int:
        return int(self.snapshots[0].x.shape[1])

    @property
    def out_channels(self) -> int:
        """Width of the model's output head: 1 for regression, the class count otherwise."""
        return self.num_classes if self.task is Task.CLASSIFICATION else 1
