"""Solvers are named in one table (``dygsched.planner.solvers.BUILTIN_SOLVERS``), extended by entry
points, and used by name or by ``module:Class``; nothing is imported until a solver is used."""

import importlib
import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest

from dygsched.components import load_target
from dygsched.errors import ScheduleError
from dygsched.planner import SOLVERS, ScheduleProblem, solve
from dygsched.planner.base import Solver
from dygsched.planner.planning import PlannerConfig, plan_units
from dygsched.planner.solvers import BUILTIN_SOLVERS

solve_module = importlib.import_module("dygsched.planner.solve")  # the package's `solve` is the function


def test_the_table_names_every_builtin_solver_by_its_own_name():
    assert list(SOLVERS) == ["psg", "blad", "dygnex_g", "dygnex_l", "real_g_paper", "greedy", "ilp", "real"]
    for entry in BUILTIN_SOLVERS:
        cls = load_target(entry.target)
        assert issubclass(cls, Solver) and cls.name == entry.name


def test_reading_the_table_imports_no_solver():
    code = "import sys, dygsched.planner; print(sorted(m for m in sys.modules if m.startswith('dygsched.planner.solvers.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


def test_a_solver_in_another_module_is_used_by_module_and_class_name():
    plan = solve(ScheduleProblem((1.0, 2.0, 3.0), 2, 1), "tests.planner.example_solver:ReversePSG")
    assert plan.iterations == (((2,), (1,)), ((0,), ())) and plan.solver == "reverse_psg"
    config = PlannerConfig(solver="tests.planner.example_solver:ReversePSG")
    assert plan_units(config, (1.0, 1.0), 2).iterations == (((1,), (0,)),)


def test_another_packages_entry_point_adds_a_solver_and_may_not_take_a_name(monkeypatch):
    def entry_points(group):
        assert group == "dygsched.solvers"
        return [EntryPoint("reverse_psg", "tests.planner.example_solver:ReversePSG", group)]

    monkeypatch.setattr("importlib.metadata.entry_points", entry_points)
    table = solve_module.solver_table()
    assert list(table)[-1] == "reverse_psg" and table["reverse_psg"].load().name == "reverse_psg"
    monkeypatch.setattr(solve_module, "SOLVERS", table)
    assert solve(ScheduleProblem((1.0, 2.0, 3.0), 2, 1), "reverse_psg").iterations == (((2,), (1,)), ((0,), ()))

    def clashing(group):
        return [EntryPoint("greedy", "tests.planner.example_solver:ReversePSG", group)]

    monkeypatch.setattr("importlib.metadata.entry_points", clashing)
    with pytest.raises(ScheduleError, match="two solvers are named 'greedy'"):
        solve_module.solver_table()


def test_unknown_or_clashing_solvers_are_one_line():
    with pytest.raises(ScheduleError, match="unknown solver 'nope'; valid choices: .*greedy"):
        solve(ScheduleProblem((1.0,), 1, 1), "nope")
    with pytest.raises(ScheduleError, match="cannot import solver"):
        solve(ScheduleProblem((1.0,), 1, 1), "no.such.module:Solver")
    with pytest.raises(ScheduleError, match="is not a dygsched Solver"):
        solve(ScheduleProblem((1.0,), 1, 1), "dygsched.planner.bounds:lower_bound")


def test_planner_config_checks_its_values():
    with pytest.raises(ScheduleError, match="capacity"):
        PlannerConfig(capacity=0)
    with pytest.raises(ScheduleError, match="time_limit"):
        PlannerConfig(time_limit=-1)
    with pytest.raises(ScheduleError, match="unknown solver"):
        PlannerConfig(solver="nope")
    with pytest.raises(ScheduleError, match="unknown cost model keys"):
        PlannerConfig(cost_model={"a4": 1.0})


def test_the_check_before_a_run_plans_a_small_stand_in_whatever_the_world_size(monkeypatch):
    """The check only has to reach the solver with its options; it planned 2 x world_size units on
    world_size ranks, and for the ILP on 1,024 ranks that took 57 s and 4 GB (twice per GPU count in
    ``dygsched advise``). An unknown option still fails it."""
    import dygsched.planner.planning as planning

    seen = []
    monkeypatch.setattr(planning, "plan_units", lambda config, times, ranks: seen.append((len(times), ranks)))
    PlannerConfig(solver="ilp").check(1024)
    PlannerConfig(solver="ilp").check(1)
    assert seen == [(4, 2), (2, 1)]
    monkeypatch.undo()
    with pytest.raises(ScheduleError):
        PlannerConfig(solver="greedy", options={"no_such_option": 1}).check(1024)
