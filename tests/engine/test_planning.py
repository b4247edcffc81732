"""Rank 0's planning step: REAL eq. 17's reuse table from timed neighbour pairs."""

import pytest

from dygsched.data.groups import sliding_groups
from dygsched.data.synthetic import SyntheticSource
from dygsched.engine.planning import pair_profiling_plan, profiles_pairs, reusable_from_pairs, reuse_pairs
from dygsched.engine.timeline import Timeline
from dygsched.metrics.run_folder import RunFolder
from dygsched.sched import ScheduleProblem
from dygsched.sched.plan import Plan, SolverStatus

REAL_G = {"name": "greedy", "algo": "greedy", "capacity": 2, "profile_epochs": 4, "reuse": True, "reuse_group": True, "plan_reuse": True,
          "profile_pairs": True}


@pytest.mark.parametrize("num_groups,world_size", [(7, 2), (8, 2), (9, 3), (1, 2), (2, 4)])
def test_two_pair_profiling_epochs_time_every_neighbour_pair_once(num_groups, world_size):
    pairs = []
    for offset in (0, 1):
        plan = pair_profiling_plan(num_groups, world_size, offset)
        bins = [b for iteration in plan.iterations for b in iteration if b]
        assert sorted(k for b in bins for k in b) == list(range(num_groups))  # every group once per epoch
        assert all(len(iteration) == world_size for iteration in plan.iterations)
        pairs += [b for b in bins if len(b) == 2]
        plan.validate(ScheduleProblem((1.0,) * num_groups, world_size, 2))
    assert sorted(pairs) == [(k, k + 1) for k in range(num_groups - 1)]


def test_reusable_seconds_come_from_what_a_merged_pair_saved():
    groups = sliding_groups(7, 4)  # 4 groups of 4 snapshots; neighbours share 3
    times = {0: 1.0, 1: 1.2, 2: 1.4, 3: 2.0}
    measured = {(0, 1): 1.6, (2, 3): 3.4}  # savings 0.6 and 0.0 (and nothing timed for (1, 2))
    reusable = reusable_from_pairs(times, measured, groups)
    assert reusable[1] == pytest.approx(0.6 * 4 / 3)  # eq. 17 read backwards: saving * w / s
    assert reusable[3] == pytest.approx(0.0)
    typical = (0.6 * 4 / 3 / 1.2 + 0.0) / 2  # the median share, for groups with no timed pair
    assert reusable[0] == pytest.approx(typical * 1.0) and reusable[2] == pytest.approx(typical * 1.4)
    saving = dict(((i, j), v) for i, j, v in reuse_pairs(groups, reusable))
    assert saving[(0, 1)] == pytest.approx(0.6)  # eq. 17 gives back the measured saving
    assert saving[(0, 2)] == pytest.approx(typical * 1.4 * 2 / 4)
    assert reusable_from_pairs(times, {(0, 3): 1.0}, sliding_groups(10, 2)) == {}  # windows that do not overlap
    assert reusable_from_pairs(times, {(0, 1): 9.0}, groups)[1] == 0.0  # a pair slower than its groups saves nothing


def test_profiling_alternates_single_groups_and_merged_pairs_only_for_measured_reuse(tmp_path):
    graph = SyntheticSource(num_nodes=40, num_snapshots=12, feature_dim=4).load()
    groups = sliding_groups(graph.num_snapshots, 3)
    psg = Plan(tuple(((2 * i,), (2 * i + 1,)) for i in range(len(groups) // 2)), 2, 1, 0.0, 0.0, "psg", SolverStatus.HEURISTIC, 0.0)
    line = Timeline(REAL_G, graph, groups, 2, 0, RunFolder(tmp_path, "run"))
    assert profiles_pairs(REAL_G)
    assert [max(len(b) for it in line.plan_for(e, psg).iterations for b in it) for e in range(5)] == [1, 2, 1, 2, 1]
    assert line.plan_for(4, psg) is psg  # after profiling: the plan as solved
    for off in ({"profile_pairs": False}, {"reuse": False}, {"reuse_group": False}, {"plan_reuse": False}, {"profile_epochs": 1}, {"capacity": 1}):
        assert not profiles_pairs({**REAL_G, **off})
    plain = Timeline({**REAL_G, "reuse": False}, graph, groups, 2, 0, RunFolder(tmp_path, "plain"))
    assert all(max(len(b) for it in plain.plan_for(e, psg).iterations for b in it) == 1 for e in range(4))
