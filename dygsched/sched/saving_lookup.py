"""Vectorized look-up of pairwise reuse savings (sparse), for the fast planners."""

from __future__ import annotations

import numpy as np

from dygsched.sched.problem import ScheduleProblem


class SavingLookup:
    """``lookup(a, b)`` gives the saving of each pair ``(a[i], b[i])``; ids ``>= n`` (padding) save nothing."""

    def __init__(self, problem: ScheduleProblem) -> None:
        self.width = problem.num_groups + 1
        keys: list[int] = []
        values: list[float] = []
        for k1 in range(problem.num_groups):
            for k2, value in problem.partners(k1).items():
                if k1 < k2:
                    keys.append(k1 * self.width + k2)
                    values.append(value)
        order = np.argsort(np.asarray(keys, dtype=np.int64), kind="stable")
        self.keys = np.asarray(keys, dtype=np.int64)[order]
        self.values = np.asarray(values, dtype=float)[order]
        self.active = len(self.keys) > 0

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if not self.active:
            return np.zeros(np.shape(a), dtype=float)
        lo = np.minimum(a, b).astype(np.int64)
        hi = np.maximum(a, b).astype(np.int64)
        key = lo * self.width + hi
        pos = np.searchsorted(self.keys, key)
        pos = np.minimum(pos, len(self.keys) - 1)
        hit = (self.keys[pos] == key) & (lo != hi)
        return np.where(hit, self.values[pos], 0.0)
