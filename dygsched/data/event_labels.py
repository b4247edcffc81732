"""Labels on event streams: what node property prediction (``task=node``) predicts as the stream goes.

Two kinds, as the field publishes them:

* **State labels, one per event** (JODIE's ``state_label``, DyGLib's ``label`` column, TGN's and
  TGL's node classification): ``EventStream.labels``, a ``uint8`` 0/1 per event, whether the
  event's source changed state at it (a user banned, a student dropping out). One byte per event,
  where the events themselves take 24 (two int64 ids and a float64 time): a 10-million-event
  stream's labels take 10 MB. ``event_labels`` checks and converts a column read from a file.
* **Node affinities at label times** (TGB's ``tgbn-trade``, ``tgbn-genre``, ``tgbn-reddit``,
  ``tgbn-token``): at each label time some nodes carry a vector of affinities over
  ``num_classes`` classes (other nations' share of a nation's trade, genres' share of a user's
  listening). ``AffinityLabels`` keeps them sparse (CSR): one row per (label time, node), the
  nonzero entries of its vector.

``for_node_task`` hands a strategy the stream as ``task=node`` reads it: classification where the
stream has state labels, affinity where it has affinities, one line of refusal where it has
neither. ``churn_labels`` is the rule the generated streams label their events by (docs/data.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import torch

from dygsched.data.temporal_graph import Task
from dygsched.errors import ConfigError, DataError

if TYPE_CHECKING:
    from dygsched.data.events import EventStream

LABEL_DTYPE = torch.uint8
# where each format's labels come from, for the line that refuses a stream without any
LABEL_SOURCES = (
    "JODIE's state_label column, DyGLib's label column, a label column of an edge list (or dataset.label_col=), "
    "TGB's tgbn-* node labels (dataset=tgbn), or a generated stream (bipartite, wikipedia_like, reddit_like, trade_like)"
)


def event_labels(values: np.ndarray, where: str, first: int = 1, position: str = "row") -> torch.Tensor:
    """One 0/1 label per event from ``values`` (numbers, or booleans), as ``uint8``; anything else
    (NaN, 2, 0.5, text) is refused in one line naming ``where`` and the first bad value's
    ``position`` (``row``, or a file's ``line``), ``first`` being the first value's."""
    array = np.asarray(values)
    if array.dtype == bool:
        return torch.from_numpy(array.astype(np.uint8))
    try:
        numbers = array.astype(np.float64)
    except (TypeError, ValueError):
        numbers = np.full(array.shape, np.nan)
        for i, value in enumerate(array.reshape(-1)):
            try:
                numbers[i] = float(value)
            except (TypeError, ValueError):
                break
    bad = ~np.isin(numbers, (0.0, 1.0))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        got = array.reshape(-1)[row]
        raise DataError(
            f"{where}: labels must be 0 or 1 (a state label per event), got {got.item() if hasattr(got, 'item') else got!r} "
            f"({position} {row + first})"
        )
    return torch.from_numpy(numbers.astype(np.uint8))


def check_event_labels(labels: torch.Tensor, count: int, name: str) -> None:
    """``labels`` must be ``count`` values of 0 or 1 in ``uint8`` (``EventStream.labels``)."""
    if labels.dtype != LABEL_DTYPE or labels.shape != (count,):
        shape = tuple(labels.shape)
        raise DataError(
            f"dataset '{name}': labels must be one uint8 0/1 per event ({count}), got {labels.dtype} of shape {shape}"
        )
    if count and int(labels.max()) > 1:
        raise DataError(f"dataset '{name}': labels must be 0 or 1, got {int(labels.max())}")


@dataclass(frozen=True)
class AffinityLabels:
    """Node affinities at label times (TGB's node property prediction), sparse.

    Label time ``k`` (``times[k]``, in the stream's own time, increasing) has the rows
    ``time_rows[k] .. time_rows[k+1]``; row ``r`` is node ``nodes[r]``'s vector over ``num_classes``
    classes, its nonzero entries ``classes[e]``, ``values[e]`` for ``e`` in
    ``row_entries[r] .. row_entries[r+1]`` (classes increasing). Values are finite and non-negative,
    and every row has a positive sum (a node with no affinity carries no row)."""

    times: torch.Tensor  # [T] float64
    time_rows: torch.Tensor  # [T + 1] int64
    nodes: torch.Tensor  # [R] int64
    row_entries: torch.Tensor  # [R + 1] int64
    classes: torch.Tensor  # [nnz] int64
    values: torch.Tensor  # [nnz] float32
    num_classes: int

    def __post_init__(self) -> None:
        def fail(problem: str) -> None:
            raise DataError(f"node affinity labels: {problem}")

        if self.num_classes < 2:
            fail(f"need at least 2 classes, got {self.num_classes}")
        if self.times.dtype != torch.float64 or self.times.dim() != 1 or not self.times.numel():
            fail("need at least one label time (float64)")
        if not bool(torch.isfinite(self.times).all()) or bool((self.times[1:] <= self.times[:-1]).any()):
            fail("label times must be finite and increasing")
        rows, entries = int(self.nodes.numel()), int(self.classes.numel())
        for offsets, length, total, what in (
            (self.time_rows, self.times.numel() + 1, rows, "time_rows"),
            (self.row_entries, rows + 1, entries, "row_entries"),
        ):
            if (
                offsets.shape != (length,)
                or int(offsets[0]) != 0
                or int(offsets[-1]) != total
                or bool((offsets[1:] < offsets[:-1]).any())
            ):
                fail(f"{what} must be {length} non-decreasing offsets from 0 to {total}")
        if self.values.shape != (entries,) or not self.values.is_floating_point():
            fail("values must be one float per entry")
        if entries and (int(self.classes.min()) < 0 or int(self.classes.max()) >= self.num_classes):
            fail(f"classes must lie in [0, {self.num_classes})")
        if not bool(torch.isfinite(self.values).all()) or bool((self.values < 0).any()):
            fail("affinities must be finite and non-negative")
        sums = torch.zeros(rows, dtype=torch.float64).index_add_(0, self.entry_rows(), self.values.double())
        if rows and bool((sums <= 0).any()):
            fail("every row must have a positive affinity (a node without any carries no row)")

    @classmethod
    def from_entries(
        cls, times: np.ndarray, nodes: np.ndarray, classes: np.ndarray, values: np.ndarray, num_classes: int
    ) -> AffinityLabels:
        """From one entry per (label time, node, class): repeated entries add up, zeros are dropped."""
        times = np.asarray(times, dtype=np.float64)
        nodes, classes = np.asarray(nodes, dtype=np.int64), np.asarray(classes, dtype=np.int64)
        values = np.asarray(values, dtype=np.float64)
        if not (times.shape == nodes.shape == classes.shape == values.shape) or times.ndim != 1:
            raise DataError("node affinity labels: times, nodes, classes and values must be one entry each")
        if not np.isfinite(values).all() or (values < 0).any():
            raise DataError("node affinity labels: affinities must be finite and non-negative")
        if not np.isfinite(times).all():
            raise DataError("node affinity labels: label times must be finite")
        if classes.size and (classes.min() < 0 or classes.max() >= num_classes):
            raise DataError(f"node affinity labels: classes must lie in [0, {num_classes})")
        keep = values > 0
        times, nodes, classes, values = times[keep], nodes[keep], classes[keep], values[keep]
        if not times.size:
            raise DataError("node affinity labels: no positive affinity at any label time")
        order = np.lexsort((classes, nodes, times))
        times, nodes, classes, values = times[order], nodes[order], classes[order], values[order]
        entry = np.r_[True, (times[1:] != times[:-1]) | (nodes[1:] != nodes[:-1]) | (classes[1:] != classes[:-1])]
        starts = np.flatnonzero(entry)
        values = np.add.reduceat(values, starts)  # repeated (time, node, class) entries add up
        times, nodes, classes = times[starts], nodes[starts], classes[starts]
        row_start = np.r_[True, (times[1:] != times[:-1]) | (nodes[1:] != nodes[:-1])]
        row_entries = np.r_[np.flatnonzero(row_start), times.size]
        row_times, row_nodes = times[row_start], nodes[row_start]
        time_start = np.r_[True, row_times[1:] != row_times[:-1]]
        time_rows = np.r_[np.flatnonzero(time_start), row_times.size]
        return cls(
            torch.from_numpy(row_times[time_start].copy()),
            torch.from_numpy(time_rows.astype(np.int64)),
            torch.from_numpy(row_nodes.copy()),
            torch.from_numpy(row_entries.astype(np.int64)),
            torch.from_numpy(classes.copy()),
            torch.from_numpy(values.astype(np.float32)),
            int(num_classes),
        )

    @property
    def num_rows(self) -> int:
        return int(self.nodes.numel())

    @property
    def num_times(self) -> int:
        return int(self.times.numel())

    def entry_rows(self) -> torch.Tensor:
        """Each entry's row."""
        counts = self.row_entries[1:] - self.row_entries[:-1]
        return torch.repeat_interleave(torch.arange(self.num_rows), counts)

    def dense(self, rows: torch.Tensor) -> torch.Tensor:
        """Rows ``rows`` as dense ``[len(rows), num_classes]`` float32 vectors."""
        rows = rows.long()
        starts, counts = self.row_entries[rows], self.row_entries[rows + 1] - self.row_entries[rows]
        out = torch.zeros(rows.numel(), self.num_classes, dtype=torch.float32)
        if not rows.numel() or not int(counts.sum()):
            return out
        where = torch.repeat_interleave(torch.arange(rows.numel()), counts)
        entry = torch.repeat_interleave(starts - torch.cumsum(counts, 0) + counts, counts) + torch.arange(int(counts.sum()))
        out[where, self.classes[entry]] = self.values[entry]
        return out

    def time_of_rows(self) -> torch.Tensor:
        """Each row's label time index."""
        return torch.repeat_interleave(torch.arange(self.num_times), self.time_rows[1:] - self.time_rows[:-1])

    @property
    def nbytes(self) -> int:
        return sum(
            t.element_size() * t.numel()
            for t in (self.times, self.time_rows, self.nodes, self.row_entries, self.classes, self.values)
        )


def check_affinity_nodes(labels: AffinityLabels, num_nodes: int, name: str) -> None:
    if labels.num_rows and (int(labels.nodes.min()) < 0 or int(labels.nodes.max()) >= num_nodes):
        raise DataError(f"dataset '{name}': affinity labels name nodes outside [0, {num_nodes})")


def for_node_task(stream: EventStream) -> EventStream:
    """``stream`` as ``task=node`` reads it: its state labels (dynamic node classification, DyGLib's
    protocol) or its node affinities (TGB's), refused in one line where it has neither."""
    if stream.labels is not None:
        return replace(stream, task=Task.CLASSIFICATION)
    if stream.affinity is not None:
        return replace(stream, task=Task.AFFINITY)
    raise ConfigError(
        f"task=node: dataset '{stream.name}' is an event stream without labels; node property prediction reads {LABEL_SOURCES}"
    )


def churn_labels(src: np.ndarray, times: np.ndarray, rate: float, noise: float, seed: int, segments: int = 20) -> np.ndarray:
    """The generated streams' state labels: a user returning after a long silence is flagged.

    An event is eligible when its source had an event before it; its score is the log of the
    time since that event plus ``noise`` times a standard normal draw (generator seeded by
    ``seed``, apart from the events' own draws). In each of ``segments`` equal slices of the
    stream's time span, the eligible events with the highest scores are labelled 1, as many as
    ``rate`` times the events up to the slice's end, less those before it (rounded), so every
    part of a chronological split holds about ``rate`` positives per event. The source's
    embedding before the event sees the silence (its memory's last update, its last
    neighbour's time), so the rule is learnable; consecutive positives of one user are rare, so
    repeating a user's last label (the persistent forecast) is near chance. ``src`` and ``times``
    are in time order."""
    count = src.size
    labels = np.zeros(count, dtype=np.uint8)
    if count == 0 or rate <= 0:
        return labels
    order = np.lexsort((np.arange(count), src))  # each source's events, in time order
    previous = np.full(count, np.nan)
    same = src[order][1:] == src[order][:-1]
    previous[order[1:][same]] = times[order[:-1][same]]
    gap = times - previous
    rng = np.random.default_rng([int(seed), 0x1ABE1])
    score = np.log(np.maximum(gap, 1e-9)) + noise * rng.standard_normal(count)
    score[np.isnan(gap)] = -np.inf  # a source's first event: no silence to measure
    span = float(times[-1] - times[0])
    cuts = np.searchsorted(times, times[0] + span * np.arange(1, segments) / segments, side="right")
    bounds = np.r_[0, cuts, count]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        wanted = int(round(rate * hi)) - int(round(rate * lo))
        eligible = np.flatnonzero(np.isfinite(score[lo:hi])) + lo
        if wanted <= 0 or not eligible.size:
            continue
        top = eligible[np.argsort(-score[eligible], kind="stable")[:wanted]]
        labels[top] = 1
    return labels
