"""``solve(problem, algo=...)``: the one entry point; resolves a solver by name and returns a ``Plan``."""

from __future__ import annotations

import time

from dygsched.errors import ScheduleError
from dygsched.sched.base import Solver
from dygsched.sched.blad import BLAD
from dygsched.sched.bounds import lower_bound
from dygsched.sched.dygnex_g import DyGNeXG
from dygsched.sched.greedy import RealGPlus
from dygsched.sched.dygnex_l import DyGNeXL
from dygsched.sched.ilp import RealL
from dygsched.sched.plan import Plan, predicted_epoch_time
from dygsched.sched.policy import RealPolicy
from dygsched.sched.problem import ScheduleProblem
from dygsched.sched.psg import PSG
from dygsched.sched.real_g_paper import RealGPaper

_SOLVER_CLASSES: tuple[type[Solver], ...] = (PSG, BLAD, DyGNeXG, RealGPaper, RealGPlus, RealL, DyGNeXL, RealPolicy)
SOLVERS: dict[str, type[Solver]] = {cls.name: cls for cls in _SOLVER_CLASSES}


def get_solver(algo: str | Solver) -> Solver:
    """A solver from its name (or the solver itself); unknown names list the valid choices."""
    if isinstance(algo, Solver):
        return algo
    try:
        return SOLVERS[algo]()
    except (KeyError, TypeError):
        raise ScheduleError(f"unknown solver {algo!r}; valid choices: {', '.join(SOLVERS)}") from None


def solve(
    problem: ScheduleProblem,
    algo: str | Solver = "greedy",
    time_limit: float | None = None,
    seed: int = 0,
    **options,
) -> Plan:
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
