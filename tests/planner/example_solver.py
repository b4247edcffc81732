"""A solver in one file, outside the package: named ``tests.planner.example_solver:ReversePSG``."""

from dygsched.planner.base import Solver, SolverResult, check_options
from dygsched.planner.plan import SolverStatus
from dygsched.planner.problem import ScheduleProblem


class ReversePSG(Solver):
    """PSG in reverse time order (a toy)."""

    name = "reverse_psg"

    def run(self, problem: ScheduleProblem, time_limit, seed, **options) -> SolverResult:
        check_options(self.name, options, ())
        order = list(reversed(range(problem.num_groups)))
        g = problem.num_gpus
        iterations = tuple(
            tuple((order[i + r],) if i + r < len(order) else () for r in range(g)) for i in range(0, len(order), g)
        )
        return SolverResult(iterations, SolverStatus.HEURISTIC)
