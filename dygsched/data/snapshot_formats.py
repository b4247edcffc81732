"""Snapshots saved with ``torch.save``, read into a ``TemporalGraph``.

The file holds one of:

* a list (or tuple) of PyTorch Geometric ``Data`` snapshots, in time order: ``edge_index``
  (``[2, E]``), ``edge_weight`` (``[E]``; else a one-column ``edge_attr``; else every weight 1),
  ``x`` (``[N_t, F]``) and ``y`` (``[N_t]``);
* a PyTorch Geometric Temporal signal: ``DynamicGraphTemporalSignal``,
  ``StaticGraphTemporalSignal`` or ``DynamicGraphStaticSignal`` (its arrays, snapshot by snapshot,
  as its iterator would give them).

Reading needs neither code from the file nor PyTorch Geometric Temporal: the file is loaded with
``torch.load(weights_only=True)``, which builds only tensors, plain containers, the classes PyG
registers as safe to load (``Data``, ``TemporalData``, ...), and those ``allowed_globals()``
adds: ``Data``'s storage classes, NumPy arrays, and for each signal class a stand-in here that
only holds its arrays. A file that asks for anything else is refused, naming the global it asks
for, before that global is looked up.

Snapshots may have different node counts ``N_t``: the graph has ``N = max N_t`` nodes, node ``i``
is the same node in every snapshot, and in a snapshot with fewer nodes the missing ones
(``N_t .. N - 1``) do not exist there (``node_mask`` false, zero features and targets, no edges).
A target of ``[N_t, k]`` keeps its first column, as ``pgt.from_signal`` does; integer targets
are read as numbers (``task=regression``) or classes (``task=classification``, ``num_classes``
from the largest class unless given). A wide ``edge_attr`` (more than one column) is not a
weight: it is not read, and the log says so.

Refused with one ``DataError`` line: a file ``torch.save`` did not write, one holding something
else (the line says what it holds), no snapshots, a snapshot without ``x``, ``y`` or
``edge_index``, an ``edge_index`` that is not ``[2, E]`` integer ids or names nodes outside
``[0, N_t)``, weights or targets that do not match the edges or nodes, features of different
widths in different snapshots; what ``TemporalGraph`` refuses (NaN or infinite values, negative
weights) is refused too.
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dygsched.data.memory_budget import check_fits
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.errors import DataError

log = logging.getLogger("dygsched")
TASKS = (Task.REGRESSION.value, Task.CLASSIFICATION.value)  # what a file of snapshots may hold
PGT_SIGNALS = "torch_geometric_temporal.signal"
ZIP_MAGIC = b"PK\x03\x04"  # torch.save writes a zip archive


class SavedSignal:
    """A PyTorch Geometric Temporal signal as the file holds it: its attributes, no behaviour.

    Unpickling fills ``__dict__`` with what the library's object had. ``fields`` names, in the
    order ``(edge_index, edge_weight, x, y)``, the attributes the library's ``__getitem__`` turns
    into a snapshot's ``Data``; ``shared`` those that hold one value for every snapshot.
    """

    fields: tuple[str, str, str, str] = ("edge_indices", "edge_weights", "features", "targets")
    shared: frozenset[str] = frozenset()


class DynamicGraphTemporalSignal(SavedSignal):
    pass


class StaticGraphTemporalSignal(SavedSignal):
    fields = ("edge_index", "edge_weight", "features", "targets")
    shared = frozenset({"edge_index", "edge_weight"})


class DynamicGraphStaticSignal(SavedSignal):
    fields = ("edge_indices", "edge_weights", "feature", "targets")
    shared = frozenset({"feature"})


def signal_arrays(signal: SavedSignal, path: Path) -> list[tuple[Any, ...]]:
    """Per snapshot ``(edge_index, edge_weight, x, y)``, as the library's iterator would give them."""
    state = vars(signal)
    try:
        values = {key: state[key] for key in signal.fields}
        count = len(values["targets"])
        return [tuple(values[key] if key in signal.shared else values[key][t] for key in signal.fields) for t in range(count)]
    except (KeyError, TypeError, IndexError) as exc:
        what = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
        raise DataError(f"{path}: a {type(signal).__name__} whose snapshots cannot be read ({what})") from None


SIGNALS = {
    f"{PGT_SIGNALS}.dynamic_graph_temporal_signal.DynamicGraphTemporalSignal": DynamicGraphTemporalSignal,
    f"{PGT_SIGNALS}.static_graph_temporal_signal.StaticGraphTemporalSignal": StaticGraphTemporalSignal,
    f"{PGT_SIGNALS}.dynamic_graph_static_signal.DynamicGraphStaticSignal": DynamicGraphStaticSignal,
}


def allowed_globals() -> list[Any]:
    """What ``torch.load`` may build from these files, and nothing more: PyG's ``Data`` and its
    storage, NumPy arrays (under NumPy 2's and NumPy 1's module names), the signal
    stand-ins under the library's names."""
    from torch_geometric.data import Data
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import GlobalStorage

    dtypes = {type(np.dtype(code)) for code in "?bBhHiIlLqQefdgFDG"}  # numbers only, no object arrays
    reconstruct = (
        np._core.multiarray._reconstruct if hasattr(np, "_core") else np.core.multiarray._reconstruct  # type: ignore[attr-defined]  # NumPy 1's name, not in NumPy 2's stubs
    )
    return [
        Data,
        DataEdgeAttr,
        DataTensorAttr,
        GlobalStorage,
        np.ndarray,
        np.dtype,
        *dtypes,
        bytes,  # bytes: pickle protocol 2 writes an empty array's data as bytes()
        (reconstruct, "numpy._core.multiarray._reconstruct"),
        (reconstruct, "numpy.core.multiarray._reconstruct"),
        *((stand_in, name) for name, stand_in in SIGNALS.items()),
    ]


@contextmanager
def allowing(extra: list[Any]) -> Iterator[None]:
    """``torch.serialization.safe_globals(extra)`` for those of ``extra`` not allowed already. On
    leaving, torch's context removes every global it was given, also one that was allowed before
    it: given PyG's ``Data`` or ``TemporalData`` (which PyG allows for good on import), it would
    leave them refused for every later load in the process."""
    allowed = torch.serialization.get_safe_globals()
    with torch.serialization.safe_globals([item for item in extra if item not in allowed]):
        yield


def load_saved(path: Path) -> Any:
    """The object in a ``torch.save`` file, built only from ``allowed_globals()``."""
    try:
        with allowing(allowed_globals()), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns about the pickle protocol of files it then refuses
            return torch.load(path, weights_only=True, map_location="cpu")
    except Exception as exc:  # a pickle error has many types
        message = str(exc)
        wanted = re.search(r"GLOBAL (\S+)", message)
        if wanted:
            raise DataError(
                f"{path}: refused: it asks for {wanted.group(1)}, which snapshot files do not hold (nothing in it was run)"
            ) from None
        with path.open("rb") as stream:
            if stream.read(4) != ZIP_MAGIC:
                raise DataError(f"{path}: not a file written by torch.save") from None
        reason = message.split("WeightsUnpickler error:")[-1]
        first = next((line.strip() for line in reason.splitlines() if line.strip()), type(exc).__name__)
        raise DataError(f"{path}: a damaged or unreadable torch.save file ({first[:160]})") from None


def describe(value: Any) -> str:
    """What a loaded object is, in a few words: ``a dict with keys 'a', 'b'``, ``a list of 3 str``."""
    if isinstance(value, torch.Tensor):
        return f"a Tensor of shape {list(value.shape)}"
    if isinstance(value, np.ndarray):
        return f"a NumPy array of shape {list(value.shape)}"
    if isinstance(value, dict):
        keys = ", ".join(repr(k) for k in list(value)[:5]) + (", ..." if len(value) > 5 else "")
        return f"a dict with keys {keys}" if value else "an empty dict"
    if isinstance(value, (list, tuple)):
        kind = type(value).__name__
        if not value:
            return f"an empty {kind}"
        counts: dict[str, int] = {}
        for item in value:
            counts[type(item).__name__] = counts.get(type(item).__name__, 0) + 1
        return f"a {kind} of " + " and ".join(f"{n} {name}" for name, n in counts.items())
    name = type(value).__name__
    if name == "TemporalData":
        return "a TemporalData (an event stream: dataset=stream reads it)"
    return f"a {name}"


def snapshot_arrays(value: Any, path: Path) -> list[tuple[Any, Any, Any, Any, Any]]:
    """Per snapshot ``(edge_index, edge_weight, edge_attr, x, y)`` from what the file holds."""
    from torch_geometric.data import Data

    if isinstance(value, SavedSignal):
        return [(edge_index, weight, None, x, y) for edge_index, weight, x, y in signal_arrays(value, path)]
    if isinstance(value, (list, tuple)) and value and all(isinstance(item, Data) for item in value):
        return [(d.get("edge_index"), d.get("edge_weight"), d.get("edge_attr"), d.get("x"), d.get("y")) for d in value]
    accepted = "a list of torch_geometric Data snapshots or a PyTorch Geometric Temporal signal"
    raise DataError(f"{path}: holds {describe(value)}, not {accepted}")


@dataclass(frozen=True)
class SnapshotFileSource:
    """Snapshots from a ``torch.save`` file at ``path`` (see the module for what it may hold)."""

    path: str
    task: str = "regression"
    num_classes: int | None = None  # classification only; None: the largest class + 1
    name: str = "snapshots"

    def load(self) -> TemporalGraph:
        if self.task not in TASKS:
            raise DataError(f"dataset '{self.name}': unknown task '{self.task}' (choose from {', '.join(TASKS)})")
        path = Path(self.path).expanduser()
        if not path.exists():
            raise DataError(f"dataset '{self.name}': file not found: {path}")
        if path.is_dir():
            raise DataError(f"dataset '{self.name}': {path} is a folder; name the torch.save file")
        arrays = snapshot_arrays(load_saved(path), path)
        if not arrays:
            raise DataError(f"{path}: holds a signal with no snapshots")
        return self._graph(path, [_checked(path, t, *parts) for t, parts in enumerate(arrays)])

    def _graph(self, path: Path, parts: list[tuple[torch.Tensor, ...]]) -> TemporalGraph:
        task = Task(self.task)
        widths = [x.shape[1] for _, _, x, _ in parts]
        for t, width in enumerate(widths):
            if width != widths[0]:
                raise DataError(f"{path}: snapshot {t} has {width} features per node, snapshot 0 has {widths[0]}")
        counts = [x.shape[0] for _, _, x, _ in parts]
        n = max(counts)
        check_fits(len(parts) * n * (widths[0] + 2) * 4, f"{path}: {len(parts)} snapshots of {n:,} nodes")
        if min(counts) < n:
            log.info("dygsched: %s: snapshots have %d to %d nodes; the graph has %d, absent ones masked", path, min(counts), n, n)
        num_classes = 0
        if task is Task.CLASSIFICATION:
            if any(y.is_floating_point() for *_, y in parts):
                raise DataError(f"{path}: task=classification needs integer targets y, got floating-point ones")
            num_classes = (
                self.num_classes
                if self.num_classes is not None
                else max((int(y.max()) for *_, y in parts if y.numel()), default=-1) + 1
            )
        snapshots = tuple(_padded(edge_index, weight, x, y, n, task) for edge_index, weight, x, y in parts)
        return TemporalGraph(self.name, snapshots, task, num_classes)


def _tensor(path: Path, t: int, key: str, value: Any) -> torch.Tensor:
    if value is None:
        raise DataError(f"{path}: snapshot {t} has no {key}")
    try:
        return torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError):
        raise DataError(f"{path}: snapshot {t}: {key} is {describe(value)}, not an array of numbers") from None


def _checked(path: Path, t: int, edge_index: Any, edge_weight: Any, edge_attr: Any, x: Any, y: Any) -> tuple[torch.Tensor, ...]:
    """One snapshot's tensors, checked against its own node count ``N_t`` (the rows of ``x``)."""

    def fail(problem: str) -> DataError:
        return DataError(f"{path}: snapshot {t} {problem}")

    x, y, edges = _tensor(path, t, "x", x), _tensor(path, t, "y", y), _tensor(path, t, "edge_index", edge_index)
    if x.dim() == 1:
        x = x.reshape(-1, 1)
    if x.dim() != 2 or not (x.is_floating_point() or _is_integer(x)):
        raise fail(f"has features x of shape {list(x.shape)} and type {x.dtype}, expected [nodes, features] numbers")
    n = int(x.shape[0])
    if y.dim() == 0 or y.shape[0] != n or (y.dim() > 1 and y.flatten(1).shape[1] == 0):
        raise fail(f"has targets y of shape {list(y.shape)} for {n} nodes")
    if y.is_complex():
        raise fail(f"has targets y of type {y.dtype}, expected real numbers")
    if y.dim() > 1:
        y = y.flatten(1)[:, 0]
    if edges.numel() == 0:  # no edges, of any type (torch.empty(2, 0) is float)
        edges = torch.zeros(2, 0, dtype=torch.long)
    if edges.dim() != 2 or edges.shape[0] != 2 or not _is_integer(edges):
        raise fail(f"has edge_index of shape {list(edges.shape)} and type {edges.dtype}, expected [2, E] integer node ids")
    edges = edges.long()
    if edges.numel() and (int(edges.min()) < 0 or int(edges.max()) >= n):
        raise fail(f"has edges between nodes {int(edges.min())} .. {int(edges.max())}, outside its {n} nodes [0, {n})")
    weight = _weight(path, t, edge_weight, edge_attr, edges.shape[1])
    return edges, weight, x.float(), y


def _weight(path: Path, t: int, edge_weight: Any, edge_attr: Any, count: int) -> torch.Tensor:
    """``edge_weight``, else a one-column ``edge_attr``, else ones."""
    key, value = ("edge_weight", edge_weight) if edge_weight is not None else ("edge_attr", edge_attr)
    if value is None:
        return torch.ones(count)
    weight = _tensor(path, t, key, value)
    if key == "edge_attr" and weight.dim() == 2 and weight.shape[1] != 1:
        log.info("dygsched: %s: snapshot %d: edge_attr has %d columns, not a weight; every weight is 1", path, t, weight.shape[1])
        return torch.ones(count)
    if weight.numel() != count or (weight.dim() > 1 and weight.shape[0] != count):
        raise DataError(f"{path}: snapshot {t} has {key} of shape {list(weight.shape)} for {count} edges")
    if weight.dtype == torch.bool or not (weight.is_floating_point() or _is_integer(weight)):
        raise DataError(f"{path}: snapshot {t} has {key} of type {weight.dtype}, expected numbers")
    return weight.reshape(count).float()


def _is_integer(tensor: torch.Tensor) -> bool:
    return not tensor.is_floating_point() and not tensor.is_complex() and tensor.dtype != torch.bool


def _padded(edges: torch.Tensor, weight: torch.Tensor, x: torch.Tensor, y: torch.Tensor, n: int, task: Task) -> Snapshot:
    """The snapshot over all ``n`` nodes: its own ``N_t`` exist, the others are zero and masked."""
    y = y.long() if task is Task.CLASSIFICATION else y.float()
    own = x.shape[0]
    mask = torch.zeros(n, dtype=torch.bool)
    mask[:own] = True
    if own < n:
        x = torch.cat([x, x.new_zeros(n - own, x.shape[1])])
        y = torch.cat([y, y.new_zeros(n - own)])
    return Snapshot(edge_index=edges, edge_weight=weight, x=x, y=y, node_mask=mask)
