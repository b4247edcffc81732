"""The sort-based set operations give numpy's own arrays, value for value and dtype for dtype."""

import numpy as np
import pytest

from dygsched.data.sorted_keys import sorted_difference, sorted_union, sorted_unique


@pytest.mark.parametrize("seed", range(5))
def test_set_operations_equal_numpys_on_keys_with_duplicates_and_empties(seed):
    rng = np.random.default_rng(seed)
    for size_a, size_b in ((0, 0), (0, 7), (7, 0), (1, 1), (50, 80), (300, 40)):
        a = rng.integers(0, 2**40 if seed % 2 else 60, size_a)  # wide keys, or few values with many repeats
        b = np.concatenate(
            [
                rng.choice(a, min(size_a, size_b // 2)) if size_a else np.zeros(0, np.int64),
                rng.integers(0, 60, size_b - min(size_a, size_b // 2)),
            ]
        )
        for ours, theirs in (
            (sorted_unique(a), np.unique(a)),
            (sorted_difference(a, b), np.setdiff1d(a, b)),
            (sorted_difference(b, a), np.setdiff1d(b, a)),
            (sorted_union(a, b), np.union1d(a, b)),
        ):
            assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)


def test_the_inputs_are_left_as_they_were():
    a, b = np.array([5, 3, 3, 9]), np.array([9, 1])
    sorted_difference(a, b), sorted_union(a, b), sorted_unique(a)
    assert a.tolist() == [5, 3, 3, 9] and b.tolist() == [9, 1]
