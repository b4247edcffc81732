"""REAL-G+: a reuse-aware balanced pairing planner, the project's improved REAL-G (``greedy``).

REAL-G (Algorithm 1) builds one iteration at a time around the longest remaining group, which
leaves the last iterations with whatever is left. This planner decides the whole epoch at once,
for every useful number of iterations ``m`` (from ``ceil(n / (L G))`` up to ``ceil(n / G)``, where
every group can run alone; counts whose work bound plus ``m * alpha`` cannot beat the best plan
so far are pruned, and at most 48 counts are tried):

1. Starts (``L = 2``): ``m G`` bins of two slots. The fold start pads the groups with zero-time
   dummies to ``2 m G`` and pairs the ``i``-th shortest with the ``i``-th longest (equal loads, no
   reuse). With reuse, matching starts keep ``p`` disjoint reuse pairs (greedy largest-saving
   matching, and the two alternating neighbour matchings when the reuse graph is a chain of
   sliding windows) and run the other groups alone, for ``p`` from the fewest pairs the bins
   force to all of them, including the counts that fill whole iterations; which pairs are broken
   is chosen by saving, by smallest or by largest pair load.
2. Every start is scored exactly (bins sorted by load and cut into iterations of ``G``: for fixed
   bins this minimizes the sum of the iterations' slowest GPUs). The best starts are rebalanced:
   heavy bins are matched with light ones and the four groups re-paired in the best of three
   ways, score ``max(l1, l2) + weight * (l1 + l2)`` (a positive weight keeps reuse pairs).
3. For ``L != 2``, longest-processing-time-first into the bins with room.
4. Up to 400 groups the published DyGNeX Algorithm 2 (and up to 120 with reuse REAL Algorithm 1)
   also runs, and the best plan goes on; up to 2,000 groups a local search (``local_search.py``) moves
   or swaps groups out of each iteration's slowest GPU.
5. ``L = 2``, up to 2,000 groups: the sorted-cut pair search (``local_search.improve_pairs``), an
   iterated local search that exchanges groups between any two bins and re-cuts the iterations
   after every move, from the plan and from shaped fold starts (the longest groups alone, the
   shortest paired among themselves: one cheap iteration), for the plan's iteration count and
   the two smallest counts. It often changes the iteration structure: for example it finds plans
   with fewer, fuller iterations whose slowest bins pair long with long groups.

Above 2,000 groups with reuse fewer starts are tried (one pair choice, the three smallest ``m``,
one rebalancing) so that 10,000 groups plan in well under 0.1 s. Deterministic. The published
REAL-G stays available as ``real_g_paper``.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from dygsched.errors import ScheduleError
from dygsched.planner.base import Solver, SolverResult, check_options
from dygsched.planner.bounds import min_iterations
from dygsched.planner.local_search import LocalSearch, improve_pairs
from dygsched.planner.plan import Iterations, SolverStatus, iterations_from_bins, predicted_epoch_time
from dygsched.planner.problem import ScheduleProblem
from dygsched.planner.saving_lookup import SavingLookup


class _Pairing:
    """Bins of two slots over ids ``0..n-1`` (groups) and ``n..`` (zero-time padding)."""

    def __init__(self, times: np.ndarray, lookup: SavingLookup | _NoSaving) -> None:
        self.times = times
        self.lookup = lookup

    def loads(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        loads: np.ndarray = self.times[a] + self.times[b] - self.lookup(a, b)
        return loads

    def fold(self, ids: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
        ordered = ids[np.argsort(self.times[ids], kind="stable")]
        return ordered[:bins].copy(), ordered[2 * bins - 1 : bins - 1 : -1].copy()

    def rebalance(self, a: np.ndarray, b: np.ndarray, max_sweeps: int, weight: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Re-pair heavy with light bins; a re-pairing must lower ``max(l1, l2) + weight * (l1 + l2)``."""
        bins = len(a)
        half = bins // 2
        if half == 0:
            return a, b
        best_spread = np.inf
        stale = 0
        for sweep in range(max_sweeps):
            loads = self.loads(a, b)
            spread = float(loads.max() - loads.min())
            if spread < best_spread - 1e-12:
                best_spread, stale = spread, 0
            else:
                stale += 1
                if stale >= 2:
                    break
            order = np.argsort(loads, kind="stable")
            lo = order[:half]
            hi = order[bins - 1 : bins - 1 - half : -1] if sweep % 2 == 0 else order[bins - half :]
            w, x, y, z = a[hi], b[hi], a[lo], b[lo]
            options = ((w, x, y, z), (w, y, x, z), (w, z, x, y))
            scores = []
            for p, q, r, s in options:
                l1, l2 = self.loads(p, q), self.loads(r, s)
                scores.append(np.maximum(l1, l2) + weight * (l1 + l2))
            worst = np.stack(scores)
            choice = np.argmin(worst, axis=0)
            choice = np.where(worst[choice, np.arange(half)] < worst[0] - 1e-12, choice, 0)
            for k, (p, q, r, s) in enumerate(options[1:], start=1):
                pick = choice == k
                if pick.any():
                    a[hi[pick]], b[hi[pick]], a[lo[pick]], b[lo[pick]] = p[pick], q[pick], r[pick], s[pick]
        return a, b


def _lpt_bins(problem: ScheduleProblem, bins: int) -> list[list[int]]:
    """Longest processing time first into ``bins`` bins of at most ``capacity`` groups."""
    order = sorted(range(problem.num_groups), key=lambda k: (-problem.group_times[k], k))
    heap = [(0.0, b) for b in range(bins)]
    contents: list[list[int]] = [[] for _ in range(bins)]
    for k in order:
        load, b = heapq.heappop(heap)
        contents[b].append(k)
        if len(contents[b]) < problem.capacity:
            heapq.heappush(heap, (load + problem.group_times[k], b))
    return contents


def _chunk_lists(bins: list[tuple[int, ...]], loads: np.ndarray, gpus: int) -> tuple[Iterations, float]:
    """Sort bins by load (heaviest first) and cut into iterations of ``gpus`` bins."""
    order = np.argsort(-loads, kind="stable")
    iterations = []
    total = 0.0
    for start in range(0, len(order), gpus):
        chunk = [bins[int(p)] for p in order[start : start + gpus]]
        if not any(chunk):
            continue
        total += float(loads[order[start]])
        chunk += [()] * (gpus - len(chunk))
        iterations.append(tuple(chunk))
    return tuple(iterations), total


LOCAL_SEARCH_EVALUATIONS = 100_000
PAIR_SEARCH_EVALUATIONS = 10_000_000  # scored exchanges x iterations (about 0.3-1 s on one core)
LOCAL_SEARCH_MAX_GROUPS = 2_000
# Above LOCAL_SEARCH_MAX_GROUPS, with reuse only: a short local search finds the reuse pairings the
# balanced start misses (bursty-10000-1024: -1.5% in about 0.07 s); without reuse it gains < 0.01%.
LARGE_REUSE_LOCAL_SEARCH_EVALUATIONS = 20_000
PORTFOLIO_MAX_GROUPS = 120  # REAL Algorithm 1's literal walk (with reuse) as a start up to here
DYGNEX_START_MAX_GROUPS = 400  # DyGNeX Algorithm 2 (vectorised, 0.4 s at 400 groups on 8 GPUs) up to here
MAX_ITERATION_COUNTS = 48  # iteration counts tried per problem (spread over the useful range)
REBALANCED_STARTS = 2  # the best starts of each iteration count that are rebalanced


class _PairPlanner:
    """``L = 2``: bins are pairs ``(a[b], b[b])`` of ids, ids ``>= n`` being empty slots."""

    def __init__(self, problem: ScheduleProblem, max_sweeps: int) -> None:
        self.problem = problem
        self.fast = problem.num_groups > LOCAL_SEARCH_MAX_GROUPS  # fewer starts on large problems
        self.n = problem.num_groups
        self.gpus = problem.num_gpus
        self.alpha = problem.allreduce_cost
        self.max_sweeps = max_sweeps
        self.base = np.asarray(problem.group_times, dtype=float)
        self.lookup = SavingLookup(problem) if problem.has_reuse else _NoSaving()
        self.matchings = self._matchings() if self.lookup.active else []

    def _matchings(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Greedy (largest saving first) and, on chains, the two alternating neighbour matchings."""
        n, lk = self.n, self.lookup
        out = []
        for parity in (0, 1):
            first = np.arange(parity, n - 1, 2, dtype=np.int64)
            second = first + 1
            has = lk(first, second) > 0
            if has.sum() >= 0.9 * len(first):
                out.append((first[has], second[has]))
        if not (self.fast and out):
            out.insert(0, self._greedy_matching())
        return out

    def half_sum_saving(self) -> float:
        """``max_total_saving`` for ``L = 2``, vectorized: half the sum of each group's best saving."""
        lk = self.lookup
        if not isinstance(lk, SavingLookup) or not lk.active:
            return 0.0
        best = np.zeros(self.n)
        np.maximum.at(best, lk.k1, lk.values)
        np.maximum.at(best, lk.k2, lk.values)
        return float(best.sum()) / 2.0

    def _greedy_matching(self) -> tuple[np.ndarray, np.ndarray]:
        """Disjoint pairs, largest saving first (a maximal matching of the reuse graph)."""
        lk = self.lookup
        assert isinstance(lk, SavingLookup)  # only with reuse (self.matchings)
        order = np.argsort(-lk.values, kind="stable")
        matched = bytearray(self.n)
        first: list[int] = []
        second: list[int] = []
        for k1, k2 in zip(lk.k1[order].tolist(), lk.k2[order].tolist()):
            if not matched[k1] and not matched[k2]:
                matched[k1] = matched[k2] = 1
                first.append(k1)
                second.append(k2)
        return np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)

    def pairing(self, slots: int) -> _Pairing:
        padded = np.concatenate([self.base, np.zeros(max(0, 2 * slots - self.n))])
        return _Pairing(padded, self.lookup)

    def cost(self, pairing: _Pairing, a: np.ndarray, b: np.ndarray) -> float:
        """Predicted epoch time of the bins after sorted cutting (empty bins last)."""
        loads = pairing.loads(a, b)
        used = (a < self.n) | (b < self.n)
        count = int(used.sum())
        ranked = np.sort(loads[used])[::-1] if count < len(loads) else np.sort(loads)[::-1]
        chunks = -(-count // self.gpus)
        return float(ranked[:: self.gpus].sum()) + chunks * self.alpha

    def starts(self, pairing: _Pairing, slots: int) -> list[tuple[np.ndarray, np.ndarray]]:
        out = [pairing.fold(np.arange(2 * slots), slots)]
        for first, second in self.matchings:
            out.extend(self._matching_starts(pairing, slots, first, second))
        return out

    def _matching_starts(
        self, pairing: _Pairing, slots: int, first: np.ndarray, second: np.ndarray
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        n = self.n
        out: list[tuple[np.ndarray, np.ndarray]] = []
        count = len(first)
        p_min = max(0, n - slots)
        if p_min > count:
            return out
        candidates = {p_min, count}
        for used_bins in range(-(-(n - count) // self.gpus) * self.gpus, slots + 1, self.gpus):
            candidates.add(n - used_bins)  # a whole number of full iterations
        wanted = sorted(p for p in candidates if p_min <= p <= count)
        limit = 2 if self.fast else 6
        if len(wanted) > limit:
            wanted = sorted({wanted[0], wanted[-1], *wanted[:: max(1, len(wanted) // (limit - 2 or 1))]})[:limit]
        pair_load = pairing.loads(first, second)
        keys = (
            np.argsort(-self.lookup(first, second), kind="stable"),
            np.argsort(pair_load, kind="stable"),
            np.argsort(-pair_load, kind="stable"),
        )[: 1 if self.fast else 3]
        for p in wanted:
            for key in keys:
                keep = key[:p]
                loose = np.ones(n, dtype=bool)
                loose[first[keep]] = False
                loose[second[keep]] = False
                singles = np.flatnonzero(loose)
                empty = slots - p - len(singles)
                if empty < 0:
                    continue
                pads = np.arange(n, 2 * slots)
                a = np.concatenate([first[keep], singles, pads[:empty]])
                b = np.concatenate([second[keep], pads[empty:]])
                out.append((a, b))
        return out

    def plan(self, m_values: list[int], lower: float) -> tuple[float, int, np.ndarray, np.ndarray]:
        best: tuple[float, int, np.ndarray, np.ndarray] | None = None
        weights = (0.0, 1.0 / self.gpus, 1.0) if self.lookup.active else (0.0,)
        rebalanced = REBALANCED_STARTS
        if self.fast and self.lookup.active:
            m_values, weights, rebalanced = m_values[:3], (1.0,), 1
        for m in m_values:
            if best is not None and lower + m * self.alpha >= best[0] - 1e-12:
                break
            slots = m * self.gpus
            pairing = self.pairing(slots)
            starts = self.starts(pairing, slots)
            scored = sorted(((self.cost(pairing, a, b), s) for s, (a, b) in enumerate(starts)), key=lambda e: e[0])
            for c, s in scored[:1]:
                if best is None or c < best[0] - 1e-12:
                    best = (c, m, *starts[s])
            for _, s in scored[:rebalanced]:
                assert best is not None  # scored[0] just set it
                for weight in weights:
                    a, b = pairing.rebalance(starts[s][0].copy(), starts[s][1].copy(), self.max_sweeps, weight)
                    c = self.cost(pairing, a, b)
                    if c < best[0] - 1e-12:
                        best = (c, m, a, b)
        assert best is not None
        return best

    def iterations(self, a: np.ndarray, b: np.ndarray) -> Iterations:
        n, gpus = self.n, self.gpus
        loads = self.pairing(len(a)).loads(a, b)
        used = (a < n) | (b < n)
        order = np.lexsort((~used, -loads))[: int(used.sum())]
        a_l, b_l = a[order].tolist(), b[order].tolist()
        bins = [tuple(k for k in (x, y) if k < n) for x, y in zip(a_l, b_l)]
        return iterations_from_bins(bins, gpus)


def _iteration_counts(m0: int, m_hi: int, extra: int | None) -> list[int]:
    top = m_hi if extra is None else min(m_hi, m0 + extra)
    values = list(range(m0, top + 1))
    if len(values) > MAX_ITERATION_COUNTS:
        head = values[: MAX_ITERATION_COUNTS // 2]
        tail = np.unique(np.geomspace(head[-1] + 1, top, MAX_ITERATION_COUNTS // 2).round().astype(int)).tolist()
        values = head + [v for v in tail if v > head[-1]]
    return values


def balanced_iterations(
    problem: ScheduleProblem,
    extra_iterations: int | None = None,
    max_sweeps: int = 60,
    local_search: int | None = None,
    pair_search: int | None = None,
) -> Iterations:
    """The plan of ``greedy``; ``extra_iterations`` caps the iteration counts tried above the
    minimum (default: every useful count, pruned by the work bound); ``local_search`` caps the
    local search's scored moves (default: 100,000 up to 2,000 groups; above, 20,000 with reuse
    and none without);
    ``pair_search`` caps the sorted-cut pair search (``L = 2``; default 10,000,000 scored
    exchanges x iterations up to 2,000 groups, none above)."""
    n, gpus, cap = problem.num_groups, problem.num_gpus, problem.capacity
    alpha = problem.allreduce_cost
    m0 = min_iterations(problem)
    m_hi = max(m0, -(-n // gpus))  # with this many iterations every group can run alone
    best: tuple[float, Iterations] | None = None
    if cap == 2:
        planner = _PairPlanner(problem, max_sweeps)
        lower = max(0.0, float(planner.base.sum()) - planner.half_sum_saving()) / gpus
        cost, _, a, b = planner.plan(_iteration_counts(m0, m_hi, extra_iterations), lower)
        its = planner.iterations(a, b)
        best = (cost, its)
    else:
        top = m_hi if extra_iterations is None else min(m_hi, m0 + extra_iterations)
        for m in range(m0, min(top, m0 + 3) + 1):
            bins = [tuple(c) for c in _lpt_bins(problem, m * gpus)]
            loads = np.fromiter((problem.load(bn) for bn in bins), dtype=float, count=len(bins))
            iterations, total = _chunk_lists(bins, loads, gpus)
            total += alpha * len(iterations)
            if best is None or total < best[0] - 1e-12:
                best = (total, iterations)
    assert best is not None
    if n <= DYGNEX_START_MAX_GROUPS and cap >= 2:
        # the published target pairing is cheap enough here, so start from it when it is better
        from dygsched.planner.solvers.dygnex_g import target_pairing_iterations

        for use_reuse in {False, problem.has_reuse and n <= PORTFOLIO_MAX_GROUPS}:
            paper = target_pairing_iterations(problem, use_reuse=use_reuse)
            if predicted_epoch_time(problem, paper) < best[0] - 1e-12:
                best = (predicted_epoch_time(problem, paper), paper)
    budget = local_search
    if budget is None:
        budget = LOCAL_SEARCH_EVALUATIONS if n <= LOCAL_SEARCH_MAX_GROUPS else 0
        if n > LOCAL_SEARCH_MAX_GROUPS and problem.has_reuse:
            budget = LARGE_REUSE_LOCAL_SEARCH_EVALUATIONS
    plan = best[1]
    if budget > 0:
        plan = LocalSearch(problem, budget).improve(plan)
    pairs = pair_search
    if pairs is None:
        pairs = PAIR_SEARCH_EVALUATIONS if n <= LOCAL_SEARCH_MAX_GROUPS else 0
    if cap == 2 and pairs > 0:
        plan = improve_pairs(problem, plan, pairs)
    return plan


class _NoSaving:
    active = False

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.zeros(np.shape(a), dtype=float)


class RealGPlus(Solver):
    """The improved REAL-G: whole-epoch balanced pairing with reuse, rebalancing and sorted cutting."""

    name = "greedy"
    description = "REAL-G+: balanced reuse-aware pairing over the whole epoch (improves REAL Algorithm 1)"

    def run(self, problem: ScheduleProblem, time_limit: float | None, seed: int, **options: Any) -> SolverResult:
        check_options(self.name, options, ("extra_iterations", "max_sweeps", "local_search", "pair_search"))
        extra = options.get("extra_iterations")
        sweeps = options.get("max_sweeps", 60)
        for key, value in (("extra_iterations", extra), ("max_sweeps", sweeps)):
            if value is not None and (int(value) != value or value < 0):
                raise ScheduleError(f"{key} must be a non-negative integer, got {value!r}")
        budgets = {}
        for key in ("local_search", "pair_search"):
            value = options.get(key)
            if value is not None and (int(value) != value or value < 0):
                raise ScheduleError(f"{key} must be a non-negative integer, got {value!r}")
            budgets[key] = None if value is None else int(value)
        iterations = balanced_iterations(problem, None if extra is None else int(extra), int(sweeps), **budgets)
        return SolverResult(iterations, SolverStatus.HEURISTIC)
