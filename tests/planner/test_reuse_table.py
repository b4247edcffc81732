"""REAL eq. 17's reuse table from window spans, and from timed neighbour pairs (no torch)."""

import pytest

from dygsched.planner import ScheduleProblem
from dygsched.planner.reuse_table import capped_reuse_pairs, pair_profiling_plan, reusable_from_pairs, reuse_pairs


def windows(num_snapshots, window):
    return [(k, k + window) for k in range(num_snapshots - window + 1)]


def test_reuse_pairs_follow_real_eq_17():
    spans = windows(7, 4)  # 4 windows, each overlapping the next 3 by 3, 2 and 1 snapshots
    pairs = reuse_pairs(spans, {0: 4.0, 1: 4.0, 2: 8.0, 3: 4.0})
    assert (0, 1, 3.0) in pairs and (0, 2, 4.0) in pairs and (0, 3, 1.0) in pairs and (1, 2, 6.0) in pairs
    assert all(i < j and j - i < 4 for i, j, _ in pairs)
    assert reuse_pairs([(0, 2), (2, 4)], {0: 1.0, 1: 1.0}) == []


def test_capped_pairs_never_save_more_than_either_window_takes():
    spans = windows(6, 4)
    pairs = capped_reuse_pairs(spans, [1.0, 0.1, 1.0], {0: 5.0, 1: 5.0, 2: 5.0}, ratio=0.5)
    assert all(v <= min([1.0, 0.1, 1.0][i], [1.0, 0.1, 1.0][j]) for i, j, v in pairs)
    estimated = dict(((i, j), v) for i, j, v in capped_reuse_pairs(spans, [1.0, 2.0, 4.0], None, ratio=0.5))
    assert estimated[(0, 1)] == pytest.approx(0.5 * 2.0 * 3 / 4)  # RATIO times the later window's time, s / w of it


@pytest.mark.parametrize("num_units,world_size", [(7, 2), (8, 2), (9, 3), (1, 2), (2, 4)])
def test_two_pair_profiling_epochs_time_every_neighbour_pair_once(num_units, world_size):
    pairs = []
    for offset in (0, 1):
        plan = pair_profiling_plan(num_units, world_size, offset)
        bins = [b for iteration in plan.iterations for b in iteration if b]
        assert sorted(k for b in bins for k in b) == list(range(num_units))  # every unit once per epoch
        assert all(len(iteration) == world_size for iteration in plan.iterations)
        pairs += [b for b in bins if len(b) == 2]
        plan.validate(ScheduleProblem((1.0,) * num_units, world_size, 2))
    assert sorted(pairs) == [(k, k + 1) for k in range(num_units - 1)]


def test_reusable_seconds_come_from_what_a_merged_pair_saved():
    spans = windows(7, 4)  # 4 windows of 4 snapshots; neighbours share 3
    times = {0: 1.0, 1: 1.2, 2: 1.4, 3: 2.0}
    measured = {(0, 1): 1.6, (2, 3): 3.4}  # savings 0.6 and 0.0 (and nothing timed for (1, 2))
    reusable = reusable_from_pairs(times, measured, spans)
    assert reusable[1] == pytest.approx(0.6 * 4 / 3)  # eq. 17 read backwards: saving * w / s
    assert reusable[3] == pytest.approx(0.0)
    typical = (0.6 * 4 / 3 / 1.2 + 0.0) / 2  # the median share, for windows with no timed pair
    assert reusable[0] == pytest.approx(typical * 1.0) and reusable[2] == pytest.approx(typical * 1.4)
    saving = dict(((i, j), v) for i, j, v in reuse_pairs(spans, reusable))
    assert saving[(0, 1)] == pytest.approx(0.6)  # eq. 17 gives back the measured saving
    assert saving[(0, 2)] == pytest.approx(typical * 1.4 * 2 / 4)
    assert reusable_from_pairs(times, {(0, 3): 1.0}, windows(10, 2)) == {}  # windows that do not overlap
    assert reusable_from_pairs(times, {(0, 1): 9.0}, spans)[1] == 0.0  # a pair slower than its windows saves nothing
