"""Timestamped edge lists (CSV) cut into snapshots, with FlareDTDG's features and targets.

Time is cut into ``num_snapshots`` equal intervals or into windows of ``snapshot_duration`` time
units from the first timestamp (``dygsched.data.time_cut``); the rows become snapshots through the
code that cuts any event stream (``dygsched.data.stream_cut``). Repeated interactions inside one
snapshot become one edge whose weight is their count. As in FlareDTDG section 4.1, a node's features
at snapshot ``t`` are its in- and out-degree there (as ``log(1 + d)``) and its target is
``log(1 + degree)`` in snapshot ``t + 1``, so the last cut only provides targets. A node exists in a
snapshot when it has an edge there. With ``features="flare"`` (the FlareDTDG authors' code) the
features are the raw weighted in- and out-degrees and the target is ``log(1 + weighted in-degree)``
in snapshot ``t + 1``; with ``lags = L`` every snapshot holds the edges of ``L + 1`` consecutive
intervals, so neighbouring snapshots overlap. With ``kind="events"`` the rows become an
``EventStream`` instead (one event per row, in time order, ties in row order), for continuous-time
models; validation is the same. Node ids are compacted to ``0..n-1`` in sorted order unless
``num_nodes`` is given, in which case they must already lie in ``[0, num_nodes)``.

What the rows may hold, and what happens: rows in any order (snapshots are cut by time value);
repeated edges (one weighted edge per snapshot, weight = count, or the sum of ``weight_col``);
self-loops (kept as edges: a node's interaction with itself counts towards its degrees, and the
graph convolutions add no second self-loop); gaps in time (an empty snapshot: no edges, no node
exists in it, a group ending there contributes no loss). Refused with a ``DataError``: missing
columns, non-numeric or boolean columns, missing values, non-integer, negative or too large node
ids, non-finite timestamps or a span too wide to cut, negative or non-finite weights, a single
snapshot, more than 100,000 snapshots (``time_cut.MAX_SNAPSHOTS``), or a graph that would not fit in
memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dygsched.data.event_labels import event_labels
from dygsched.data.events import EventStream, events_from_arrays
from dygsched.data.stream_cut import FEATURES, cut_stream
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.data.time_cut import TimeCut
from dygsched.errors import DataError

KINDS = ("snapshots", "events")
MAX_NODE_ID = 2**53  # ids read as floats are exact below this


@dataclass(frozen=True)
class EdgeListSource:
    path: str
    src_col: str = "src"
    dst_col: str = "dst"
    time_col: str = "t"
    weight_col: str | None = None
    num_snapshots: int | None = 20
    snapshot_duration: float | None = None
    num_nodes: int | None = None
    directed: bool = True
    name: str = "edgelist"
    kind: str = "snapshots"  # snapshots: a TemporalGraph; events: an EventStream
    features: str = "log_degree"  # log_degree | flare (FlareDTDG's code: raw weighted degrees, see the module docstring)
    lags: int = 0  # each snapshot holds the edges of lags + 1 consecutive intervals (they overlap)
    label_col: str | None = None  # kind=events: each event's 0/1 state label (task=node); a "label" column is read unasked

    def _read(self) -> pd.DataFrame:
        path = Path(self.path).expanduser()
        if not path.is_file():
            raise DataError(f"dataset '{self.name}': file not found: {path}")
        try:
            frame = pd.read_csv(path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise DataError(f"dataset '{self.name}': cannot parse {path} as CSV ({str(exc).strip().splitlines()[0]})") from None
        columns = [self.src_col, self.dst_col, self.time_col] + ([self.weight_col] if self.weight_col else [])
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise DataError(
                f"dataset '{self.name}': unknown column(s) {', '.join(missing)} in {path} "
                f"(it has: {', '.join(map(str, frame.columns))})"
            )
        if frame.empty:
            raise DataError(f"dataset '{self.name}': {path} has no edges")
        for col in columns:
            if not pd.api.types.is_numeric_dtype(frame[col]) or pd.api.types.is_bool_dtype(frame[col]):
                raise DataError(f"dataset '{self.name}': column '{col}' of {path} must be numeric")
            if frame[col].isna().any():
                raise DataError(f"dataset '{self.name}': column '{col}' of {path} has missing values")
        for col in (self.src_col, self.dst_col):
            values = frame[col].to_numpy()
            if not np.all(np.isfinite(values)) or not np.all(np.equal(np.mod(values, 1), 0)):
                raise DataError(f"dataset '{self.name}': node ids in column '{col}' of {path} must be integers")
            if values.min() < 0:
                raise DataError(f"dataset '{self.name}': negative node id {int(values.min())} in column '{col}' of {path}")
            limit = MAX_NODE_ID if values.dtype.kind == "f" else 2**63  # exact as floats / as int64
            if values.max() >= limit:
                raise DataError(
                    f"dataset '{self.name}': node id {values.max():.0f} in column '{col}' of {path} "
                    f"is too large (below {limit:.3g})"
                )
        if not np.isfinite(frame[self.time_col].to_numpy(dtype=float)).all():
            raise DataError(f"dataset '{self.name}': timestamps in {path} must be finite")
        if self.weight_col:
            weights = frame[self.weight_col].to_numpy(dtype=float)
            if not np.isfinite(weights).all() or (weights < 0).any():
                raise DataError(
                    f"dataset '{self.name}': weights in column '{self.weight_col}' of {path} must be finite and non-negative"
                )
        return frame

    def _cut(self) -> TimeCut:
        if (self.num_snapshots is None) == (self.snapshot_duration is None):
            raise DataError(f"dataset '{self.name}': set exactly one of num_snapshots and snapshot_duration")
        if self.snapshot_duration is not None:
            return TimeCut.length(self.snapshot_duration, "snapshot_duration", f"dataset '{self.name}': ")
        assert self.num_snapshots is not None  # exactly one of the two is set (checked above)
        return TimeCut.parts(self.num_snapshots, "num_snapshots", f"dataset '{self.name}': ")

    def load(self) -> TemporalGraph | EventStream:
        if self.kind not in KINDS:
            raise DataError(f"dataset '{self.name}': unknown kind '{self.kind}' (choose from {', '.join(KINDS)})")
        if self.features not in FEATURES:
            raise DataError(f"dataset '{self.name}': unknown features '{self.features}' (choose from {', '.join(FEATURES)})")
        if isinstance(self.lags, bool) or not isinstance(self.lags, int) or self.lags < 0:
            raise DataError(f"dataset '{self.name}': lags must be a whole number of intervals, 0 or more, got {self.lags!r}")
        frame = self._read()
        if self.kind == "events":
            return self._events(frame)
        cut = self._cut()
        src = frame[self.src_col].to_numpy().astype(np.int64)
        dst = frame[self.dst_col].to_numpy().astype(np.int64)
        self._check_range(src, dst)
        weight = frame[self.weight_col].to_numpy(dtype=np.float32) if self.weight_col else None
        times = frame[self.time_col].to_numpy(float)
        if not self.directed:  # both directions of every row, in the same snapshot
            src, dst, times = np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([times, times])
            weight = None if weight is None else np.concatenate([weight, weight])
        stream = events_from_arrays(self.name, src, dst, times, weight, self.num_nodes)
        return cut_stream(stream, cut, features=self.features, lags=self.lags, refuse_gaps=False)

    def _check_range(self, src: np.ndarray, dst: np.ndarray) -> None:
        if self.num_nodes is not None:
            top = int(max(src.max(), dst.max()))
            if top >= int(self.num_nodes):
                raise DataError(f"dataset '{self.name}': node id {top} is out of range for num_nodes={self.num_nodes}")

    def _events(self, frame: pd.DataFrame) -> EventStream:
        """One event per row; ``directed=False`` keeps one event per row too (the models treat
        an interaction as touching both ends)."""
        src = frame[self.src_col].to_numpy().astype(np.int64)
        dst = frame[self.dst_col].to_numpy().astype(np.int64)
        self._check_range(src, dst)
        weight = frame[self.weight_col].to_numpy(dtype=np.float32) if self.weight_col else None
        column = self.label_col if self.label_col is not None else ("label" if "label" in frame.columns else None)
        labels = None
        if column is not None:
            if column not in frame.columns:
                shown = ", ".join(map(str, frame.columns))
                raise DataError(f"dataset '{self.name}': no label column '{column}' in {self.path} (it has: {shown})")
            labels = event_labels(frame[column].to_numpy(), f"dataset '{self.name}': column '{column}' of {self.path}", 2, "line")
        return events_from_arrays(
            self.name, src, dst, frame[self.time_col].to_numpy(float), weight, self.num_nodes, labels=labels
        )
