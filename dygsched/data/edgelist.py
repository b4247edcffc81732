"""Timestamped edge lists (CSV) cut into snapshots, with FlareDTDG's features and targets.

Time is cut into ``num_snapshots`` equal intervals or into windows of ``snapshot_duration``
time units. Repeated interactions inside one snapshot become one edge whose weight is their
count. As in FlareDTDG section 4.1, a node's features at snapshot ``t`` are its in- and
out-degree there (as ``log(1 + d)``) and its target is ``log(1 + degree)`` in snapshot ``t + 1``,
so the last cut only provides targets. A node exists in a snapshot when it has an edge there.
With ``features="flare"`` (the FlareDTDG authors' code) the features are the raw weighted in- and
out-degrees and the target is ``log(1 + weighted in-degree)`` in snapshot ``t + 1``; with
``lags = L`` every snapshot holds the edges of ``L + 1`` consecutive intervals, so neighbouring
snapshots overlap. With ``kind="events"`` the rows become an ``EventStream`` instead (one event per row, in time
order, ties in row order), for continuous-time models; validation is the same.
Node ids are compacted to ``0..n-1`` in sorted order unless ``num_nodes`` is given, in which case
they must already lie in ``[0, num_nodes)``.

What the rows may hold, and what happens: rows in any order (snapshots are cut by time value);
repeated edges (one weighted edge per snapshot, weight = count, or the sum of ``weight_col``);
self-loops (kept as edges: a node's interaction with itself counts towards its degrees, and the
graph convolutions add no second self-loop); gaps in time (an empty snapshot: no edges, no node
exists in it, a group ending there contributes no loss). Refused with a ``DataError``: missing
columns, non-numeric or boolean columns, missing values, non-integer, negative or too large node
ids, non-finite timestamps or a span too wide to cut, negative or non-finite weights, a single
snapshot, more than ``MAX_SNAPSHOTS`` snapshots, or a graph that would not fit in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from dygsched.data.events import EventStream, events_from_arrays
from dygsched.data.memory_budget import check_fits
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.errors import DataError

KINDS = ("snapshots", "events")
FEATURES = ("log_degree", "flare")

MAX_SNAPSHOTS = 100_000
MAX_NODE_ID = 2**53  # ids read as floats are exact below this
BYTES_PER_NODE = 2 * 4 + 4 + 1 + 2 * 8  # features, target, mask, and the two degree counts while building


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

    def _snapshot_ids(self, times: np.ndarray) -> np.ndarray:
        if (self.num_snapshots is None) == (self.snapshot_duration is None):
            raise DataError(f"dataset '{self.name}': set exactly one of num_snapshots and snapshot_duration")
        start, stop = float(times.min()), float(times.max())
        if not np.isfinite(stop - start):
            raise DataError(f"dataset '{self.name}': timestamps span [{start:g}, {stop:g}], too wide to cut into snapshots")
        if self.snapshot_duration is not None:
            if not self.snapshot_duration > 0:
                raise DataError(f"dataset '{self.name}': snapshot_duration must be positive, got {self.snapshot_duration}")
            count = (stop - start) / self.snapshot_duration + 1
            if count > MAX_SNAPSHOTS:
                raise DataError(
                    f"dataset '{self.name}': snapshot_duration={self.snapshot_duration:g} cuts the timestamps "
                    f"into {count:.3g} snapshots (at most {MAX_SNAPSHOTS:,}); use a longer duration"
                )
            return np.floor((times - start) / self.snapshot_duration).astype(np.int64)
        assert self.num_snapshots is not None  # exactly one of the two is set (checked above)
        if not 2 <= self.num_snapshots <= MAX_SNAPSHOTS:
            raise DataError(
                f"dataset '{self.name}': num_snapshots must be in [2, {MAX_SNAPSHOTS:,}] (the last one only gives targets)"
            )
        span = max(stop - start, 1e-12)
        return np.minimum(((times - start) / span * self.num_snapshots).astype(np.int64), self.num_snapshots - 1)

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
        src = frame[self.src_col].to_numpy().astype(np.int64)
        dst = frame[self.dst_col].to_numpy().astype(np.int64)
        if self.num_nodes is None:
            ids, inverse = np.unique(np.concatenate([src, dst]), return_inverse=True)
            n = ids.size
            src, dst = inverse[: src.size], inverse[src.size :]
        else:
            n = int(self.num_nodes)
            top = int(max(src.max(), dst.max()))
            if top >= n:
                raise DataError(f"dataset '{self.name}': node id {top} is out of range for num_nodes={n}")
        weight = frame[self.weight_col].to_numpy(dtype=np.float32) if self.weight_col else np.ones(src.size, np.float32)
        if not self.directed:
            src, dst, weight = np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([weight, weight])
            times = np.concatenate([frame[self.time_col].to_numpy(float)] * 2)
        else:
            times = frame[self.time_col].to_numpy(float)
        cut = self._snapshot_ids(times)
        count = int(cut.max()) + 1
        if count < 2:
            raise DataError(f"dataset '{self.name}': the edges span a single snapshot; use a shorter snapshot_duration")
        check_fits(count * n * BYTES_PER_NODE, f"dataset '{self.name}': {count} snapshots of {n:,} nodes (num_nodes too large?)")

        if count - self.lags < 2:
            raise DataError(f"dataset '{self.name}': {count} intervals with lags={self.lags} leave fewer than 2 snapshots")
        graphs = []
        for t in range(count - self.lags):  # snapshot t holds the edges of intervals t .. t + lags
            sel = (cut >= t) & (cut <= t + self.lags)
            keys, inverse = np.unique(src[sel] * n + dst[sel], return_inverse=True)
            w = np.bincount(inverse, weights=weight[sel], minlength=keys.size).astype(np.float32)
            s, d = keys // n, keys % n
            degrees = (np.bincount(s, minlength=n), np.bincount(d, minlength=n), np.bincount(s, w, n), np.bincount(d, w, n))
            graphs.append((np.stack([s, d]), w, *degrees))

        snapshots = []
        for t in range(len(graphs) - 1):
            edge_index, w, out_deg, in_deg, out_weight, in_weight = graphs[t]
            _, _, next_out, next_in, _, next_in_weight = graphs[t + 1]
            if self.features == "flare":  # FlareDTDG's code: raw weighted degrees, log weighted in-degree next
                features = np.stack([in_weight, out_weight], axis=1).astype(np.float32)
                target = np.log1p(next_in_weight).astype(np.float32)
            else:
                features = np.log1p(np.stack([in_deg, out_deg], axis=1)).astype(np.float32)
                target = np.log1p(next_in + next_out).astype(np.float32)
            snapshots.append(
                Snapshot(
                    edge_index=torch.from_numpy(edge_index),
                    edge_weight=torch.from_numpy(w),
                    x=torch.from_numpy(features),
                    y=torch.from_numpy(target),
                    node_mask=torch.from_numpy((in_deg + out_deg) > 0),
                )
            )
        return TemporalGraph(self.name, tuple(snapshots), Task.REGRESSION)

    def _events(self, frame: pd.DataFrame) -> EventStream:
        """One event per row; ``directed=False`` keeps one event per row too (the models treat
        an interaction as touching both ends)."""
        src = frame[self.src_col].to_numpy().astype(np.int64)
        dst = frame[self.dst_col].to_numpy().astype(np.int64)
        if self.num_nodes is not None:
            top = int(max(src.max(), dst.max()))
            if top >= int(self.num_nodes):
                raise DataError(f"dataset '{self.name}': node id {top} is out of range for num_nodes={self.num_nodes}")
        weight = frame[self.weight_col].to_numpy(dtype=np.float32) if self.weight_col else None
        return events_from_arrays(self.name, src, dst, frame[self.time_col].to_numpy(float), weight, self.num_nodes)
