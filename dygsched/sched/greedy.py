"""REAL-G+: a reuse-aware balanced pairing planner, the project's improved REAL-G (``greedy``).

REAL-G (Algorithm 1) builds one iteration at a time around the longest remaining group, which
leaves the last iterations with whatever is left. This planner instead decides the whole epoch
at once, for each candidate number of iterations ``m`` (the minimum and a few more):

1. Make ``m * G`` GPU slots ("bins") of at most ``L`` groups. For ``L = 2``, pad the groups with
   zero-time dummies to ``2 m G`` and pair the ``i``-th shortest with the ``i``-th longest (the
   pairing that minimizes the largest pair); with reuse, a second start pairs the groups with the
   largest savings first. For ``L != 2``, longest-processing-time-first into the bins with room.
2. Rebalance (``L = 2``): repeatedly match the heaviest bins with the lightest ones and re-pair
   the four groups of each match in the best of the three ways (smallest larger load, reuse
   counted), alternating two matchings, until the spread of bin loads stops shrinking.
3. Sort the bins by load and cut them into iterations of ``G`` consecutive bins; for fixed bins
   this minimizes the sum over iterations of the slowest GPU.
4. Up to 120 groups, the published target pairing (REAL Algorithm 1) also runs, and the better of
   the two plans goes on.
5. Local search (``local_search.py``): move or swap groups out of each iteration's slowest GPU.

The plan with the smallest predicted epoch time (``alpha`` counted per iteration) wins. The
published REAL-G stays available as ``real_g_paper``. Deterministic; ``O(n log n)`` per sweep.
"""

from __future__ import annotations

import heapq

import numpy as np

from dygsched.errors import ScheduleError
from dygsched.sched.base import Solver, SolverResult, check_options
from dygsched.sched.bounds import min_iterations
from dygsched.sched.local_search import LocalSearch
from dygsched.sched.plan import Iterations, SolverStatus, predicted_epoch_time
from dygsched.sched.problem import ScheduleProblem
from dygsched.sched.saving_lookup import SavingLookup


class _Pairing:
    """Bins of two slots over ids ``0..n-1`` (groups) and ``n..`` (zero-time padding)."""

    def __init__(self, times: np.ndarray, lookup) -> None:
        self.times = times
        self.lookup = lookup

    def loads(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.times[a] + self.times[b] - self.lookup(a, b)

    def fold(self, ids: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
        ordered = ids[np.argsort(self.times[ids], kind="stable")]
        return ordered[:bins].copy(), ordered[2 * bins - 1 : bins - 1 : -1].copy()

    def reuse_start(self, n: int, bins: int, problem: ScheduleProblem) -> tuple[np.ndarray, np.ndarray]:
        """Pair the largest savings first (as many pairs as the bins force), fold the rest."""
        wanted = max(0, n - bins)
        candidates = sorted(
            ((value, k1, k2) for k1 in range(n) for k2, value in problem.partners(k1).items() if k1 < k2),
            key=lambda e: (-e[0], e[1], e[2]),
        )
        matched = np.zeros(n, dtype=bool)
        first: list[int] = []
        second: list[int] = []
        for _, k1, k2 in candidates:
            if len(first) >= wanted:
                break
            if not matched[k1] and not matched[k2]:
                matched[k1] = matched[k2] = True
                first.append(k1)
                second.append(k2)
        rest_bins = bins - len(first)
        rest = np.flatnonzero(~matched)
        pads = np.arange(n, n + 2 * rest_bins - len(rest))
        a, b = self.fold(np.concatenate([rest, pads]), rest_bins)
        return np.concatenate([np.asarray(first, dtype=np.int64), a]), np.concatenate([np.asarray(second, dtype=np.int64), b])

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


def _chunk(bins: list[tuple[int, ...]], loads: np.ndarray, gpus: int) -> tuple[Iterations, float]:
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


LOCAL_SEARCH_EVALUATIONS = 100_000
LOCAL_SEARCH_MAX_GROUPS = 2_000
PORTFOLIO_MAX_GROUPS = 120


def balanced_iterations(
    problem: ScheduleProblem, extra_iterations: int = 3, max_sweeps: int = 60, local_search: int | None = None
) -> Iterations:
    """The plan of ``greedy``; ``local_search`` caps the local search's scored moves (default:
    100,000 up to 2,000 groups, none above, to keep large problems fast)."""
    n, gpus, cap = problem.num_groups, problem.num_gpus, problem.capacity
    alpha = problem.allreduce_cost
    m0 = min_iterations(problem)
    m_max = max(m0, min(m0 + extra_iterations, -(-n // gpus)))
    best: tuple[float, Iterations] | None = None
    lookup = SavingLookup(problem) if problem.has_reuse else None
    for m in range(m0, m_max + 1):
        slots = m * gpus
        candidates: list[tuple[list[tuple[int, ...]], np.ndarray]] = []
        if cap == 2:
            padded = np.concatenate([np.asarray(problem.group_times, dtype=float), np.zeros(max(0, 2 * slots - n))])
            pairing = _Pairing(padded, lookup if lookup is not None else _NoSaving())
            starts = [pairing.fold(np.arange(2 * slots), slots)]
            if lookup is not None:
                starts.append(pairing.reuse_start(n, slots, problem))
            weights = (0.0, 1.0 / gpus, 1.0, 1e6) if lookup is not None else (0.0,)
            for a0, b0 in starts:
                for weight in weights:
                    a, b = pairing.rebalance(a0.copy(), b0.copy(), max_sweeps, weight)
                    bins = [tuple(int(k) for k in (x, y) if k < n) for x, y in zip(a.tolist(), b.tolist())]
                    candidates.append((bins, pairing.loads(a, b)))
        else:
            bins = [tuple(c) for c in _lpt_bins(problem, slots)]
            candidates.append((bins, np.fromiter((problem.load(bn) for bn in bins), dtype=float, count=len(bins))))
        for bins, loads in candidates:
            iterations, total = _chunk(bins, loads, gpus)
            total += alpha * len(iterations)
            if best is None or total < best[0] - 1e-12:
                best = (total, iterations)
    assert best is not None
    if n <= PORTFOLIO_MAX_GROUPS and cap >= 2:
        # small problems: the published target pairing is cheap, so start from it when it is better
        from dygsched.sched.dygnex_g import target_pairing_iterations

        paper = target_pairing_iterations(problem, use_reuse=problem.has_reuse)
        if predicted_epoch_time(problem, paper) < best[0] - 1e-12:
            best = (predicted_epoch_time(problem, paper), paper)
    budget = local_search
    if budget is None:
        budget = LOCAL_SEARCH_EVALUATIONS if n <= LOCAL_SEARCH_MAX_GROUPS else 0
    if budget > 0:
        return LocalSearch(problem, budget).improve(best[1])
    return best[1]


class _NoSaving:
    active = False

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.zeros(np.shape(a), dtype=float)


class RealGPlus(Solver):
    """The improved REAL-G: whole-epoch balanced pairing with reuse, rebalancing and sorted cutting."""

    name = "greedy"
    description = "REAL-G+: balanced reuse-aware pairing over the whole epoch (improves REAL Algorithm 1)"

    def run(self, problem: ScheduleProblem, time_limit: float | None, seed: int, **options) -> SolverResult:
        check_options(self.name, options, ("extra_iterations", "max_sweeps", "local_search"))
        extra = options.get("extra_iterations", 3)
        sweeps = options.get("max_sweeps", 60)
        for key, value in (("extra_iterations", extra), ("max_sweeps", sweeps)):
            if int(value) != value or value < 0:
                raise ScheduleError(f"{key} must be a non-negative integer, got {value!r}")
        ls = options.get("local_search")
        if ls is not None and (int(ls) != ls or ls < 0):
            raise ScheduleError(f"local_search must be a non-negative integer, got {ls!r}")
        iterations = balanced_iterations(problem, int(extra), int(sweeps), None if ls is None else int(ls))
        return SolverResult(iterations, SolverStatus.HEURISTIC)
