"""``solve(problem, algo=...)``: the one entry point; resolves a solver by name and returns a ``Plan``."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from dygsched.components import Named, entry_point_parts, load_target
from dygsched.errors import ScheduleError
from dygsched.planner.base import Solver
from dygsched.planner.bounds import lower_bound
from dygsched.planner.plan import Plan, predicted_epoch_time
from dygsched.planner.problem import ScheduleProblem
from dygsched.planner.solvers import BUILTIN_SOLVERS

ENTRY_POINT_GROUP = "dygsched.solvers"


def solver_table() -> dict[str, Named]:
    """Every solver a setting may name: the built-in ones, then other packages' ``dygsched.solvers``
    entry points (a name already taken is refused in one line). Nothing is imported until used."""
    table = {entry.name: entry for entry in BUILTIN_SOLVERS}
    for entry in entry_point_parts(ENTRY_POINT_GROUP):
        known = table.get(entry.name)
        if known is not None and known.target != entry.target:
            raise ScheduleError(f"two solvers are named {entry.name!r}: {known.target} and {entry.target}")
        table[entry.name] = entry
    return table


SOLVERS: Mapping[str, Named] = solver_table()


def _solver_class(target: str, name: str | None) -> type[Solver]:
    try:
        cls = load_target(target)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ScheduleError(f"cannot import solver {target!r}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, Solver)):
        raise ScheduleError(f"{target!r} is not a dygsched Solver")
    if name is not None and cls.name != name:
        raise ScheduleError(f"solver {name!r} names {target}, whose name is {cls.name!r}")
    return cls


def get_solver(algo: str | Solver) -> Solver:
    """A solver from its name, from ``package.module:Class``, or the solver itself.

    Unknown names list the valid choices.
    """
    if isinstance(algo, Solver):
        return algo
    if isinstance(algo, str) and ":" in algo:
        return _solver_class(algo, None)()
    found = SOLVERS.get(algo) if isinstance(algo, str) else None
    if found is None:
        raise ScheduleError(f"unknown solver {algo!r}; valid choices: {', '.join(SOLVERS)}")
    return _solver_class(found.target, found.name)()


def solve(
    problem: ScheduleProblem,
    algo: str | Solver = "greedy",
    time_limit: float | None = None,
    seed: int = 0,
    **options: Any,
) -> Plan[int]:
    """Plan ``problem`` with solver ``algo`` (see ``SOLVERS``) and return a validated ``Plan``.

    ``time_limit`` (seconds) bounds the ILP and the REAL policy; the constructive solvers ignore
    it. ``options`` are passed to the solver (e.g. ``backend=``, ``gap=`` for the ILP).
    """
    if not isinstance(problem, ScheduleProblem):
        raise ScheduleError(f"solve() needs a ScheduleProblem, got {type(problem).__name__}")
    if time_limit is not None and not time_limit > 0:
        raise ScheduleError(f"the time limit must be positive, got {time_limit}")
    solver = get_solver(algo)
    start = time.perf_counter()
    result = solver.run(problem, time_limit, seed, **options)
    elapsed = time.perf_counter() - start
    iterations = tuple(it for it in result.iterations if any(it))
    bound = lower_bound(problem)
    if result.proven_bound is not None:
        bound = max(bound, result.proven_bound)
    plan = Plan(
        iterations=iterations,
        num_gpus=problem.num_gpus,
        capacity=problem.capacity,
        predicted_epoch_time=predicted_epoch_time(problem, iterations),
        lower_bound=bound,
        solver=result.solver or solver.name,
        solver_status=result.status,
        solve_time_s=elapsed,
    )
    plan.validate(problem)
    return plan
