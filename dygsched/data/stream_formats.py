"""Event streams in the file formats this field ships them in, read into an ``EventStream``.

``dataset.format`` names one, or ``auto`` recognises it from the path:

* ``jodie``: JODIE's CSV (``user_id,item_id,timestamp,state_label,`` then the features, one
  column each; the header names the features once). Users and items are two id spaces, so the
  items are numbered after the users (node ``max_user + 1 + item``), as TGN's and DyGLib's
  preprocessing number them.
* ``dyglib``: TGN's and DyGLib's ``ml_<name>.csv`` (an index column, ``u,i,ts,label,idx``) with
  the edge features ``ml_<name>.npy`` beside it (row ``idx`` of that matrix belongs to the event;
  its row 0 is padding). The node features ``ml_<name>_node.npy`` are not read: for JODIE's
  streams they are zeros, and no model here takes node features.
* ``tgl``: TGL's ``edges.csv`` (``src,dst,time,int_roll,ext_roll``, an index column first) with
  ``edge_features.pt`` beside it when the stream has features (a ``[E, F]`` tensor); the path may
  be the file or its folder. The rolls are not used: splits are chronological by event count, as
  everywhere in the project (TGL's ``ext_roll`` is such a split too, 70/15/15).
* ``pyg``: a PyTorch Geometric ``TemporalData`` saved with ``torch.save`` (``src``, ``dst``,
  ``t``, ``msg`` as the edge features), read with ``weights_only`` loading.
* ``edgelist``: a plain ``src dst t`` list, comma or whitespace separated, with a header
  naming ``src,dst,t`` or none (SNAP's format).

**Labels** (node property prediction, ``task=node``: ``dygsched.data.event_labels``) are kept where
a format has them: JODIE's ``state_label``, DyGLib's ``label`` column, PyG's ``y``, and an edge
list's column named ``label`` in its header. ``label_col`` names another column (by header name,
or by 0-based position in a file without a header); each label must be 0 or 1.

Ids are compacted to ``0 .. n-1`` (``node_ids`` maps them back) except in the bipartite formats,
which keep their numbering. Rows out of time order are sorted (stable: ties keep file order) and
the sort is logged. A file in no known format, features whose rows do not match the events,
non-numeric or missing ids and times are refused with one ``DataError`` naming the file and the
first bad row.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from dygsched.data.event_labels import event_labels
from dygsched.data.events import EventStream, events_from_arrays
from dygsched.errors import DataError

FORMATS = ("auto", "jodie", "dyglib", "tgl", "pyg", "edgelist")
JODIE_HEADER = ("user_id", "item_id", "timestamp", "state_label")
DYGLIB_COLUMNS = ("u", "i", "ts", "idx")
TGL_COLUMNS = ("src", "dst", "time")
log = logging.getLogger("dygsched")


def detect_format(path: Path) -> str:
    """The format of ``path`` (a file, or TGL's folder), from its name and its first line."""
    if path.is_dir():
        if (path / "edges.csv").is_file():
            return "tgl"
        raise DataError(f"{path} is a folder without TGL's edges.csv: name the stream's file")
    if path.suffix in (".pt", ".pth"):
        return "pyg"
    header = _first_line(path)
    fields = [f.strip().lower() for f in re.split(r"[,\s]+", header.strip()) if f.strip()]
    if tuple(fields[:4]) == JODIE_HEADER:
        return "jodie"
    if re.fullmatch(r"ml_.+\.csv", path.name) or set(DYGLIB_COLUMNS) <= set(fields):
        return "dyglib"
    if set(TGL_COLUMNS) <= set(fields):
        return "tgl"
    if fields[:3] == ["src", "dst", "t"] or _numbers(fields[:3]):
        return "edgelist"
    raise DataError(
        f"{path}: not a stream format this project reads (first line {header.strip()[:80]!r}); "
        f"choose dataset.format from {', '.join(FORMATS[1:])}"
    )


def _first_line(path: Path) -> str:
    try:
        with path.open("r", encoding="utf-8") as stream:
            return stream.readline()
    except UnicodeDecodeError:
        raise DataError(f"{path}: not a text file (a stream's CSV or edge list is text; a .pt file is PyG's)") from None


def _numbers(fields: list[str]) -> bool:
    if len(fields) < 3:
        return False
    try:
        [float(f) for f in fields]
    except ValueError:
        return False
    return True


def _bad_row(path: Path, what: str, bad: np.ndarray, first_line: int) -> DataError:
    """One line naming the file, the problem and the first offending row (1-based line of the file)."""
    row = int(np.flatnonzero(bad)[0])
    return DataError(f"{path}: {what} (line {row + first_line})")


def _numeric(frame: pd.DataFrame, column: str | int, path: Path, what: str, first_line: int, integer: bool) -> np.ndarray:
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        raw = frame[column].iloc[int(np.flatnonzero(bad)[0])]
        got = "nothing (a missing value)" if pd.isna(raw) else repr(raw)
        raise _bad_row(path, f"{what} must be numbers, got {got}", bad, first_line)
    if integer:
        bad = (np.mod(values, 1) != 0) | (values < 0)
        if bad.any():
            raise _bad_row(path, f"{what} must be whole numbers of 0 or more", bad, first_line)
    return values


def _endpoints_and_times(
    frame: pd.DataFrame,
    path: Path,
    columns: tuple[str | int, str | int, str | int],
    first_line: int,
    names: tuple[str, str] = ("source", "destination"),
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The id columns (whole numbers, 0 or more) and the time column (numbers) of an event table."""

    def what(kind: str, column: str | int) -> str:
        return kind if isinstance(column, int) else f"{kind} ({column})"

    src, dst, time = columns
    return (
        _numeric(frame, src, path, what(f"{names[0]} ids", src), first_line, integer=True).astype(np.int64),
        _numeric(frame, dst, path, what(f"{names[1]} ids", dst), first_line, integer=True).astype(np.int64),
        _numeric(frame, time, path, what("timestamps", time), first_line, integer=False),
    )


def _read_csv(path: Path, **options: Any) -> pd.DataFrame:
    try:
        return pd.read_csv(path, **options)
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: no events") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"{path}: cannot be read as CSV ({str(exc).strip().splitlines()[0]})") from None


@dataclass(frozen=True)
class StreamFileSource:
    """An event stream from ``path`` in ``format`` (``auto``: recognised; see the module), its
    labels from the format's own column or ``label_col``."""

    path: str
    format: str = "auto"
    name: str = "stream"
    label_col: str | int | None = None

    def load(self) -> EventStream:
        if self.format not in FORMATS:
            raise DataError(f"dataset '{self.name}': unknown stream format '{self.format}' (choose from {', '.join(FORMATS)})")
        path = Path(self.path).expanduser()
        if not path.exists():
            raise DataError(f"dataset '{self.name}': file not found: {path}")
        kind = detect_format(path) if self.format == "auto" else self.format
        if path.is_dir() and kind != "tgl":
            raise DataError(f"dataset '{self.name}': {path} is a folder; format '{kind}' reads one file")
        if self.label_col is not None and kind == "pyg":
            raise DataError(
                f"dataset '{self.name}': label_col names a column of a table; a PyG TemporalData keeps its labels in y"
            )
        if kind == "pyg":
            return read_pyg(path, self.name)
        tables = {"jodie": read_jodie, "dyglib": read_dyglib, "tgl": read_tgl, "edgelist": read_edgelist}
        return tables[kind](path, self.name, self.label_col)


def _stream(
    name: str,
    path: Path,
    src: np.ndarray,
    dst: np.ndarray,
    times: np.ndarray,
    num_nodes: int | None,
    features: np.ndarray | torch.Tensor | None = None,
    labels: torch.Tensor | None = None,
) -> EventStream:
    if len(times) == 0:
        raise DataError(f"{path}: no events")
    times = np.array(times, dtype=np.float64)  # copies: pandas may hand out read-only arrays
    if (np.diff(times) < 0).any():
        log.info("dygsched: %s: events are not in time order; sorted by time (ties keep the file's order)", path)
    src, dst = np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)
    if isinstance(features, np.ndarray):
        features = np.require(features, dtype=np.float32, requirements="W")  # a copy only where read-only
    return events_from_arrays(name, src, dst, times, None, num_nodes, features, labels)


def _label_column(frame: pd.DataFrame, column: str | int, path: Path, first_line: int) -> torch.Tensor:
    """The 0/1 labels of ``column`` (a header name, or a position where the frame has none)."""
    if column not in frame.columns:
        shown = ", ".join(map(str, frame.columns))
        raise DataError(f"{path}: no label column {column!r} (the columns: {shown})")
    return event_labels(frame[column].to_numpy(), str(path), first_line, "line")


def _positional(column: str | int | None) -> str | int | None:
    """``label_col`` for a file read without a header: a position (``3`` or ``"3"``)."""
    if isinstance(column, str) and column.strip().isdigit():
        return int(column)
    return column


def read_jodie(path: Path, name: str, label_col: str | int | None = None) -> EventStream:
    """JODIE's CSV: users, then items numbered after them; every column after the fourth a feature;
    the fourth (``state_label``) the events' labels."""
    frame = _read_csv(path, skiprows=1, header=None)
    if frame.shape[1] < 4:
        raise DataError(f"{path}: JODIE's format has user_id, item_id, timestamp and state_label columns, found {frame.shape[1]}")
    users, items, times = _endpoints_and_times(frame, path, (0, 1, 2), 2, names=("user", "item"))
    column = _positional(label_col)
    labels = _label_column(frame, 3 if column is None else column, path, 2)
    features = None
    if frame.shape[1] > 4:
        block = frame.iloc[:, 4:].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float32)
        bad = ~np.isfinite(block).all(axis=1)
        if bad.any():
            raise _bad_row(path, "features must be numbers", bad, 2)
        features = block
    offset = int(users.max()) + 1
    return _stream(name, path, users, items + offset, times, offset + int(items.max()) + 1, features, labels)


def read_dyglib(path: Path, name: str, label_col: str | int | None = None) -> EventStream:
    """``ml_<name>.csv`` and its ``ml_<name>.npy`` edge features (row ``idx`` per event); the
    ``label`` column, where there is one, the events' labels."""
    frame = _read_csv(path, index_col=0)
    missing = [c for c in DYGLIB_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: DyGLib's ml_<name>.csv needs columns u, i, ts, idx; missing {', '.join(missing)}")
    src, dst, times = _endpoints_and_times(frame, path, ("u", "i", "ts"), 2)
    column = "label" if label_col is None and "label" in frame.columns else label_col
    labels = None if column is None else _label_column(frame, column, path, 2)
    idx = _numeric(frame, "idx", path, "event indices (idx)", 2, integer=True).astype(np.int64)
    features = None
    feature_path = path.with_suffix(".npy")
    if feature_path.is_file():
        try:
            matrix = np.load(feature_path, mmap_mode="r")
        except (ValueError, OSError) as exc:
            raise DataError(f"{feature_path}: not a NumPy array file ({exc})") from None
        if matrix.ndim != 2:
            raise DataError(f"{feature_path}: edge features must be a matrix, got shape {matrix.shape}")
        bad = idx >= matrix.shape[0]
        if bad.any():
            raise _bad_row(path, f"idx {idx[bad][0]} has no row in {feature_path.name} ({matrix.shape[0]} rows)", bad, 2)
        features = np.asarray(matrix[idx], dtype=np.float32)
    else:
        log.info("dygsched: %s: no %s beside it; the events have no features", path, feature_path.name)
    return _stream(name, path, src, dst, times, None, features, labels)


def read_tgl(path: Path, name: str, label_col: str | int | None = None) -> EventStream:
    """TGL's ``edges.csv`` and, when present, ``edge_features.pt`` beside it."""
    folder, file = (path, path / "edges.csv") if path.is_dir() else (path.parent, path)
    frame = _read_csv(file)
    missing = [c for c in TGL_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{file}: TGL's edges.csv needs columns src, dst, time; missing {', '.join(missing)}")
    src, dst, times = _endpoints_and_times(frame, file, TGL_COLUMNS, 2)
    labels = None if label_col is None else _label_column(frame, label_col, file, 2)
    features = None
    feature_path = folder / "edge_features.pt"
    if feature_path.is_file():
        try:
            matrix = torch.load(feature_path, weights_only=True, map_location="cpu")
        except Exception as exc:  # a pickle error has many types
            raise DataError(f"{feature_path}: not a saved tensor ({str(exc).strip().splitlines()[0]})") from None
        if not isinstance(matrix, torch.Tensor) or matrix.dim() != 2 or matrix.size(0) != len(frame):
            shape = tuple(matrix.shape) if isinstance(matrix, torch.Tensor) else type(matrix).__name__
            raise DataError(
                f"{feature_path}: edge features must be a [{len(frame)}, F] tensor, one row per event of {file.name}; got {shape}"
            )
        features = matrix.float()
    # TGL's ids are already dense (0 .. n-1), as TGL's sampler needs: keep them
    return _stream(name, file, src, dst, times, int(max(src.max(), dst.max())) + 1, features, labels)


def read_pyg(path: Path, name: str) -> EventStream:
    """A ``torch_geometric.data.TemporalData`` saved with ``torch.save``."""
    from torch_geometric.data import TemporalData
    from torch_geometric.data.storage import GlobalStorage

    from dygsched.data.snapshot_formats import allowing

    try:
        with allowing([TemporalData, GlobalStorage]):
            data = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as exc:  # a pickle error has many types
        raise DataError(f"{path}: not a saved TemporalData ({str(exc).strip().splitlines()[0][:160]})") from None
    if not isinstance(data, TemporalData) or any(getattr(data, key, None) is None for key in ("src", "dst", "t")):
        raise DataError(f"{path}: expected a TemporalData with src, dst and t, got {type(data).__name__}")
    src, dst, times = data.src, data.dst, data.t
    if (
        not all(isinstance(v, torch.Tensor) for v in (src, dst, times))
        or src.is_floating_point()
        or dst.is_floating_point()
        or src.numel() != dst.numel()
        or times.numel() != src.numel()
    ):
        raise DataError(f"{path}: src and dst must be integer ids and t one time per event")
    features = getattr(data, "msg", None)
    y = getattr(data, "y", None)  # PyG's JODIEDataset keeps the state labels there
    labels = None
    if isinstance(y, torch.Tensor) and y.numel() == src.numel():
        labels = event_labels(y.reshape(-1).numpy(), f"{path} (y)")
    return _stream(name, path, src.numpy(), dst.numpy(), times.double().numpy(), None, features, labels)


def read_edgelist(path: Path, name: str, label_col: str | int | None = None) -> EventStream:
    """``src dst t`` per line, comma or whitespace separated, an optional ``src,dst,t`` header; a
    header's ``label`` column (or ``label_col``) the events' labels."""
    line = _first_line(path)
    header = [f.strip().lower() for f in re.split(r"[,\s]+", line.strip()) if f.strip()]
    has_header = not _numbers(header[:3])
    separator = "," if "," in line else r"\s+"
    frame = _read_csv(path, sep=separator, header=None, skiprows=1 if has_header else 0)
    if frame.shape[1] < 3:
        raise DataError(f"{path}: an edge list needs three columns (src, dst, t), found {frame.shape[1]}")
    first_line = 2 if has_header else 1
    src, dst, times = _endpoints_and_times(frame, path, (0, 1, 2), first_line)
    column: str | int | None = _positional(label_col)
    if has_header:
        names = [f.strip() for f in re.split(r"[,\s]+" if separator != "," else ",", line.strip())]
        if label_col is None and "label" in [n.lower() for n in names]:
            column = [n.lower() for n in names].index("label")
        elif isinstance(column, str):
            if column not in names:
                raise DataError(f"{path}: no label column {column!r} (the header names {', '.join(names)})")
            column = names.index(column)
    labels = None if column is None else _label_column(frame, column, path, first_line)
    return _stream(name, path, src, dst, times, None, labels=labels)
