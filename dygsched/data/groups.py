"""Snapshot groups (sliding windows) and their split by time."""

from __future__ import annotations

from dataclasses import dataclass

from dygsched.data.temporal_graph import Snapshot, TemporalGraph
from dygsched.errors import ConfigError


class TooFewSnapshots(ConfigError):
    """The graph has too few snapshots for the window and the split (a cut stream's check words it for the cut)."""


@dataclass(frozen=True)
class SnapshotGroup:
    """Snapshots ``start .. stop-1``; the sample predicts the targets of snapshot ``stop-1``."""

    index: int
    start: int
    stop: int

    @property
    def size(self) -> int:
        return self.stop - self.start

    def snapshots(self, graph: TemporalGraph) -> tuple[Snapshot, ...]:
        return graph.snapshots[self.start : self.stop]

    def work(self, graph: TemporalGraph) -> tuple[int, int]:
        """(active nodes, edges) summed over the group's snapshots: the cost model's inputs."""
        snaps = self.snapshots(graph)
        return sum(s.num_active_nodes for s in snaps), sum(s.num_edges for s in snaps)


@dataclass(frozen=True)
class Split:
    """Groups by time: train first, then validation, then test, never overlapping in targets."""

    train: tuple[SnapshotGroup, ...]
    val: tuple[SnapshotGroup, ...]
    test: tuple[SnapshotGroup, ...]

    def phase(self, name: str) -> tuple[SnapshotGroup, ...]:
        return {"train": self.train, "val": self.val, "test": self.test}[name]


def sliding_groups(num_snapshots: int, window: int) -> tuple[SnapshotGroup, ...]:
    if window < 1:
        raise ConfigError(f"window must be at least 1 snapshot, got {window}")
    if window > num_snapshots:
        raise TooFewSnapshots(f"window ({window}) is larger than the number of snapshots ({num_snapshots})")
    return tuple(SnapshotGroup(k, k, k + window) for k in range(num_snapshots - window + 1))


def split_by_time(groups: tuple[SnapshotGroup, ...], train: float, val: float) -> Split:
    """Cut the time-ordered groups into train / validation / test fractions (test gets the rest)."""
    _check_fractions(train, val)
    n = len(groups)
    if not _splits(n, train, val):
        raise TooFewSnapshots(f"{n} snapshot groups are too few for a train/validation/test split ({train}/{val}/rest)")
    n_train, n_val = int(round(n * train)), int(round(n * val))
    return Split(groups[:n_train], groups[n_train : n_train + n_val], groups[n_train + n_val :])


def fewest_snapshots(window: int, train: float, val: float) -> int:
    """The fewest snapshots whose sliding groups of ``window`` split into train, validation and test."""
    _check_fractions(train, val)
    groups = 3
    while not _splits(groups, train, val):
        groups += 1
    return groups + window - 1


def _check_fractions(train: float, val: float) -> None:
    if not (0 < train < 1 and 0 < val < 1 and train + val < 1):
        raise ConfigError(f"split fractions must be positive and sum below 1, got train={train} val={val}")


def _splits(n: int, train: float, val: float) -> bool:
    n_train, n_val = int(round(n * train)), int(round(n * val))
    return n_train >= 1 and n_val >= 1 and n - n_train - n_val >= 1
