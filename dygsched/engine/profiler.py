"""Profiling epochs: time every snapshot group, by phase, and fit the linear cost model.

A group's time is split into host-to-device copy, spatial aggregation (the layers' message
passing, which includes their transformation matmuls: PyG's convolutions fuse the two), temporal
update (recurrent cells and the readout) and backward. On GPU every boundary synchronises the
device, so profiling epochs run a little slower than the others. Each group's time is the median
over the profiling epochs, which drops the warm-up and other outliers; the medians fit
``t = a1*nodes + a2*edges + a3`` by non-negative least squares (DyGNeX appendix H, REAL eq. 16).
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, TypeVar

import numpy as np
import torch

from dygsched.data.temporal_graph import Snapshot
from dygsched.models.base import DGNN
from dygsched.sched.cost_model import CostModel

PHASES = ("host_to_device", "spatial", "temporal", "backward")
T = TypeVar("T")


@dataclass
class PhaseTimer:
    """Accumulates seconds per phase, synchronising the device at each boundary."""

    device: torch.device
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        start = time.perf_counter()
        yield
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.seconds[name] += time.perf_counter() - start


def timed_forward(model: DGNN, snapshots: Sequence[Snapshot], timer: PhaseTimer) -> torch.Tensor:
    """``DGNN.forward`` with its spatial and temporal parts timed separately."""
    first = snapshots[0]
    states = model.initial_states(first.num_nodes, first.x.device, first.x.dtype)
    for snapshot in snapshots:
        h = snapshot.x
        for index, layer in enumerate(model.layers):
            with timer.phase("spatial"):
                spatial_out = layer.spatial(h, snapshot.edge_index, snapshot.edge_weight, states[index])
            with timer.phase("temporal"):
                h, states[index] = layer.temporal(spatial_out, states[index])
    with timer.phase("temporal"):
        return model.readout(h)


@dataclass
class Profiler:
    """One rank's measurements: ``samples[group] -> [phase seconds per profiling epoch]``.

    With REAL's reuse on, ``reusable[group]`` also lists, per epoch, the seconds of the group's
    part that another group sharing its snapshots would not redo (its transfer and first-layer
    convolutions): the measured RATIO of REAL eq. 17 is ``reusable / total``.
    """

    samples: dict[int, list[dict[str, float]]] = field(default_factory=lambda: defaultdict(list))
    reusable: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    pairs: dict[tuple[int, int], list[float]] = field(default_factory=lambda: defaultdict(list))

    def record(self, group: int, timer: PhaseTimer, reusable: float | None = None) -> None:
        self.samples[group].append(dict(timer.seconds))
        if reusable is not None:
            self.reusable[group].append(float(reusable))

    def record_pair(self, groups: tuple[int, int], timer: PhaseTimer) -> None:
        """Two overlapping groups trained as one merged chain (type II reuse): their total seconds."""
        self.pairs[groups].append(sum(timer.seconds.values()))


@dataclass(frozen=True)
class Profile:
    """What the profiling epochs found, merged over ranks (rank 0 builds it)."""

    group_seconds: dict[int, float]
    phase_seconds: dict[str, float]  # mean per group
    cost_model: CostModel
    r2: float
    reusable_seconds: dict[int, float] = field(default_factory=dict)  # median per group, reuse runs only
    pair_seconds: dict[tuple[int, int], float] = field(default_factory=dict)  # median per merged neighbour pair

    def to_dict(self) -> dict:
        return {
            "cost_model": {"a1": self.cost_model.a1, "a2": self.cost_model.a2, "a3": self.cost_model.a3},
            "fit_r2": self.r2,
            "phase_seconds_per_group": self.phase_seconds,
            "group_seconds": {str(k): v for k, v in sorted(self.group_seconds.items())},
            "group_times": [self.group_seconds[k] for k in sorted(self.group_seconds)],  # `dygsched plan profile.json`
            "reusable_seconds": {str(k): v for k, v in sorted(self.reusable_seconds.items())},
            "pair_seconds": {f"{i},{j}": v for (i, j), v in sorted(self.pair_seconds.items())},
        }


def merge(samples_per_rank: Sequence[Mapping[int, list[T]]]) -> dict[int, list[T]]:
    """One rank-independent ``{group: [measurements]}`` from every rank's."""
    merged: dict[int, list[T]] = defaultdict(list)
    for samples in samples_per_rank:
        for group, runs in samples.items():
            merged[group].extend(runs)
    return merged


def fit_nonnegative(features: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Least squares with non-negative coefficients, exactly, by trying every support (3 columns)."""
    best, best_error = np.zeros(features.shape[1]), float(np.sum(target**2))
    for size in range(1, features.shape[1] + 1):
        for support in itertools.combinations(range(features.shape[1]), size):
            coef, *_ = np.linalg.lstsq(features[:, support], target, rcond=None)
            if (coef < 0).any():
                continue
            error = float(np.sum((features[:, support] @ coef - target) ** 2))
            if error < best_error:
                best = np.zeros(features.shape[1])
                best[list(support)] = coef
                best_error = error
    return best


def build_profile(
    samples: dict[int, list[dict[str, float]]],
    sizes: dict[int, tuple[int, int]],
    reusable: dict[int, list[float]] | None = None,
    pairs: Mapping[tuple[int, int], list[float]] | None = None,
) -> Profile:
    """Median time per group, mean phase split, and the cost model fitted on (nodes, edges).

    A group's first sample is a warm-up (the first epoch allocates, fills caches, chooses diff
    paths) and is dropped when the group has later ones.
    """
    samples = {g: runs[1:] if len(runs) > 1 else runs for g, runs in samples.items()}
    group_seconds = {g: statistics.median(sum(run.values()) for run in runs) for g, runs in samples.items()}
    phase_seconds = {p: statistics.mean(statistics.median(run[p] for run in runs) for runs in samples.values()) for p in PHASES}
    groups = sorted(group_seconds)
    features = np.array([[sizes[g][0], sizes[g][1], 1.0] for g in groups], dtype=float)
    target = np.array([group_seconds[g] for g in groups])
    a1, a2, a3 = fit_nonnegative(features, target)
    residual = float(np.sum((features @ np.array([a1, a2, a3]) - target) ** 2))
    spread = float(np.sum((target - target.mean()) ** 2))
    r2 = 1.0 - residual / spread if spread > 0 else 1.0
    reusable_seconds = {g: statistics.median(runs) for g, runs in (reusable or {}).items() if runs}
    pair_seconds = {key: statistics.median(runs) for key, runs in (pairs or {}).items() if runs}
    return Profile(group_seconds, phase_seconds, CostModel(a1=float(a1), a2=float(a2), a3=float(a3)), r2, reusable_seconds, pair_seconds)
