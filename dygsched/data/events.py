"""The continuous-time value a data source can produce: a stream of timestamped events.

Beside ``TemporalGraph`` (snapshots), an ``EventStream`` keeps every interaction ``(src, dst, t)``
as one event, in time order, for memory-based continuous-time models. Node ids are compacted to
``0 .. num_nodes-1`` (``node_ids`` maps them back); events with equal timestamps keep the order of
their rows in the source (ties broken by event index), so a batch of consecutive events is well
defined. Splits are chronological: train, then validation, then test, by event count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import torch

from dygsched.data.event_labels import AffinityLabels, check_affinity_nodes, check_event_labels
from dygsched.data.memory_budget import check_fits
from dygsched.data.temporal_graph import Task
from dygsched.errors import ConfigError, DataError

SPLIT_BY = ("events", "time")  # ``split.by``: by event count (TGL) or by timestamp quantiles (DyGLib, TGB, PyG)


@dataclass(frozen=True)
class EventSplit:
    """Half-open event index ranges ``(start, stop)`` of the three chronological parts."""

    train: tuple[int, int]
    val: tuple[int, int]
    test: tuple[int, int]

    def phase(self, name: str) -> tuple[int, int]:
        return {"train": self.train, "val": self.val, "test": self.test}[name]


@dataclass(frozen=True)
class EventStream:
    """Events ``k = 0 .. E-1``: ``src[k] -> dst[k]`` at time ``t[k]`` (non-decreasing), with an
    optional ``weight[k]`` and optional features ``edge_features[k]`` (``[E, F]``, float32, what
    JODIE's, DyGLib's and TGL's files carry per event); ``node_ids[v]`` is the source's id of
    compacted node ``v``. Node property prediction (``dygsched.data.event_labels``): ``labels[k]``,
    a 0/1 state label per event (``uint8``), or ``affinity``, nodes' affinity vectors at label
    times; ``task`` is what a run predicts (``Task.LINK``, or under ``task=node``
    ``Task.CLASSIFICATION`` for state labels and ``Task.AFFINITY`` for affinities)."""

    name: str
    src: torch.Tensor
    dst: torch.Tensor
    t: torch.Tensor
    num_nodes: int
    weight: torch.Tensor | None = None
    node_ids: torch.Tensor | None = None
    edge_features: torch.Tensor | None = None
    # a cut stream's pairs (``link_targets.cut_pairs``): where validation and test begin, so an event
    # model splits where the snapshot models' groups do; None: split by the run's fractions
    phase_starts: tuple[int, int] | None = None
    labels: torch.Tensor | None = None
    affinity: AffinityLabels | None = None
    task: Task = Task.LINK

    def __post_init__(self) -> None:
        def fail(problem: str) -> None:
            raise DataError(f"dataset '{self.name}': {problem}")

        if self.src.dim() != 1 or self.src.numel() == 0:
            fail("an event stream needs at least one event")
        count = self.src.numel()
        if self.dst.shape != (count,) or self.t.shape != (count,):
            fail(f"src, dst and t must have one entry per event ({count})")
        if self.src.dtype != torch.int64 or self.dst.dtype != torch.int64:
            fail("event node ids must be int64")
        if not self.t.is_floating_point() or not bool(torch.isfinite(self.t).all()):
            fail("event timestamps must be finite numbers")
        if count > 1 and bool((self.t[1:] < self.t[:-1]).any()):
            fail("events must be in time order")
        low = int(torch.minimum(self.src.min(), self.dst.min()))
        high = int(torch.maximum(self.src.max(), self.dst.max()))
        if low < 0 or high >= self.num_nodes:
            fail(f"event node ids must lie in [0, {self.num_nodes}), got [{low}, {high}]")
        if self.weight is not None and (self.weight.shape != (count,) or not bool(torch.isfinite(self.weight).all())):
            fail("event weights must be one finite number per event")
        if self.edge_features is not None:
            features = self.edge_features
            if features.dim() != 2 or features.size(0) != count or not features.is_floating_point():
                fail(f"edge features must be a float matrix with one row per event ({count}), got shape {tuple(features.shape)}")
            if not bool(torch.isfinite(features).all()):
                fail("edge features must be finite")
        if self.node_ids is not None and self.node_ids.shape != (self.num_nodes,):
            fail(f"node_ids must map each of the {self.num_nodes} nodes to its source id")
        if self.labels is not None:
            check_event_labels(self.labels, count, self.name)
        if self.affinity is not None:
            check_affinity_nodes(self.affinity, self.num_nodes, self.name)
        if (self.task is Task.CLASSIFICATION and self.labels is None) or (self.task is Task.AFFINITY and self.affinity is None):
            fail(f"task {self.task.value} needs the stream's {'labels' if self.task is Task.CLASSIFICATION else 'affinities'}")

    @property
    def num_events(self) -> int:
        return int(self.src.numel())

    @property
    def edge_dim(self) -> int:
        """The width of ``edge_matrix()``."""
        features = 0 if self.edge_features is None else int(self.edge_features.size(1))
        return features + (0 if self.weight is None else 1)

    def edge_matrix(self) -> torch.Tensor:
        """Each event's features as a model reads them, ``[E, edge_dim]``: the weight (where the
        source has one), then the edge features; ``[E, 0]`` where it has neither."""
        columns = [] if self.weight is None else [self.weight[:, None].float()]
        if self.edge_features is not None:
            columns.append(self.edge_features.float())
        return torch.cat(columns, dim=1) if columns else torch.zeros(self.num_events, 0)

    def model_dims(self) -> dict[str, int]:
        """What a continuous-time model is built with from this data: the node count and the
        width of each event's features (``edge_matrix``)."""
        return {"num_nodes": self.num_nodes, "edge_dim": self.edge_dim}

    def split(self, train: float, val: float, by: str = "events") -> EventSplit:
        """Chronological train / validation / test (test gets the rest), ``by="events"``: by event
        count (TGL's split); ``by="time"``: by quantiles of the timestamps (DyGLib's, TGB's and
        PyG's ``TemporalData.train_val_test_split``): train holds the events at or before the
        ``train`` quantile, validation those after it and at or before the ``train + val``
        quantile, so events with equal timestamps never straddle two phases."""
        if by not in SPLIT_BY:
            raise ConfigError(f"split.by must be one of {', '.join(SPLIT_BY)}, got {by!r}")
        if self.phase_starts is not None:
            if by != "events":
                raise ConfigError(
                    f"dataset '{self.name}' is a cut stream, split where the snapshot models' groups split: "
                    "leave split.by at events"
                )
            a, b = self.phase_starts
            return EventSplit((0, a), (a, b), (b, self.num_events))
        if not (0 < train < 1 and 0 < val < 1 and train + val < 1):
            raise ConfigError(f"split fractions must be positive and sum below 1, got train={train} val={val}")
        n = self.num_events
        if by == "time":
            return self._split_by_time(train, val)
        a, b = int(round(n * train)), int(round(n * (train + val)))
        if a < 1 or b <= a or b >= n:
            raise ConfigError(f"{n} events are too few for a train/validation/test split ({train}/{val}/rest)")
        return EventSplit((0, a), (a, b), (b, n))

    def _split_by_time(self, train: float, val: float) -> EventSplit:
        t = self.t.double().numpy()
        val_time, test_time = np.quantile(t, [train, train + val])  # numpy's linear rule, as DyGLib's and TGB's
        n = self.num_events
        a, b = int(np.searchsorted(t, val_time, side="right")), int(np.searchsorted(t, test_time, side="right"))
        if a < 1 or b <= a or b >= n:
            empty = [name for name, size in (("train", a), ("validation", b - a), ("test", n - b)) if size < 1]
            raise ConfigError(
                f"split.by=time leaves {' and '.join(empty)} empty: the {train}/{val}/rest quantiles of the "
                f"{n} events' timestamps ({self.t.unique().numel()} distinct) fall on tied times; use split.by=events"
            )
        return EventSplit((0, a), (a, b), (b, n))

    def batches(self, start: int, stop: int, size: int) -> list[tuple[int, int]]:
        """Consecutive ``(start, stop)`` ranges of at most ``size`` events covering ``[start, stop)``."""
        if size < 1:
            raise ConfigError(f"the event batch size must be at least 1, got {size}")
        return [(b, min(b + size, stop)) for b in range(start, stop, size)]


Array: TypeAlias = "np.ndarray | torch.Tensor"  # what ``events_from_arrays`` reads: numpy or torch


def events_from_arrays(
    name: str,
    src: Array,
    dst: Array,
    times: Array,
    weight: Array | None = None,
    num_nodes: int | None = None,
    edge_features: Array | None = None,
    labels: Array | None = None,
) -> EventStream:
    """An ``EventStream`` from raw id and time arrays (numpy or tensors) in any order, with
    optional per-event ``weight``, ``edge_features`` rows (``[E, F]``) and 0/1 ``labels``.

    Without ``num_nodes`` ids are compacted in sorted order of the source ids; with it they are
    kept (and must lie below it). Events are sorted by time with ties kept in row order (a stable
    sort).
    """
    src, dst, times = (np.array(a) if isinstance(a, np.ndarray) and not a.flags.writeable else a for a in (src, dst, times))
    src_t, dst_t = torch.as_tensor(src, dtype=torch.int64), torch.as_tensor(dst, dtype=torch.int64)
    times_t = torch.as_tensor(times, dtype=torch.float64)
    count = src_t.numel()
    if num_nodes is None:
        ids, inverse = torch.unique(torch.cat([src_t, dst_t]), return_inverse=True)
        src_t, dst_t, num_nodes = inverse[:count], inverse[count:], int(ids.numel())
    else:
        check_fits(8 * int(num_nodes), f"dataset '{name}': an id map of {int(num_nodes):,} nodes (num_nodes too large?)")
        ids = torch.arange(int(num_nodes))
    order = torch.sort(times_t, stable=True).indices
    weight_t = None if weight is None else torch.as_tensor(weight, dtype=torch.float32)[order]
    features_t = None
    if edge_features is not None:
        features_t = torch.as_tensor(edge_features, dtype=torch.float32)
        if features_t.dim() != 2 or features_t.size(0) != count:
            raise DataError(
                f"dataset '{name}': edge features must have one row per event ({count}), got shape {tuple(features_t.shape)}"
            )
        features_t = features_t[order]
    labels_t = None
    if labels is not None:
        labels_t = torch.as_tensor(labels)
        if labels_t.shape != (count,):
            raise DataError(f"dataset '{name}': labels must be one per event ({count}), got shape {tuple(labels_t.shape)}")
        labels_t = labels_t[order]
    return EventStream(
        name, src_t[order], dst_t[order], times_t[order], int(num_nodes), weight_t, ids, features_t, labels=labels_t
    )
