"""Vectorized look-up of pairwise reuse savings (sparse), for the fast planners."""

from __future__ import annotations

import numpy as np

from dygsched.planner.problem import ScheduleProblem

BANDED_MAX_WIDTH = 16  # pairs at most this far apart in index are stored as a dense band


class SavingLookup:
    """``lookup(a, b)`` gives the saving of each pair ``(a[i], b[i])``; ids ``>= n`` (padding) save nothing.

    When every pair ``(k1, k2)`` has ``0 < k2 - k1 <= 16`` (sliding windows), the savings are kept
    as a dense ``n x width`` band and looked up by indexing; otherwise by binary search.
    """

    def __init__(self, problem: ScheduleProblem) -> None:
        n = problem.num_groups
        self.n = n
        self.width = n + 1
        if problem.reuse is None and problem.reuse_pairs:
            # sparse input: the same pairs the problem keeps (largest value of duplicates, positive only)
            raw = np.asarray(problem.reuse_pairs, dtype=float).reshape(-1, 3)
            lo = np.minimum(raw[:, 0], raw[:, 1]).astype(np.int64)
            hi = np.maximum(raw[:, 0], raw[:, 1]).astype(np.int64)
            keys = lo * self.width + hi
            order = np.lexsort((-raw[:, 2], keys))
            keys, lo, hi, vals = keys[order], lo[order], hi[order], raw[order, 2]
            first = np.concatenate([[True], keys[1:] != keys[:-1]]) & (vals > 0)
            self.k1, self.k2, self.values = lo[first], hi[first], vals[first]
        else:
            k1s: list[int] = []
            k2s: list[int] = []
            values: list[float] = []
            for k1 in range(n):
                for k2, value in problem.partners(k1).items():
                    if k1 < k2:
                        k1s.append(k1)
                        k2s.append(k2)
                        values.append(value)
            self.k1 = np.asarray(k1s, dtype=np.int64)
            self.k2 = np.asarray(k2s, dtype=np.int64)
            self.values = np.asarray(values, dtype=float)
        self.active = len(self.values) > 0
        self.band: np.ndarray | None = None
        span = int((self.k2 - self.k1).max()) if self.active else 0
        if self.active and span <= BANDED_MAX_WIDTH:
            self.band = np.zeros((n + 1, span + 1))  # row n: padding
            self.band[self.k1, self.k2 - self.k1] = self.values
            self.span = span
        else:
            keys = self.k1 * self.width + self.k2
            order = np.argsort(keys, kind="stable")
            self.keys = keys[order]
            self.sorted_values = self.values[order]

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if not self.active:
            return np.zeros(np.shape(a), dtype=float)
        lo = np.minimum(a, b).astype(np.int64)
        hi = np.maximum(a, b).astype(np.int64)
        if self.band is not None:
            d = hi - lo
            ok = (d <= self.span) & (hi < self.n)
            return np.where(ok, self.band[np.where(ok, lo, self.n), np.where(ok, d, 0)], 0.0)
        key = lo * self.width + hi
        pos = np.searchsorted(self.keys, key)
        pos = np.minimum(pos, len(self.keys) - 1)
        hit = (self.keys[pos] == key) & (lo != hi)
        return np.where(hit, self.sorted_values[pos], 0.0)
