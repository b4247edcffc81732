"""Solvers register themselves: a new solver is one file, found by name or by ``module:Class``."""

import pytest

from dygsched.errors import ScheduleError
from dygsched.planner import SOLVERS, ScheduleProblem, solve
from dygsched.planner.base import Solver, register_solver
from dygsched.planner.planning import PlannerConfig, plan_units


def test_every_builtin_solver_module_registered_itself():
    assert {"psg", "blad", "dygnex_g", "dygnex_l", "greedy", "ilp", "real", "real_g_paper"} <= set(SOLVERS)


def test_a_solver_in_another_module_is_used_by_module_and_class_name():
    plan = solve(ScheduleProblem((1.0, 2.0, 3.0), 2, 1), "tests.planner.example_solver:ReversePSG")
    assert plan.iterations == (((2,), (1,)), ((0,), ()))
    assert solve(ScheduleProblem((1.0, 2.0, 3.0), 2, 1), "reverse_psg").solver == "reverse_psg"  # registered by the import
    assert plan_units(PlannerConfig(solver="reverse_psg"), (1.0, 1.0), 2).iterations == (((1,), (0,)),)


def test_unknown_or_clashing_solvers_are_one_line():
    with pytest.raises(ScheduleError, match="unknown solver 'nope'; valid choices: .*greedy"):
        solve(ScheduleProblem((1.0,), 1, 1), "nope")
    with pytest.raises(ScheduleError, match="cannot import solver"):
        solve(ScheduleProblem((1.0,), 1, 1), "no.such.module:Solver")

    class Impostor(Solver):
        name = "greedy"

        def run(self, problem, time_limit, seed, **options):
            raise AssertionError

    with pytest.raises(ScheduleError, match="two solvers are named 'greedy'"):
        register_solver(Impostor)


def test_planner_config_checks_its_values():
    with pytest.raises(ScheduleError, match="capacity"):
        PlannerConfig(capacity=0)
    with pytest.raises(ScheduleError, match="time_limit"):
        PlannerConfig(time_limit=-1)
    with pytest.raises(ScheduleError, match="unknown solver"):
        PlannerConfig(solver="nope")
    with pytest.raises(ScheduleError, match="unknown cost model keys"):
        PlannerConfig(cost_model={"a4": 1.0})
