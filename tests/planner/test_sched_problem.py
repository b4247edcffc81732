import pytest

from dygsched.errors import ScheduleError
from dygsched.planner import SOLVERS, ScheduleProblem, lower_bound, solve
from dygsched.planner.bounds import max_total_saving, min_iterations


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(group_times=(1.0, -2.0), num_gpus=2), "non-negative"),
        (dict(group_times=(1.0,), num_gpus=0), "positive integer"),
        (dict(group_times=(), num_gpus=2), "no groups"),
        (dict(group_times=(1.0, 2.0), num_gpus=2, reuse=((0.0, 1.0),)), "2x2"),
        (dict(group_times=(1.0, 2.0), num_gpus=2, capacity=0), "capacity"),
        (dict(group_times=(1.0, float("nan")), num_gpus=2), "finite"),
    ],
)
def test_bad_input_is_one_clear_error(kwargs, message):
    with pytest.raises(ScheduleError, match=message):
        ScheduleProblem(**kwargs)


def test_unknown_solver_lists_choices():
    with pytest.raises(ScheduleError) as err:
        solve(ScheduleProblem((1.0,), 1), "magic")
    for name in SOLVERS:
        assert name in str(err.value)


def test_unknown_backend_and_option():
    problem = ScheduleProblem((1.0, 2.0), 1)
    with pytest.raises(ScheduleError, match="cpsat"):
        solve(problem, "ilp", backend="gurobi")
    with pytest.raises(ScheduleError, match="no option"):
        solve(problem, "greedy", gap=0.1)


def test_psg_layout_for_the_engine():
    problem = ScheduleProblem(tuple(float(k + 1) for k in range(7)), 3)
    plan = solve(problem, "psg")
    assert plan.iterations == (((0,), (1,), (2,)), ((3,), (4,), (5,)), ((6,), (), ()))
    assert plan.predicted_epoch_time == pytest.approx(3 + 6 + 7)


def test_bounds_by_hand():
    problem = ScheduleProblem((4.0, 3.0, 2.0, 1.0, 1.0), 2, 2, 0.5)
    assert min_iterations(problem) == 2
    # work bound 11/2 = 5.5; ranking bound t(1) + t(5) = 4 + 1 = 5; plus 2 * 0.5
    assert lower_bound(problem) == pytest.approx(6.5)
    reuse = ScheduleProblem.from_pairs((2.0, 2.0, 2.0), 1, [(0, 1, 1.0), (1, 2, 0.5)])
    assert max_total_saving(reuse) == pytest.approx((1.0 + 1.0 + 0.5) / 2)
    assert reuse.load((0, 1)) == pytest.approx(3.0)
    assert reuse.saving(1, 0) == 1.0 and reuse.saving(0, 2) == 0.0


def test_dense_and_sparse_reuse_agree():
    dense = ScheduleProblem((1.0, 2.0, 3.0), 2, reuse=((0, 0.5, 0), (0.5, 0, 0), (0, 0, 0)))
    sparse = ScheduleProblem.from_pairs((1.0, 2.0, 3.0), 2, [(0, 1, 0.5)])
    for groups in [(0, 1), (1, 2), (0, 2)]:
        assert dense.load(groups) == sparse.load(groups)
    assert lower_bound(dense) == lower_bound(sparse)


def test_plan_round_trip(tmp_path):
    problem = ScheduleProblem((1.0, 2.0, 3.0, 4.0, 5.0), 2, 2, 0.1)
    plan = solve(problem, "greedy")
    plan.save(tmp_path / "plan.json")
    again = type(plan).load(tmp_path / "plan.json")
    assert again == plan


def test_rotated_plan_moves_every_ranks_work():
    from dygsched.planner import ScheduleProblem, solve

    problem = ScheduleProblem((1.0, 2.0, 3.0, 4.0, 5.0), 3, 1)
    plan = solve(problem, "psg")
    rotated = plan.rotated(1)
    rotated.validate(problem)
    assert [it[1] for it in rotated.iterations] == [it[0] for it in plan.iterations]
    assert plan.rotated(3).iterations == plan.iterations
