"""REAL-L: the ILP of REAL section 5.2 (eqs. 11-14), warm-started from the greedy plan.

Options (``solve(problem, "ilp", time_limit=..., **options)``):

* ``backend``: ``cpsat`` (OR-Tools CP-SAT, default), ``cbc`` or ``highs`` (through PuLP);
* ``gap``: stop once the incumbent is proven within this relative gap (default 0.01);
* ``warm_start``: start from the ``greedy`` plan (default True);
* ``horizon``: iterations in the model: an integer, ``"full"`` (``ceil(n/G)``, DyGNeX eq. 11)
  or ``"auto"`` (default: full while the model has at most 20,000 ``x`` variables, else the warm
  start's iteration count plus one);
* ``workers``: solver threads (default 2);
* ``polish``: share of the time left after the warm start given to the sorted-cut pair search
  (``local_search.improve_pairs``, ``L = 2``) before the solver starts from its plan (default 0.5;
  0 turns it off).

The time limit defaults to 30 s and covers the whole run (warm start, model build, solve). The
CP-SAT backend models REAL-L over load-ordered bins (``ilp_cpsat.py``), which removes the
iteration and GPU symmetry; the PuLP backends keep the (iteration, GPU) form of eqs. 11-14. If
the backend finds nothing better than the warm start in time, the warm start is returned. The
plan's status is OPTIMAL when the backend proved the gap, FEASIBLE otherwise.
"""

from __future__ import annotations

import time
from typing import Any

from dygsched.errors import ScheduleError
from dygsched.planner.base import Solver, SolverResult, check_options
from dygsched.planner.bounds import lower_bound
from dygsched.planner.ilp_backend import IlpBackend
from dygsched.planner.ilp_cpsat import CpSatBackend
from dygsched.planner.ilp_model import IlpModel
from dygsched.planner.ilp_pulp import CbcBackend, HighsBackend
from dygsched.planner.local_search import improve_pairs
from dygsched.planner.plan import SolverStatus, predicted_epoch_time
from dygsched.planner.problem import ScheduleProblem
from dygsched.planner.solvers.greedy import balanced_iterations

BACKENDS: dict[str, type[IlpBackend]] = {cls.name: cls for cls in (CpSatBackend, CbcBackend, HighsBackend)}
DEFAULT_TIME_LIMIT = 30.0
DEFAULT_GAP = 0.01
DEFAULT_POLISH = 0.5
POLISH_EVALUATIONS = 10**12  # the polish is bounded by its deadline
SOLVER_MARGIN_SHARE = 0.05  # of the time limit, kept for the solver's overshoot
SOLVER_MARGIN_MAX_S = 0.5
AUTO_FULL_HORIZON_VARIABLES = 20_000  # "auto" models the full horizon while x has at most this many entries


def get_backend(name: str) -> IlpBackend:
    """A backend by name; unknown or uninstalled backends raise ``ScheduleError``."""
    try:
        cls = BACKENDS[name]
    except (KeyError, TypeError):
        raise ScheduleError(f"unknown ILP backend {name!r}; valid choices: {', '.join(BACKENDS)}") from None
    if not cls.available():
        installed = [n for n, c in BACKENDS.items() if c.available()]
        raise ScheduleError(
            f"ILP backend {name!r} is not installed (needs {cls.package}); available: {', '.join(installed) or 'none'}"
        )
    return cls()


def available_backends() -> list[str]:
    return [name for name, cls in BACKENDS.items() if cls.available()]


class RealL(Solver):
    """REAL-L: epigraph ILP with McCormick-linearized reuse (REAL eqs. 11-14)."""

    name = "ilp"
    description = "REAL-L: ILP (epigraph + McCormick reuse), CP-SAT or PuLP, warm-started from greedy"
    use_reuse = True
    options = ("backend", "gap", "warm_start", "horizon", "workers", "polish")

    @classmethod
    def available(cls) -> bool:
        return bool(available_backends())

    def run(self, problem: ScheduleProblem, time_limit: float | None, seed: int, **options: Any) -> SolverResult:
        start = time.perf_counter()
        check_options(self.name, options, self.options)
        backend = get_backend(options.get("backend", "cpsat"))
        gap = options.get("gap", DEFAULT_GAP)
        if not isinstance(gap, (int, float)) or not 0 <= gap < 1:
            raise ScheduleError(f"the optimality gap must be in [0, 1), got {gap!r}")
        workers = options.get("workers", 2)
        if int(workers) != workers or workers < 1:
            raise ScheduleError(f"workers must be a positive integer, got {workers!r}")
        limit = DEFAULT_TIME_LIMIT if time_limit is None else time_limit
        reuse_problem = (
            problem
            if self.use_reuse
            else ScheduleProblem(problem.group_times, problem.num_gpus, problem.capacity, problem.allreduce_cost)
        )
        warm = balanced_iterations(reuse_problem) if options.get("warm_start", True) else None
        polish = options.get("polish", DEFAULT_POLISH)
        if not isinstance(polish, (int, float)) or not 0 <= polish < 1:
            raise ScheduleError(f"polish must be a share of the time in [0, 1), got {polish!r}")
        if warm and polish > 0 and reuse_problem.capacity == 2:
            left = limit - (time.perf_counter() - start)
            deadline = time.perf_counter() + polish * max(left, 0.0)
            target = lower_bound(reuse_problem) * (1 + float(gap))  # polishing further cannot be shown to help
            warm = improve_pairs(reuse_problem, warm, POLISH_EVALUATIONS, seed=seed + 1, deadline=deadline, target=target)
        horizon_opt = options.get("horizon", "auto")
        full = -(-problem.num_groups // problem.num_gpus)
        if horizon_opt == "full":
            horizon = full
        elif horizon_opt == "auto":
            small = problem.num_groups * full * problem.num_gpus <= AUTO_FULL_HORIZON_VARIABLES
            horizon = full if (small or not warm) else len(warm) + 1
        elif isinstance(horizon_opt, int) and horizon_opt >= 1:
            horizon = horizon_opt
        else:
            raise ScheduleError(f"horizon must be a positive integer, 'auto' or 'full', got {horizon_opt!r}")
        model = IlpModel.build(problem, horizon, self.use_reuse)
        # the limit covers warm start and model build too; the solver overshoots its own limit by a
        # fraction of a second (workers finishing their step, reading the solution back): keep a margin
        remaining = limit - (time.perf_counter() - start) - min(SOLVER_MARGIN_MAX_S, SOLVER_MARGIN_SHARE * limit)
        result = backend.solve(model, warm, max(remaining, 0.05), float(gap), seed, int(workers))
        iterations = result.iterations
        if iterations is None or (
            warm and predicted_epoch_time(reuse_problem, warm) < predicted_epoch_time(reuse_problem, iterations) - 1e-9
        ):
            iterations = result.iterations if warm is None else warm
        if iterations is None:
            raise ScheduleError(f"the {backend.name} backend found no plan within {limit:g} s ({result.raw_status})")
        status = SolverStatus.OPTIMAL if result.converged else SolverStatus.FEASIBLE
        proven = None
        if model.full_horizon and result.proven_bound is not None and (self.use_reuse or not problem.has_reuse):
            proven = min(result.proven_bound, predicted_epoch_time(problem, iterations))
        return SolverResult(iterations, status, proven)
