"""The REAL policy (REAL section 5.4): ILP within a time budget, else the greedy plan.

The budget is ``tau = 2 * T_epoch``, ``T_epoch`` being the estimated epoch time; here the
greedy plan's predicted epoch time, unless ``epoch_time`` is given. An explicit ``time_limit``
caps the budget. If the ILP does not converge (prove its gap) within the budget, the greedy plan
is used and the status is FALLBACK.
"""

from __future__ import annotations

from typing import Any

from dygsched.errors import ScheduleError
from dygsched.planner.base import Solver, SolverResult, check_options
from dygsched.planner.plan import SolverStatus, predicted_epoch_time
from dygsched.planner.problem import ScheduleProblem
from dygsched.planner.solvers.greedy import balanced_iterations
from dygsched.planner.solvers.ilp import RealL


class RealPolicy(Solver):
    name = "real"
    description = "REAL policy: ILP within 2x the estimated epoch time, else fall back to greedy"

    def run(self, problem: ScheduleProblem, time_limit: float | None, seed: int, **options: Any) -> SolverResult:
        check_options(self.name, options, (*RealL.options, "epoch_time", "budget_factor"))
        greedy = balanced_iterations(problem)
        epoch = options.pop("epoch_time", None)
        factor = options.pop("budget_factor", 2.0)
        if epoch is None:
            epoch = predicted_epoch_time(problem, greedy)
        if not epoch > 0 or not factor > 0:
            raise ScheduleError("epoch_time and budget_factor must be positive")
        budget = factor * epoch
        if time_limit is not None:
            budget = min(budget, time_limit)
        if not RealL.available():
            return SolverResult(greedy, SolverStatus.FALLBACK, solver="real(greedy)")
        result = RealL().run(problem, budget, seed, **options)
        if result.status is SolverStatus.OPTIMAL:
            return SolverResult(result.iterations, SolverStatus.OPTIMAL, result.proven_bound, solver="real(ilp)")
        return SolverResult(greedy, SolverStatus.FALLBACK, solver="real(greedy)")
