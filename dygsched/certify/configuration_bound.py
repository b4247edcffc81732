"""The configuration bound: the linear program over whole iterations, by column generation (``L <= 2``).

Why: ``lower_bound`` lets the bins of one iteration have equal loads, and ``iteration_bound``
lets bins be fractional. With reuse neither holds: the neighbour pairs that collect the saving
have loads that follow the growth of the graph, and the optimum sits several percent above
``lower_bound``. This bound prices every iteration as it really is.

The program (Gilmore-Gomory / Dantzig-Wolfe, as for cutting stock). A *configuration* is one
iteration: at most ``G`` disjoint bins (a group alone, or two groups with their reuse), costing
its largest load plus ``alpha``. A plan is a set of configurations that covers every group, and
it has at least ``m0 = ceil(n / (L G))`` of them, so its cost is at least the optimum of the
linear program

    min sum_c cost_c x_c   s.t.   sum_{c covers k} x_c >= 1 (every group k),
                                  sum_c x_c >= m0,   x >= 0.

There are far too many configurations to list, so the program is solved by column generation
on a restricted set (the given plans' iterations and every group alone), with Wentges dual
smoothing against the degeneracy that otherwise stalls it. The pricing problem, for a cap
``M``, picks at most ``G`` disjoint bins with load ``<= M`` of largest dual value: a matching
with a cardinality limit, solved exactly by HiGHS (``scipy.optimize.milp``). Only the
``2G - 1`` best partners of each group are offered (an exchange argument: a pair whose partner
is not among them can swap it for a free better one, since the other ``G - 1`` bins hold at
most ``2G - 2`` groups).

Validity does not depend on convergence (Farley's bound). For any duals ``pi >= 0`` (groups)
and ``sigma >= 0`` (the iteration count), ``theta = min_c cost_c / (pi . a_c + sigma)`` over
*all* configurations scales them into a feasible dual solution, so
``theta (sum pi + m0 sigma)`` is a lower bound. ``theta`` is computed exactly over load
intervals: a configuration whose largest load lies in ``(M_j-1, M_j]`` has dual value at most
the pricing optimum at ``M_j`` (HiGHS's proven upper bound) and cost at least the smallest
bin load above ``M_j-1``; intervals are split until the smallest ratio is pinned down or the
time runs out, and the bound is valid at every step.

Loads follow ``ScheduleProblem.load`` and assume a saving is at most the smaller group's time
(no bin load below its longer group); otherwise the bound falls back to ``lower_bound``.
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

MAX_GROUPS = 400  # the pricing holds every pair of groups: n^2 / 2 bins
SMOOTHING = 0.8  # Wentges: price at 0.8 x the best duals so far + 0.2 x the master's, then adapted:
SMOOTHING_STEP, SMOOTHING_MIN, SMOOTHING_MAX = 0.1, 0.3, 0.9  # less after a step that raised the bound
FIRST_CAPS = 48  # caps priced first in each round; the intervals between them are then split
CONVERGED = 1e-4  # stop when the estimated bound is this close to the master's value


class _Bins:
    """Every bin a plan can use: each group alone, and each pair of groups, with its load.

    Times and loads are in units of the largest load (``unit`` seconds): solver tolerances behave."""

    def __init__(self, problem: ScheduleProblem) -> None:
        n = problem.num_groups
        times = np.asarray(problem.group_times, dtype=float)
        first, second = np.triu_indices(n, 1)
        saving = np.zeros(len(first))
        for index, (a, b) in enumerate(zip(first.tolist(), second.tolist())):
            saving[index] = problem.saving(a, b)
        self.num_groups, self.num_gpus = n, problem.num_gpus
        self.first = np.concatenate([np.arange(n), first])
        self.second = np.concatenate([np.full(n, -1), second])  # -1: the group runs alone
        pair_load = times[first] + times[second] - saving
        self.sound = bool(np.all(pair_load >= np.maximum(times[first], times[second]) - 1e-12))
        load = np.concatenate([times, pair_load])
        self.unit = float(load.max())
        self.times, self.load = times / self.unit, load / self.unit
        self.levels = np.unique(self.load)  # every largest load a configuration can have

    def groups(self, bins: np.ndarray) -> np.ndarray:
        both = np.concatenate([self.first[bins], self.second[bins]])
        return both[both >= 0]


def _best_configuration(bins: _Bins, pi: np.ndarray, cap: float, time_limit: float) -> tuple[float, np.ndarray]:
    """Largest dual value of at most ``G`` disjoint bins with load ``<= cap``.

    Returns (proven upper bound on it, the bins of the best configuration found)."""
    import scipy.sparse as sparse
    from scipy.optimize import Bounds, LinearConstraint, milp

    n, G = bins.num_groups, bins.num_gpus
    padded = np.append(pi, 0.0)
    value = padded[bins.first] + padded[bins.second]
    usable = np.nonzero((bins.load <= cap) & (value > 1e-12))[0]
    singles = usable[bins.second[usable] < 0]
    pairs = usable[bins.second[usable] >= 0]
    if len(pairs):  # keep a pair only if one end ranks the other among its 2G - 1 best partners
        keep_rank = 2 * G - 1
        ends = np.concatenate([bins.first[pairs], bins.second[pairs]])
        others = np.concatenate([bins.second[pairs], bins.first[pairs]])
        which = np.concatenate([pairs, pairs])
        order = np.lexsort((-pi[others], ends))
        ends, which = ends[order], which[order]
        start = np.searchsorted(ends, ends, side="left")
        rank = np.arange(len(ends)) - start
        pairs = np.unique(which[rank < keep_rank])
    chosen = np.concatenate([singles, pairs])
    if len(chosen) == 0:
        return 0.0, chosen
    weight = value[chosen]
    columns = np.concatenate([np.arange(len(chosen)), np.arange(len(singles), len(chosen))])
    rows = np.concatenate([bins.first[chosen], bins.second[pairs]])
    matrix = sparse.csr_matrix((np.ones(len(rows)), (rows, columns)), shape=(n, len(chosen)))
    matrix = sparse.vstack([matrix, sparse.csr_matrix(np.ones((1, len(chosen))))])
    result = milp(
        -weight,
        constraints=LinearConstraint(matrix, -np.inf, np.append(np.ones(n), float(G))),
        integrality=np.ones(len(chosen)),
        bounds=Bounds(0.0, 1.0),
        options={"time_limit": max(0.05, time_limit), "disp": False, "mip_rel_gap": 1e-7},
    )
    proven = getattr(result, "mip_dual_bound", None)
    if proven is None or not np.isfinite(proven):  # no proof in time: every usable bin, G best, is an upper bound
        upper = float(np.sort(weight)[::-1][:G].sum())
    else:
        upper = float(-proven) * (1 + 1e-7) + 1e-12
    found = chosen[result.x > 0.5] if result.x is not None else chosen[:0]
    return upper, found


class _Master:
    """The restricted linear program over the configurations found so far."""

    def __init__(self, num_groups: int, min_iters: int) -> None:
        self.num_groups, self.min_iters = num_groups, min_iters
        self.costs: list[float] = []
        self.members: list[np.ndarray] = []
        self.seen: set[tuple[int, ...]] = set()

    def add(self, cost: float, groups: Iterable[int]) -> bool:
        key = tuple(sorted(int(k) for k in groups))
        if not key or key in self.seen:
            return False
        self.seen.add(key)
        self.costs.append(float(cost))
        self.members.append(np.asarray(key))
        return True

    def solve(self) -> tuple[float, np.ndarray, float] | None:
        """(value, group duals, iteration-count dual) of the restricted program; None if HiGHS gives none.

        (Loads tiny against ``alpha``, e.g. 1e-28 s against 0.1 s, leave it no usable scale.)"""
        import scipy.sparse as sparse
        from scipy.optimize import linprog

        rows = np.concatenate(self.members)
        cols = np.repeat(np.arange(len(self.members)), [len(m) for m in self.members])
        cover = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(self.num_groups, len(self.members)))
        matrix = sparse.vstack([-cover, -sparse.csr_matrix(np.ones((1, len(self.members))))])
        rhs = np.append(-np.ones(self.num_groups), -float(self.min_iters))
        result = linprog(np.asarray(self.costs), A_ub=matrix, b_ub=rhs, bounds=(0, None), method="highs")
        if result.status != 0 or result.ineqlin is None or result.ineqlin.marginals is None:
            return None
        duals = np.maximum(0.0, -result.ineqlin.marginals)
        return float(result.fun), duals[: self.num_groups], float(duals[-1])


def _farley_bound(
    bins: _Bins, alpha: float, min_iters: int, pi: np.ndarray, sigma: float, deadline: float
) -> tuple[float, list[np.ndarray]]:
    """Farley's bound at duals ``(pi, sigma)``, ``theta`` proven over every configuration (module doc).

    Returns (the bound, valid also when the deadline cuts it short; the configurations priced on
    the way, as arrays of bins: the columns to offer the master)."""
    levels = bins.levels
    numerator = levels + alpha  # the cheapest configuration whose largest load is levels[i]
    marks = np.unique(np.linspace(0, len(levels) - 1, min(len(levels), FIRST_CAPS)).astype(int))
    upper: dict[int, float] = {}  # level index -> proven upper bound of the pricing value under that cap
    best_ratio = np.inf
    found: list[np.ndarray] = []

    def evaluate(index: int) -> None:
        nonlocal best_ratio
        value, chosen = _best_configuration(bins, pi, float(levels[index]), deadline - time.perf_counter())
        upper[index] = value
        if len(chosen):
            found.append(chosen)
            got = pi[bins.groups(chosen)].sum() + sigma
            if got > 0:
                best_ratio = min(best_ratio, (bins.load[chosen].max() + alpha) / got)

    for index in marks:
        if time.perf_counter() >= deadline:
            return 0.0, found
        evaluate(int(index))
    total = pi.sum() + min_iters * sigma
    while True:
        known = np.array(sorted(upper))
        # interval j holds the configurations with largest load levels[known[j-1]+1 .. known[j]]
        low = np.concatenate([[0], known[:-1] + 1])
        denominators = np.array([upper[k] for k in known]) + sigma
        with np.errstate(divide="ignore"):
            ratios = np.where(denominators > 0, numerator[low] / np.maximum(denominators, 1e-300), np.inf)
        theta = min(float(ratios.min()), best_ratio)
        bound = theta * total if np.isfinite(theta) and total > 0 else 0.0
        worst = int(np.argmin(ratios))
        if ratios[worst] >= best_ratio * (1 - 1e-9) or time.perf_counter() >= deadline:
            return bound, found
        a, b = int(low[worst]), int(known[worst])
        if a == b:  # one level: its ratio is exact, and not below best_ratio unless the proof fell short
            return bound, found
        evaluate((a + b) // 2)


def configuration_bound(
    problem: ScheduleProblem, time_limit: float = 60.0, *, plans: Sequence[Plan[Any]] = (), ceiling: float | None = None
) -> float:
    """The configuration bound (module doc), at least ``lower_bound(problem)``; within ``time_limit`` s.

    ``plans``: plans whose iterations seed the columns (a good plan speeds it up a lot).
    ``ceiling``: stop as soon as the bound reaches it (a target to certify, no need to go on).
    Returns ``lower_bound(problem)`` for ``L > 2``, more than ``MAX_GROUPS`` groups, or when it
    proves nothing better.
    """
    base = lower_bound(problem)
    enough = np.inf if ceiling is None else ceiling
    if problem.capacity > 2 or problem.num_groups > MAX_GROUPS or time_limit <= 0 or base >= enough or loads_negligible(problem):
        return base
    start = time.perf_counter()
    deadline = start + time_limit
    bins = _Bins(problem)
    if not bins.sound:
        return base
    unit = bins.unit
    alpha = problem.allreduce_cost / unit
    m0 = min_iterations(problem)
    master = _Master(problem.num_groups, m0)
    for k in range(problem.num_groups):
        master.add(bins.times[k] + alpha, [k])
    for plan in plans:
        for iteration in plan.iterations:
            master.add(problem.slowest_load(iteration) / unit + alpha, [k for b in iteration for k in b])
    best_saving = np.array([max(problem.partners(k).values(), default=0.0) for k in range(problem.num_groups)]) / unit
    center = (np.maximum(0.0, bins.times - best_saving / 2) / problem.num_gpus, alpha)  # about the work bound's duals
    proven, smoothing = 0.0, SMOOTHING
    while time.perf_counter() < deadline:
        solved = master.solve()
        if solved is None:
            break  # no duals to price with: what is proven so far stands
        value, pi, sigma = solved
        mixed = (smoothing * center[0] + (1 - smoothing) * pi, smoothing * center[1] + (1 - smoothing) * sigma)
        bound, found = _farley_bound(bins, alpha, m0, *mixed, deadline)
        if bound > proven:
            center, proven = mixed, bound
            smoothing = max(min(smoothing, SMOOTHING_MIN), smoothing - SMOOTHING_STEP)  # a good step: trust the master more
        else:
            smoothing = min(SMOOTHING_MAX, smoothing + SMOOTHING_STEP)
        added = 0
        for chosen in found:
            groups = bins.groups(chosen)
            cost = float(bins.load[chosen].max()) + alpha
            if cost - pi[groups].sum() - sigma < -1e-9:
                added += master.add(cost, groups)
        if proven >= value * (1 - CONVERGED) or proven * unit >= enough:
            break
        if not added:
            if smoothing < 1e-3:
                break  # the master's own duals price nothing new: it is optimal
            smoothing /= 2
    return max(base, proven * unit)
