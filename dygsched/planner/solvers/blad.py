"""BLAD's assignment (DyGNeX and REAL's BLAD baseline): consecutive pairs, round-robin, no balancing."""

from __future__ import annotations

from typing import Any

from dygsched.planner.base import Solver, SolverResult, check_options
from dygsched.planner.plan import Iterations, SolverStatus
from dygsched.planner.problem import ScheduleProblem


def blad_iterations(num_groups: int, num_gpus: int, per_gpu: int = 2) -> Iterations:
    """Iteration ``i`` gives rank ``r`` groups ``2(iG + r)`` and ``2(iG + r) + 1``.

    Consecutive pairs (``per_gpu`` consecutive groups in general), round-robin over ranks in time
    order, no load balancing; indices past the last group are dropped, so at the end a rank may
    hold fewer groups or none.
    """
    return tuple(
        tuple(tuple(k for k in range(base + per_gpu * r, base + per_gpu * (r + 1)) if k < num_groups) for r in range(num_gpus))
        for base in range(0, num_groups, per_gpu * num_gpus)
    )


class BLAD(Solver):
    """Two consecutive groups per GPU per iteration (a two-stage pipeline runs them), round-robin."""

    name = "blad"
    description = "BLAD baseline: consecutive group pairs per GPU, round-robin, no load balancing"

    def run(self, problem: ScheduleProblem, time_limit: float | None, seed: int, **options: Any) -> SolverResult:
        check_options(self.name, options, ())
        per_gpu = min(2, problem.capacity)  # BLAD pipelines two groups; capacity 1 degenerates to PSG
        return SolverResult(blad_iterations(problem.num_groups, problem.num_gpus, per_gpu), SolverStatus.HEURISTIC)
