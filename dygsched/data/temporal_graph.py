"""The one value every data source produces: a sequence of graph snapshots."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import torch

from dygsched.errors import DataError


class Task(str, Enum):
    """What the targets are: a float per node (MSE), a class per node (accuracy), or the pairs of
    nodes that link in the next snapshot (link prediction: ``Snapshot.links``). On event streams
    (``EventStream.task``): links, a state label per event (classification, AUC) or nodes'
    affinities at label times (``AFFINITY``, NDCG@10: ``dygsched.data.event_labels``)."""

    REGRESSION = "regression"
    CLASSIFICATION = "classification"
    LINK = "link"
    AFFINITY = "affinity"


@dataclass(frozen=True)
class Snapshot:
    """One graph at one time step, over a fixed id space of ``num_nodes`` nodes.

    ``edge_index`` is ``[2, E]`` (long, source row 0, target row 1), ``edge_weight`` is ``[E]``
    (float), ``x`` is ``[N, F]`` (float), ``y`` is ``[N]`` (float for regression, long for
    classification) and ``node_mask`` is ``[N]`` (bool): which nodes exist at this time.
    Nodes that do not exist have no edges and are ignored by the loss.

    ``links`` (link prediction only, ``dygsched.data.link_targets``): the ``[2, P]`` distinct pairs
    ``(source, destination)`` that link in the next snapshot, which the node embeddings after
    this snapshot score, and ``target_index``, that next snapshot's index in its graph (it seeds
    the training negatives, so every strategy and rank count draws the same ones).
    """

    edge_index: torch.Tensor
    edge_weight: torch.Tensor
    x: torch.Tensor
    y: torch.Tensor
    node_mask: torch.Tensor
    links: torch.Tensor | None = None
    target_index: int = -1

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
            links=None if self.links is None else self.links.to(device, non_blocking=True),
            target_index=self.target_index,
        )

    def tensors(self) -> tuple[torch.Tensor, ...]:
        """Every tensor the snapshot holds (``links`` only where it has them)."""
        held = (self.edge_index, self.edge_weight, self.x, self.y, self.node_mask)
        return held if self.links is None else (*held, self.links)

    def nbytes(self) -> int:
        """Bytes this snapshot occupies (what a host-to-device copy moves)."""
        return sum(t.element_size() * t.nelement() for t in self.tensors())


@dataclass(frozen=True)
class TemporalGraph:
    """A discrete-time dynamic graph: snapshots in time order, all over ``num_nodes`` ids.

    ``snapshot_times`` (float64, ``[num_snapshots + 1]``, increasing), for snapshots cut from
    timestamps (``dygsched.data.stream_cut``): entry ``s`` is when snapshot ``s`` starts, the last
    entry when the interval that gives the last snapshot's targets starts; without overlapping
    snapshots (``lags``) snapshot ``s`` holds the events of ``[snapshot_times[s], snapshot_times[s+1])``.
    ``None`` for sources whose snapshots carry no times (generated graphs, signals). ``node_ids``: a
    cut stream's ``EventStream.node_ids`` (the ids of the user's file), ``None`` where ids are the file's own.
    """

    name: str
    snapshots: tuple[Snapshot, ...]
    task: Task
    num_classes: int = 0  # only for classification
    embedding_dim: int = 0  # only for link prediction: the width of the node embeddings the pairs are scored from
    snapshot_times: torch.Tensor | None = None
    cut: str | None = None  # the dataset.snapshot a stream was cut by (an event model then trains on the cut's pairs)
    node_ids: torch.Tensor | None = None  # node_ids[v]: the source's id of node v, where the loader compacted ids

    def __post_init__(self) -> None:
        if not self.snapshots:
            raise DataError(f"dataset '{self.name}' has no snapshots")
        if self.task is Task.CLASSIFICATION and self.num_classes < 2:
            raise DataError(f"dataset '{self.name}': a classification dataset needs at least 2 classes")
        if self.task is Task.LINK and self.embedding_dim < 1:
            raise DataError(f"dataset '{self.name}': link prediction needs an embedding width of at least 1")
        if self.snapshots[0].x.dim() != 2 or self.snapshots[0].x.shape[0] == 0:
            raise DataError(f"dataset '{self.name}': features must be [nodes, features] with at least one node")
        n, f = self.snapshots[0].x.shape
        checked: set[int] = set()  # sources often share one tensor (features, weights) across snapshots
        for t, snap in enumerate(self.snapshots):
            self._check_snapshot(t, snap, n, f, checked)
        if self.snapshot_times is not None:
            self._check_times(self.snapshot_times)

    def _check_times(self, times: torch.Tensor) -> None:
        expected = (self.num_snapshots + 1,)
        if times.dtype != torch.float64 or tuple(times.shape) != expected:
            raise DataError(
                f"dataset '{self.name}': snapshot_times must be float64 of shape {expected}, "
                f"got {times.dtype} of shape {tuple(times.shape)}"
            )
        if not bool(torch.isfinite(times).all()) or not bool((times[1:] > times[:-1]).all()):
            raise DataError(f"dataset '{self.name}': snapshot_times must be finite and increasing")

    def _check_snapshot(self, t: int, snap: Snapshot, n: int, f: int, checked: set[int]) -> None:
        def fail(problem: str) -> None:
            raise DataError(f"dataset '{self.name}': snapshot {t} {problem}")

        if snap.x.shape != (n, f):
            fail(f"has features of shape {tuple(snap.x.shape)}, expected {(n, f)}")
        if not snap.x.is_floating_point():
            fail(f"has features of type {snap.x.dtype}, expected floating point")
        if snap.edge_index.dim() != 2 or snap.edge_index.shape[0] != 2:
            fail(f"edge_index must be [2, E], got {tuple(snap.edge_index.shape)}")
        if snap.edge_index.is_floating_point() or snap.edge_index.dtype == torch.bool:
            fail(f"edge_index must hold integer node ids, got {snap.edge_index.dtype}")
        if snap.edge_weight.shape != (snap.num_edges,):
            fail(f"has {snap.edge_weight.numel()} weights for {snap.num_edges} edges")
        if snap.num_edges and (int(snap.edge_index.min()) < 0 or int(snap.edge_index.max()) >= n):
            fail(f"has node ids outside [0, {n}) (min {int(snap.edge_index.min())}, max {int(snap.edge_index.max())})")
        if snap.y.dim() == 0 or snap.y.shape[0] != n or snap.node_mask.shape != (n,):
            fail(f"targets or node mask do not cover {n} nodes")
        if snap.node_mask.dtype != torch.bool:
            fail(f"node_mask must be boolean, got {snap.node_mask.dtype}")
        if id(snap.x) not in checked and not torch.isfinite(snap.x).all():
            fail("has NaN or infinite features")
        weights = snap.edge_weight
        valid_weights = weights.is_floating_point() and bool(torch.isfinite(weights).all()) and bool((weights >= 0).all())
        if id(weights) not in checked and snap.num_edges and not valid_weights:
            fail("has edge weights that are not finite non-negative numbers (graph convolutions normalise by them)")
        if self.task is Task.REGRESSION and (not snap.y.is_floating_point() or not torch.isfinite(snap.y).all()):
            fail("has NaN, infinite or non-numeric targets")
        if self.task is Task.CLASSIFICATION and id(snap.y) not in checked:
            if snap.y.is_floating_point() or snap.y.dtype == torch.bool:
                fail(f"has class targets of type {snap.y.dtype}, expected integers")
            if int(snap.y.min()) < 0 or int(snap.y.max()) >= self.num_classes:
                fail(f"has class targets outside [0, {self.num_classes})")
        if self.task is Task.LINK:
            links = snap.links
            if links is None or links.dim() != 2 or links.shape[0] != 2 or links.is_floating_point():
                fail("has no link targets (a [2, P] integer tensor of the next snapshot's pairs)")
            elif links.numel() and (int(links.min()) < 0 or int(links.max()) >= n):
                fail(f"has link targets outside [0, {n})")
        checked.update((id(snap.x), id(snap.edge_weight), id(snap.y)))

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
        """Width of the model's output head: 1 for regression, the class count for classification,
        the embedding width for link prediction."""
        if self.task is Task.LINK:
            return self.embedding_dim
        return self.num_classes if self.task is Task.CLASSIFICATION else 1

    def model_dims(self) -> dict[str, int]:
        """What a snapshot model is built with from this data: input and output widths."""
        return {"in_channels": self.num_features, "out_channels": self.out_channels}
