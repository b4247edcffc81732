"""What profiling epochs measured, merged over ranks, and the linear cost model fitted on it.

Each unit's time is the median over the profiling epochs of the sum of its phases (its first
sample, a warm-up, dropped when there are later ones); the medians fit ``t = a1*nodes + a2*edges +
a3`` by non-negative least squares (DyGNeX appendix H, REAL eq. 16). Pure numpy: the timers that
produce the samples live with the engine.
"""

from __future__ import annotations

import itertools
import statistics
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from dygsched.planner.cost_model import CostModel

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Profile:
    """What the profiling epochs found, merged over ranks (rank 0 builds it)."""

    group_seconds: dict[int, float]
    phase_seconds: dict[str, float]  # mean per group
    cost_model: CostModel
    r2: float
    reusable_seconds: dict[int, float] = field(default_factory=dict)  # median per group, reuse runs only
    pair_seconds: dict[tuple[int, int], float] = field(default_factory=dict)  # median per merged neighbour pair

    def to_dict(self) -> dict[str, Any]:
        return {
            "cost_model": {"a1": self.cost_model.a1, "a2": self.cost_model.a2, "a3": self.cost_model.a3},
            "fit_r2": self.r2,
            "phase_seconds_per_group": self.phase_seconds,
            "group_seconds": {str(k): v for k, v in sorted(self.group_seconds.items())},
            "group_times": [self.group_seconds[k] for k in sorted(self.group_seconds)],  # `dygsched plan profile.json`
            "reusable_seconds": {str(k): v for k, v in sorted(self.reusable_seconds.items())},
            "pair_seconds": {f"{i},{j}": v for (i, j), v in sorted(self.pair_seconds.items())},
        }


def merge(samples_per_rank: Sequence[Mapping[K, list[T]]]) -> dict[K, list[T]]:
    """One rank-independent ``{unit: [measurements]}`` from every rank's."""
    merged: dict[K, list[T]] = defaultdict(list)
    for samples in samples_per_rank:
        for unit, runs in samples.items():
            merged[unit].extend(runs)
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
    samples: Mapping[int, list[dict[str, float]]],
    sizes: Mapping[int, tuple[int, int]],
    reusable: Mapping[int, list[float]] | None = None,
    pairs: Mapping[tuple[int, int], list[float]] | None = None,
) -> Profile:
    """Median time per unit, mean phase split, and the cost model fitted on (nodes, edges).

    ``samples[unit]`` lists one ``{phase: seconds}`` per profiling epoch. A unit's first sample is a
    warm-up (the first epoch allocates, fills caches, chooses diff paths) and is dropped when the
    unit has later ones.
    """
    samples = {g: runs[1:] if len(runs) > 1 else runs for g, runs in samples.items()}
    phases = list(dict.fromkeys(phase for runs in samples.values() for run in runs for phase in run))
    group_seconds = {g: statistics.median(sum(run.values()) for run in runs) for g, runs in samples.items()}
    phase_seconds = {
        p: statistics.mean(statistics.median(run.get(p, 0.0) for run in runs) for runs in samples.values()) for p in phases
    }
    groups = sorted(group_seconds)
    features = np.array([[sizes[g][0], sizes[g][1], 1.0] for g in groups], dtype=float)
    target = np.array([group_seconds[g] for g in groups])
    a1, a2, a3 = fit_nonnegative(features, target)
    residual = float(np.sum((features @ np.array([a1, a2, a3]) - target) ** 2))
    spread = float(np.sum((target - target.mean()) ** 2))
    r2 = 1.0 - residual / spread if spread > 0 else 1.0
    reusable_seconds = {g: statistics.median(runs) for g, runs in (reusable or {}).items() if runs}
    pair_seconds = {key: statistics.median(runs) for key, runs in (pairs or {}).items() if runs}
    return Profile(
        group_seconds, phase_seconds, CostModel(a1=float(a1), a2=float(a2), a3=float(a3)), r2, reusable_seconds, pair_seconds
    )
