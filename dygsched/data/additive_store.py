"""DistDy's additive storage (section 3.2): one graph store's share of a window of snapshots.

A store keeps, for each snapshot of the training window, the nodes assigned to it:

* **Features** cut into ``segments`` equal segments. The first time a node is on this store in the
  window (new, moved in, or back after living elsewhere) its whole vector is stored (``full``);
  after that only the segments that changed since the snapshot before, plus a reference for each
  unchanged one (``additive``; a node that did not change costs its references only).
  Reconstruction walks forward from the window's oldest snapshot, overlaying the stored segments.
* **Edges**: every edge incident to a node of this store in the window's oldest snapshot, then per
  later snapshot the edges inserted and deleted (the store's incident edge set changes when edges
  do and when nodes move). Sliding the window applies the oldest changes to the base.

When the window slides, the oldest snapshot's features are dropped and the new oldest one's
additive entries are materialised (they would lose their base). Sizes are the bytes of what is
stored: ``full`` rows, changed segments, ``REFERENCE_BYTES`` per reference, 16 bytes per edge
(two int64 ids). Numpy only.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from dygsched.data.sorted_keys import sorted_difference, sorted_union, sorted_unique

REFERENCE_BYTES = 8  # a pointer to an unchanged segment stored earlier
EDGE_BYTES = 16  # (source, target) as two int64 ids


def segment_bounds(width: int, segments: int) -> list[tuple[int, int]]:
    """``segments`` contiguous column ranges covering ``width`` columns (sizes differing by at most one)."""
    if segments < 1:
        raise ValueError(f"features need at least one segment, got {segments}")
    edges = np.linspace(0, width, segments + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def changed_segments(before: np.ndarray, after: np.ndarray, bounds: list[tuple[int, int]]) -> np.ndarray:
    """``[rows, segments]``: which segments of each row differ (bit for bit)."""
    differs = before != after
    return np.stack([differs[:, a:b].any(axis=1) for a, b in bounds], axis=1) if bounds else np.zeros((len(before), 0), bool)


def additive_bytes(changed: np.ndarray, bounds: list[tuple[int, int]], itemsize: int) -> np.ndarray:
    """Per row: the bytes of its changed segments plus a reference for each unchanged one."""
    widths = np.array([b - a for a, b in bounds]) * itemsize
    return (changed * widths).sum(axis=1) + (~changed).sum(axis=1) * REFERENCE_BYTES


@dataclass
class _Version:
    """What a store holds of one snapshot."""

    nodes: np.ndarray  # node ids on the store, increasing
    full_nodes: np.ndarray  # stored whole
    full_rows: np.ndarray  # [len(full_nodes), width]
    add_nodes: np.ndarray  # stored additively
    segments: list[tuple[np.ndarray, np.ndarray]]  # per segment: (nodes whose segment changed, their values)
    inserted: np.ndarray  # [2, e] edges that joined the store's incident set since the snapshot before
    deleted: np.ndarray  # [2, e] edges that left it

    def nbytes(self, bounds: list[tuple[int, int]]) -> dict[str, int]:
        segment_bytes = sum(values.nbytes for _, values in self.segments)
        stored = sum(nodes.size for nodes, _ in self.segments)
        references = self.add_nodes.size * len(bounds) - stored
        return {
            "features_full": int(self.full_rows.nbytes),
            "features_additive": int(segment_bytes + references * REFERENCE_BYTES),
            "edges": int((self.inserted.shape[1] + self.deleted.shape[1]) * EDGE_BYTES),
        }


@dataclass
class GraphStore:
    """One store's window of snapshots (see the module docstring). ``window``: snapshots kept."""

    width: int
    window: int
    segments: int = 4
    itemsize: int = 4
    versions: deque[tuple[int, _Version]] = field(default_factory=deque)  # (snapshot index, _Version), oldest first
    base_edges: np.ndarray = field(default_factory=lambda: np.zeros((2, 0), np.int64))  # incident edges at the oldest snapshot

    def __post_init__(self) -> None:
        self.bounds = segment_bounds(self.width, self.segments)

    @property
    def snapshots(self) -> list[int]:
        return [t for t, _ in self.versions]

    def _latest_features(self) -> tuple[np.ndarray, np.ndarray] | None:
        if not self.versions:
            return None
        return self.features(self.versions[-1][0])

    def add(self, t: int, nodes: np.ndarray, x: np.ndarray, edges: np.ndarray) -> int:
        """Store snapshot ``t``'s ``nodes`` (their rows of ``x``, the whole snapshot's features) and the
        snapshot's ``edges`` incident to them; slide the window if full. Returns the feature bytes
        this snapshot takes (``a_t`` of the partition problem)."""
        if self.versions and t != self.versions[-1][0] + 1:
            raise ValueError(f"snapshot {t} does not follow {self.versions[-1][0]}")
        nodes = sorted_unique(np.asarray(nodes, dtype=np.int64))
        previous = self._latest_features()
        if previous is None:
            before_nodes, before_rows = np.zeros(0, np.int64), np.zeros((0, self.width), x.dtype)
        else:
            before_nodes, before_rows = previous
        stayed = np.isin(nodes, before_nodes)
        full_nodes, add_nodes = nodes[~stayed], nodes[stayed]
        segments = []
        if add_nodes.size:
            old = before_rows[np.searchsorted(before_nodes, add_nodes)]
            changed = changed_segments(old, x[add_nodes], self.bounds)
            for s, (a, b) in enumerate(self.bounds):
                which = add_nodes[changed[:, s]]
                segments.append((which, np.ascontiguousarray(x[which, a:b])))
        else:
            segments = [(np.zeros(0, np.int64), np.zeros((0, b - a), x.dtype)) for a, b in self.bounds]
        incident = _incident(edges, nodes)
        if self.versions:
            current = self.edges(self.versions[-1][0])
            inserted, deleted = _difference(incident, current), _difference(current, incident)
        else:
            self.base_edges, inserted, deleted = incident, np.zeros((2, 0), np.int64), np.zeros((2, 0), np.int64)
        version = _Version(nodes, full_nodes, np.ascontiguousarray(x[full_nodes]), add_nodes, segments, inserted, deleted)
        self.versions.append((t, version))
        while len(self.versions) > self.window:
            self._slide()
        sizes = version.nbytes(self.bounds)
        return sizes["features_full"] + sizes["features_additive"]

    def _slide(self) -> None:
        """Drop the oldest snapshot: its successor's edge changes go into the base, and its successor's
        additive entries are stored whole (their base is gone)."""
        nodes, rows = self.features(self.versions[1][0])
        self.base_edges = self.edges(self.versions[1][0])
        self.versions.popleft()
        empty = np.zeros(0, np.int64)
        whole = _Version(
            nodes,
            nodes,
            rows,
            empty,
            [(empty, np.zeros((0, b - a), rows.dtype)) for a, b in self.bounds],
            np.zeros((2, 0), np.int64),
            np.zeros((2, 0), np.int64),
        )
        self.versions[0] = (self.versions[0][0], whole)

    def features(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """``(nodes, rows)`` of snapshot ``t`` on this store, reconstructed from its versions."""
        position = self.snapshots.index(t)
        nodes, rows = np.zeros(0, np.int64), np.zeros((0, self.width), np.float32)
        for _, version in list(self.versions)[: position + 1]:
            kept = np.isin(nodes, version.add_nodes)  # only a node that stayed continues from its rows
            carried_nodes, carried_rows = nodes[kept], rows[kept]
            merged_nodes = np.concatenate([carried_nodes, version.full_nodes])
            merged_rows = (
                np.concatenate([carried_rows, version.full_rows.astype(carried_rows.dtype, copy=False)])
                if merged_nodes.size
                else carried_rows
            )
            order = np.argsort(merged_nodes, kind="stable")
            nodes, rows = merged_nodes[order], merged_rows[order].copy()
            for (a, b), (which, values) in zip(self.bounds, version.segments):
                if which.size:
                    rows[np.searchsorted(nodes, which), a:b] = values
        return nodes, rows

    def edges(self, t: int) -> np.ndarray:
        """``[2, e]``: the edges incident to this store's nodes in snapshot ``t``, sorted."""
        position = self.snapshots.index(t)
        current = self.base_edges
        for _, version in list(self.versions)[1 : position + 1]:
            current = _union(_difference(current, version.deleted), version.inserted)
        return current

    def nbytes(self) -> dict[str, int]:
        """Bytes held now, by kind (``edges`` includes the base edge set)."""
        total = {"features_full": 0, "features_additive": 0, "edges": self.base_edges.shape[1] * EDGE_BYTES}
        for _, version in self.versions:
            for kind, count in version.nbytes(self.bounds).items():
                total[kind] += count
        return total


def _keys(edges: np.ndarray) -> np.ndarray:
    return edges[0].astype(np.int64) * (2**32) + edges[1].astype(np.int64)


def _from_keys(keys: np.ndarray) -> np.ndarray:
    return np.stack([keys // (2**32), keys % (2**32)]).astype(np.int64)


def _incident(edges: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    mask = np.isin(edges[0], nodes) | np.isin(edges[1], nodes)
    return _from_keys(sorted_unique(_keys(edges[:, mask])))


def _difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _from_keys(sorted_difference(_keys(a), _keys(b)))


def _union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _from_keys(sorted_union(_keys(a), _keys(b)))


@dataclass(frozen=True)
class HistoryStorage:
    """A whole history of snapshots on one store, stored whole and additively (DistDy figures 7-9):
    bytes of features and edges each way, and the seconds storing and reconstructing took."""

    snapshots: int
    full_feature_bytes: int
    full_edge_bytes: int
    additive_feature_bytes: int
    additive_edge_bytes: int
    store_s: float
    reconstruct_s: float

    def saving(self, features: bool, edges: bool) -> float:
        """The share of the whole-snapshot bytes saved when features and/or edges are stored additively."""
        full = self.full_feature_bytes + self.full_edge_bytes
        stored = (self.additive_feature_bytes if features else self.full_feature_bytes) + (
            self.additive_edge_bytes if edges else self.full_edge_bytes
        )
        return 1.0 - stored / full


def history_storage(snapshots: list[tuple[np.ndarray, np.ndarray, np.ndarray]], segments: int) -> HistoryStorage:
    """Store every snapshot ``(x, edge_index, present nodes)`` of a history on one store that keeps them
    all, check that each reconstructs exactly, and count the bytes."""
    import time

    width, itemsize = snapshots[0][0].shape[1], snapshots[0][0].dtype.itemsize
    store = GraphStore(width, len(snapshots), segments, itemsize)
    start = time.perf_counter()
    for t, (x, edges, nodes) in enumerate(snapshots):
        store.add(t, nodes, x, edges)
    stored = time.perf_counter() - start
    start = time.perf_counter()
    for t, (x, edges, nodes) in enumerate(snapshots):
        held_nodes, rows = store.features(t)
        if not (np.array_equal(held_nodes, sorted_unique(nodes)) and np.array_equal(rows, x[held_nodes])):
            raise AssertionError(f"snapshot {t} did not reconstruct exactly")
        if store.edges(t).shape[1] != _incident(edges, nodes).shape[1]:
            raise AssertionError(f"snapshot {t}'s edges did not reconstruct exactly")
    reconstructed = time.perf_counter() - start
    held = store.nbytes()
    return HistoryStorage(
        snapshots=len(snapshots),
        full_feature_bytes=sum(sorted_unique(nodes).size * width * itemsize for _, _, nodes in snapshots),
        full_edge_bytes=sum(_incident(edges, nodes).shape[1] * EDGE_BYTES for _, edges, nodes in snapshots),
        additive_feature_bytes=held["features_full"] + held["features_additive"],
        additive_edge_bytes=held["edges"],
        store_s=stored,
        reconstruct_s=reconstructed,
    )
