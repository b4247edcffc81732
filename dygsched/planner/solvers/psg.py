"""PSG: the baseline, one group per GPU per iteration in time (snapshot) order."""

from __future__ import annotations

from typing import Any

from dygsched.planner.base import Solver, SolverResult, check_options
from dygsched.planner.plan import Iterations, SolverStatus
from dygsched.planner.problem import ScheduleProblem


def psg_iterations(problem: ScheduleProblem) -> Iterations:
    """Iteration ``i`` gives rank ``r`` group ``i*G + r``; ranks beyond the last group idle."""
    n, gpus = problem.num_groups, problem.num_gpus
    iterations = []
    for start in range(0, n, gpus):
        iterations.append(tuple((start + r,) if start + r < n else () for r in range(gpus)))
    return tuple(iterations)


class PSG(Solver):
    """Partition by snapshot group: every GPU trains one group per iteration, in snapshot order."""

    name = "psg"
    description = "baseline: one group per GPU per iteration, in time order"

    def run(self, problem: ScheduleProblem, time_limit: float | None, seed: int, **options: Any) -> SolverResult:
        check_options(self.name, options, ())
        return SolverResult(psg_iterations(problem), SolverStatus.HEURISTIC)
