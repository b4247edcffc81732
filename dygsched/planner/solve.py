"""``solve(problem, algo=...)``: the one entry point; resolves a solver by name and returns a ``Plan``."""

from __future__ import annotations

import importlib
import pkgutil
import time
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from dygsched.errors import ScheduleError
from dygsched.planner import solvers as builtin_solvers
from dygsched.planner.base import Solver, registered_solvers
from dygsched.planner.bounds import lower_bound
from dygsched.planner.plan import Plan, predicted_epoch_time
from dygsched.planner.problem import ScheduleProblem

ENTRY_POINT_GROUP = "dygsched.solvers"


def discover() -> dict[str, type[Solver]]:
    """Import every built-in solver module and every ``dygsched.solvers`` entry point; the registry, by name."""
    for module in sorted(pkgutil.iter_modules(builtin_solvers.__path__), key=lambda m: m.name):
        importlib.import_module(f"{builtin_solvers.__name__}.{module.name}")
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        entry.load()
    return registered_solvers()


SOLVERS: Mapping[str, type[Solver]] = discover()


def get_solver(algo: str | Solver) -> Solver:
    """A solver from its name, from ``package.module:Class`` (imported, so it registers), or the solver itself.

    Unknown names list the valid choices.
    """
    if isinstance(algo, Solver):
        return algo
    if isinstance(algo, str) and ":" in algo:
        module, _, attribute = algo.partition(":")
        try:
            cls = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as exc:
            raise ScheduleError(f"cannot import solver {algo!r}: {exc}") from None
        if not (isinstance(cls, type) and issubclass(cls, Solver)):
            raise ScheduleError(f"{algo!r} is not a dygsched Solver")
        return cls()
    found = registered_solvers().get(algo) if isinstance(algo, str) else None
    if found is None:
        raise ScheduleError(f"unknown solver {algo!r}; valid choices: {', '.join(registered_solvers())}")
    return found()


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
