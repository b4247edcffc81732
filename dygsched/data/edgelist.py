"""Timestamped edge lists (CSV) cut into snapshots, with FlareDTDG's features and targets.

Time is cut into ``num_snapshots`` equal intervals or into windows of ``snapshot_duration``
time units. Repeated interactions inside one snapshot become one edge whose weight is their
count. As in FlareDTDG section 4.1, a node's features at snapshot ``t`` are its in- and
out-degree there (as ``log(1 + d)``) and its target is ``log(1 + degree)`` in snapshot ``t + 1``,
so the last cut only provides targets. A node exists in a snapshot when it has an edge there.
Node ids are compacted to ``0..n-1`` in sorted order unless ``num_nodes`` is given, in which case
they must already lie in ``[0, num_nodes)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.errors import DataError


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
                f"dataset '{self.name}': unknown column(s) {', '.join(missing)} in {path} (it has: {', '.join(map(str, frame.columns))})"
            )
        if frame.empty:
            raise DataError(f"dataset '{self.name}': {path} has no edges")
        for col in columns:
            if not pd.api.types.is_numeric_dtype(frame[col]):
                raise DataError(f"dataset '{self.name}': column '{col}' of {path} must be numeric")
            if frame[col].isna().any():
                raise DataError(f"dataset '{self.name}': column '{col}' of {path} has missing values")
        for col in (self.src_col, self.dst_col):
            values = frame[col].to_numpy()
            if not np.all(np.equal(np.mod(values, 1), 0)):
                raise DataError(f"dataset '{self.name}': node ids in column '{col}' of {path} must be integers")
            if values.min() < 0:
                raise DataError(f"dataset '{self.name}': negative node id {int(values.min())} in column '{col}' of {path}")
        if not np.isfinite(frame[self.time_col].to_numpy(dtype=float)).all():
            raise DataError(f"dataset '{self.name}': timestamps in {path} must be finite")
        return frame

    def _snapshot_ids(self, times: np.ndarray) -> np.ndarray:
        if (self.num_snapshots is None) == (self.snapshot_duration is None):
            raise DataError(f"dataset '{self.name}': set exactly one of num_snapshots and snapshot_duration")
        start, stop = float(times.min()), float(times.max())
        if self.snapshot_duration is not None:
            if not self.snapshot_duration > 0:
                raise DataError(f"dataset '{self.name}': snapshot_duration must be positive, got {self.snapshot_duration}")
            return np.floor((times - start) / self.snapshot_duration).astype(np.int64)
        if self.num_snapshots < 2:
            raise DataError(f"dataset '{self.name}': num_snapshots must be at least 2 (the last one only gives targets)")
        span = max(stop - start, 1e-12)
        return np.minimum(((times - start) / span * self.num_snapshots).astype(np.int64), self.num_snapshots - 1)

    def load(self) -> TemporalGraph:
        frame = self._read()
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

        graphs = []
        for t in range(count):
            sel = cut == t
            keys, inverse = np.unique(src[sel] * n + dst[sel], return_inverse=True)
            w = np.bincount(inverse, weights=weight[sel], minlength=keys.size).astype(np.float32)
            s, d = keys // n, keys % n
            graphs.append((np.stack([s, d]), w, np.bincount(s, minlength=n), np.bincount(d, minlength=n)))

        snapshots = []
        for t in range(count - 1):
            edge_index, w, out_deg, in_deg = graphs[t]
            _, _, next_out, next_in = graphs[t + 1]
            features = np.log1p(np.stack([in_deg, out_deg], axis=1)).astype(np.float32)
            snapshots.append(
                Snapshot(
                    edge_index=torch.from_numpy(edge_index),
                    edge_weight=torch.from_numpy(w),
                    x=torch.from_numpy(features),
                    y=torch.from_numpy(np.log1p(next_in + next_out).astype(np.float32)),
                    node_mask=torch.from_numpy((in_deg + out_deg) > 0),
                )
            )
        return TemporalGraph(self.name, tuple(snapshots), Task.REGRESSION)
