"""The iteration bound: a tighter, expensive lower bound for ``L <= 2`` (not part of ``lower_bound``).

Why: the closed-form bounds (``bounds.py``) assume that the bins of one iteration can have equal
loads. With reuse they rarely can: the neighbour pairs that collect the saving have loads that
follow the growth of the graph, so with few iterations per GPU the iterations' maxima sit well
above their averages, and the optimum can be several percent above ``lower_bound``.

The relaxation. Let ``M_1 >= ... >= M_m`` be the iteration maxima of a plan and
``w(v) = #{i : M_i >= v}`` (integer, non-increasing in ``v``); the plan costs
``integral of w + m alpha``. Every bin (one group, or two) with load ``>= v`` sits in an
iteration with ``M_i >= v``, at most ``G`` bins each, so at most ``G w(v)`` bins have load
``>= v``. The relaxation keeps ``w`` integer and lets the bins be fractional, each group covered
exactly once:

* singles ``y_k`` (load ``t_k``) and the reuse pairs ``y_P`` (load ``t_a + t_b - R_ab``),
  one variable each: the reuse graph is sparse (a group shares snapshots with a few neighbours);
* the pairs without reuse, whose load is additive, aggregated: groups are split into
  ``classes`` by time (consecutive in sorted order) and ``z_cd`` counts the pairs between
  classes ``c`` and ``d`` at load ``tau_c + tau_d``, ``tau`` the smallest time of the class
  (rounded down); ``u_k`` is the share of group ``k`` in such pairs and each class's shares
  balance its pairs. Every real plan maps to a feasible point (a pair without reuse becomes
  one unit of ``z`` between its groups' classes), at a load no higher than its own.

Loads are rounded *down* to a grid of levels, which again only lowers every plan's cost, so the
program's optimum, and the solver's proven (dual) bound on it when the time runs out, are valid
lower bounds. Its size grows with the number of levels, so it is solved on a coarse grid first
(``levels`` evenly spaced, plus the loads in ``focus``, for example a plan's iteration maxima)
and then refined: after each round, the interval just above every step of the solution's ``w``
(where an iteration's maximum was rounded down) is split ``split`` ways, until those intervals
are narrower than ``tolerance`` x the largest load or the time runs out. A finer grid rounds
every load down less, so each round's bound is valid and the best is returned. The programs are
solved by HiGHS through ``scipy.optimize.milp``.

A plan is a feasible point, so on instances where the relaxation is tight (a test checks it
against brute force) the bound proves how far a plan is from the optimum.

Certifying a target (``ceiling``). To show that a plan is within, say, 2% of the optimum, the
bound only has to reach ``ceiling = plan / 1.02``, and proving that is much cheaper than solving
the program: the cost row ``cost . x <= ceiling`` is added, and when HiGHS proves the program
infeasible no point, so no plan, costs less than ``ceiling``. When the time runs out first, the
solver's bound on the constrained program is still valid up to ``ceiling`` (a plan below
``ceiling`` is a point of both programs), so ``min(proven, ceiling)`` is returned. On
trend-300-8 with reuse this proves the 2% in 48 s where the program alone had not in 45 s.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dygsched.planner.bounds import loads_negligible, lower_bound, min_iterations
from dygsched.planner.problem import ScheduleProblem

if TYPE_CHECKING:
    from dygsched.planner.plan import Plan

SOLVER_GAP = 1e-3  # HiGHS stops a round within this relative gap; its proven bound is what counts
SAFETY = 1e-6  # relative margin for the solver's feasibility tolerances
INFEASIBLE = 2  # scipy.optimize.milp's status when the program has no point


class _Relaxation:
    """The program's fixed part (bins and covering); ``solve(grid)`` adds the levels."""

    def __init__(self, problem: ScheduleProblem, classes: int) -> None:
        n = problem.num_groups
        self.num_groups, self.num_gpus = n, problem.num_gpus
        times = np.asarray(problem.group_times, dtype=float)
        order = np.argsort(times, kind="stable")
        chunks = np.array_split(order, min(classes, n))
        group_class = np.empty(n, dtype=int)
        class_time = np.empty(len(chunks))
        for c, members in enumerate(chunks):
            group_class[members] = c
            class_time[c] = times[members].min()
        pairs = [(a, b, v) for a in range(n) for b, v in problem.partners(a).items() if a < b and v > 0]
        class_pairs = [(c, d) for c in range(len(chunks)) for d in range(c, len(chunks))]
        loads = np.concatenate(
            [
                times,
                np.array([max(0.0, times[a] + times[b] - v) for a, b, v in pairs]),
                np.array([class_time[c] + class_time[d] for c, d in class_pairs]),
            ]
        )
        self.unit = float(loads.max())  # > 0: the caller checks loads_negligible
        self.loads = loads / self.unit  # solver tolerances behave with loads in [0, 1]
        self.alpha = problem.allreduce_cost / self.unit
        self.num_bins = len(loads)
        # columns: bins [0, num_bins), shares u_k [num_bins, num_bins + n); rows: cover n, balance C
        rows, cols, vals = [], [], []
        for k in range(n):
            rows += [k, k, n + group_class[k]]
            cols += [k, self.num_bins + k, self.num_bins + k]
            vals += [1.0, 1.0, 1.0]
        for i, (a, b, _) in enumerate(pairs):
            rows += [a, b]
            cols += [n + i, n + i]
            vals += [1.0, 1.0]
        first = n + len(pairs)
        for i, (c, d) in enumerate(class_pairs):
            if c == d:
                rows.append(n + c)
                cols.append(first + i)
                vals.append(-2.0)
            else:
                rows += [n + c, n + d]
                cols += [first + i, first + i]
                vals += [-1.0, -1.0]
        self.entries = (rows, cols, vals)
        self.fixed_rows = n + len(chunks)
        self.row_bounds = [1.0] * n + [0.0] * len(chunks)
        self.upper = np.concatenate([np.ones(n + len(pairs)), np.full(len(class_pairs), float(n)), np.ones(n)])
        self.max_iterations = -(-n // problem.num_gpus)  # more never help: every group could run alone
        self.min_iterations = min_iterations(problem)

    def solve(self, grid: np.ndarray, time_limit: float, ceiling: float | None = None) -> tuple[float, np.ndarray | None]:
        """Proven bound (seconds, at most ``ceiling``) and the steps of the ``w`` found, on ``grid``'s levels.

        The steps are None when no point was found (or none below ``ceiling`` exists)."""
        import scipy.sparse as sparse
        from scipy.optimize import Bounds, LinearConstraint, milp

        level = np.searchsorted(grid, self.loads * (1 + 1e-12), side="right") - 1
        present = np.unique(level)
        index = np.searchsorted(present, level)
        K = len(present)
        first_w = self.num_bins + self.num_groups
        first_cum = first_w + K
        rows, cols, vals = (list(x) for x in self.entries)
        r = self.fixed_rows
        lower, upper = list(self.row_bounds), list(self.row_bounds)
        # cum_j = cum_{j+1} + (bins at level j): the bins at level >= j
        for j in range(K):
            rows.append(r + j)
            cols.append(first_cum + j)
            vals.append(1.0)
            if j + 1 < K:
                rows.append(r + j)
                cols.append(first_cum + j + 1)
                vals.append(-1.0)
        rows += (r + index).tolist()
        cols += list(range(self.num_bins))
        vals += [-1.0] * self.num_bins
        lower += [0.0] * K
        upper += [0.0] * K
        r += K
        for j in range(K):  # cum_j <= G w_j
            rows += [r, r]
            cols += [first_cum + j, first_w + j]
            vals += [1.0, -float(self.num_gpus)]
            lower.append(-np.inf)
            upper.append(0.0)
            r += 1
        for j in range(K - 1):  # w non-increasing
            rows += [r, r]
            cols += [first_w + j, first_w + j + 1]
            vals += [1.0, -1.0]
            lower.append(0.0)
            upper.append(np.inf)
            r += 1
        num_vars = first_cum + K
        values = grid[present]
        cost = np.zeros(num_vars)
        cost[first_w : first_w + K] = np.diff(np.concatenate([[0.0], values]))
        cost[first_w] += self.alpha
        if ceiling is not None:  # cost . x <= ceiling: infeasible means every plan costs more
            rows += [r] * K
            cols += list(range(first_w, first_w + K))
            vals += cost[first_w : first_w + K].tolist()
            lower.append(-np.inf)
            upper.append(ceiling / self.unit)
            r += 1
        matrix = sparse.csr_matrix((vals, (rows, cols)), shape=(r, num_vars))
        var_lower = np.zeros(num_vars)
        var_lower[first_w] = self.min_iterations
        var_upper = np.concatenate([self.upper, np.full(K, float(self.max_iterations)), np.full(K, np.inf)])
        integrality = np.zeros(num_vars)
        integrality[first_w : first_w + K] = 1
        result = milp(
            cost,
            constraints=LinearConstraint(matrix, lower, upper),
            integrality=integrality,
            bounds=Bounds(var_lower, var_upper),
            options={"time_limit": max(0.1, time_limit), "disp": False, "mip_rel_gap": SOLVER_GAP},
        )
        if ceiling is not None and result.status == INFEASIBLE:
            return ceiling * (1 - SAFETY), None
        proven = getattr(result, "mip_dual_bound", None)
        if proven is None or not np.isfinite(proven):
            proven = 0.0
        if ceiling is not None:
            proven = min(proven, ceiling / self.unit)
        proven = (proven - SAFETY * max(1.0, abs(proven))) * self.unit
        steps = None
        if result.x is not None:
            w = np.round(result.x[first_w : first_w + K]).astype(int)
            after = np.append(w[1:], 0)
            steps = values[w > after]  # the levels an iteration's maximum was rounded down to
        return max(0.0, float(proven)), steps


def iteration_bound(
    problem: ScheduleProblem,
    time_limit: float = 10.0,
    *,
    focus: Iterable[float] | None = None,
    classes: int = 40,
    levels: int = 32,
    split: int = 6,
    tolerance: float = 5e-4,
    plans: Sequence[Plan[Any]] = (),
    ceiling: float | None = None,
) -> float:
    """The iteration bound (module doc), at least ``lower_bound(problem)``; within ``time_limit`` s.

    ``focus``: loads (seconds) to put on the first grid; ``plans``: the cheapest one's iteration
    maxima are added to them (the grid then fits a good plan exactly).
    ``ceiling``: stop once the bound reaches it (within ``SAFETY``); the result is at most it.
    Returns ``lower_bound(problem)`` for ``L > 2`` (not modelled) or when it proves nothing better.
    """
    base = lower_bound(problem)
    if problem.capacity > 2 or time_limit <= 0 or (ceiling is not None and base >= ceiling) or loads_negligible(problem):
        return base
    start = time.perf_counter()
    relaxation = _Relaxation(problem, classes)
    marks = [] if focus is None else list(focus)
    if plans:
        cheapest = min(plans, key=lambda plan: plan.predicted_epoch_time)
        marks += [problem.slowest_load(iteration) for iteration in cheapest.iterations]
    grid = np.linspace(0.0, 1.0, levels + 1)
    if marks:
        grid = np.unique(np.concatenate([grid, np.clip(np.asarray(marks, dtype=float) / relaxation.unit, 0.0, 1.0)]))
    best = base
    while True:
        left = time_limit - (time.perf_counter() - start)
        if left <= 0.05:
            break
        proven, steps = relaxation.solve(grid, left, ceiling)
        best = max(best, proven)
        if steps is None or (ceiling is not None and best >= ceiling * (1 - 2 * SAFETY)):
            break
        upper = np.searchsorted(grid, steps, side="right")
        nxt = np.where(upper < len(grid), grid[np.minimum(upper, len(grid) - 1)], steps)  # the top level: nothing above
        wide = nxt - steps > tolerance
        if not wide.any():
            break
        added = [np.linspace(a, b, split + 2)[1:-1] for a, b in zip(steps[wide], nxt[wide])]
        grid = np.unique(np.concatenate([grid, *added]))
    return best
