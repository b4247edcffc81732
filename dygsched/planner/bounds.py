"""Lower bounds on the epoch time of a scheduling problem.

A plan with iterations ``i = 1..m`` costs ``F + m * alpha`` with ``F = sum_i M_i`` and ``M_i`` the
largest GPU load of iteration ``i``. Every bound below holds for every valid plan; the proof
sketches are given so that a reader can check them.

* Iterations: every GPU holds at most ``L`` groups per iteration, so ``m >= m0 = ceil(n / (L G))``
  and the all-reduce term is at least ``m0 * alpha``.

* Reuse saving ``S*``: the saving a plan collects is the sum of ``R[k1][k2]`` over the pairs that
  share a bin (a GPU in one iteration). For ``L = 2`` those pairs are disjoint, i.e. a matching of
  the reuse graph, so the saving is at most the maximum-weight matching (``max_reuse_saving``):
  exact by dynamic programming when every pair is within a small index distance (sliding windows:
  the bandwidth is ``tw - 1``), exact with ``networkx.max_weight_matching`` for other graphs of
  moderate size, otherwise the half-sum bound below. For ``L > 2`` a group meets at most ``L - 1``
  partners, each saving counted by both ends: at most half the sum over groups of their ``L - 1``
  largest savings (``max_total_saving``, also valid for ``L = 2``).

* Work bound: ``G * M_i`` is at least the total load of iteration ``i``, so summing,
  ``F >= (sum_k t_k - S*) / G``.

* Ranking bound: let ``e_k`` be a lower bound on the load of any bin holding group ``k``
  (``t_k`` without reuse; with reuse and ``L = 2``, ``min(t_k, min_j t_k + t_j - R[k][j])``; with
  reuse and ``L > 2`` the bound is not used). Sort ``e`` descending. The ``r L G + 1`` groups with
  the largest ``e`` cannot fit in ``r`` iterations, so at least ``r + 1`` iterations have a bin
  with load ``>= e_(rLG+1)``: the ``(r+1)``-th largest ``M_i`` is at least ``e_(rLG+1)`` and
  ``F >= sum_r e_(rLG+1)``.

* Ranking bound with work (``combined_bound``): sort the iterations by ``M`` descending and fix
  ``q``. The first ``q`` iterations cost at least the ranking terms ``sum_{r<q} e_(rLG+1)``; the
  others hold all but at most ``q L G`` groups, so their total load is at least the work of the
  ``n - qLG`` smallest groups minus the saving ``S*``, and they cost at least that over ``G``.
  The best ``q`` is taken (``q = 0`` is the work bound, ``q = m`` the ranking bound).

* Iteration bound (``iteration_bound.py``, expensive, not part of ``lower_bound``): a mixed-integer
  relaxation that keeps the iterations' maxima as an integer step function and the bins
  fractional. It is solved by HiGHS within a time limit; its proven bound is valid when the time
  runs out. On instances with few iterations per GPU it is often within a fraction of a percent
  of the best plan where the bounds above are 2-8% below it.

The bounds assume ``R[k1][k2] <= min(t_k1, t_k2)`` (a saving is a share of work both groups do,
as in REAL eq. 17), so that no load is negative. The lower bound is the largest of these plus
``m0 * alpha``. It is computed once per problem and cached (problems are immutable).
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from dygsched.planner.problem import ScheduleProblem

DP_MAX_BANDWIDTH = 6  # exact matching by DP over 2^bandwidth states
NX_MAX_EDGES = 4_000  # exact matching with networkx (pure Python blossom) up to this many pairs
NEGLIGIBLE_LOAD = 1e-9  # group times below this share of alpha are not priced by the expensive bounds


def loads_negligible(problem: ScheduleProblem) -> bool:
    """No group takes time worth pricing against the all-reduce (or any time at all).

    The expensive bounds then return ``lower_bound``, which is within ``2 NEGLIGIBLE_LOAD alpha``
    per iteration of the optimum, since their solvers cannot scale loads of, say, 1e-300 s
    against 0.1 s."""
    return max(problem.group_times) <= NEGLIGIBLE_LOAD * problem.allreduce_cost


def min_iterations(problem: ScheduleProblem) -> int:
    """The fewest iterations any plan needs: every GPU holds at most ``capacity`` groups per iteration."""
    return math.ceil(problem.num_groups / (problem.num_gpus * problem.capacity))


def max_total_saving(problem: ScheduleProblem) -> float:
    """An upper bound on the total reuse saving any plan can collect (the half-sum bound).

    A group shares a GPU with at most ``capacity - 1`` others per plan, so it takes part in at
    most its ``capacity - 1`` largest savings; each saving involves two groups.
    """
    partners = problem.capacity - 1
    if partners == 0 or not problem.has_reuse:
        return 0.0
    total = 0.0
    for k in range(problem.num_groups):
        values = problem.partners(k).values()
        total += sum(heapq.nlargest(partners, values)) if values else 0.0
    return total / 2.0


def _pairs(problem: ScheduleProblem) -> list[tuple[int, int, float]]:
    return [(k1, k2, v) for k1 in range(problem.num_groups) for k2, v in problem.partners(k1).items() if k1 < k2 and v > 0]


def _banded_matching(n: int, pairs: list[tuple[int, int, float]], width: int) -> float:
    """Maximum-weight matching when every pair ``(k1, k2)`` has ``k2 - k1 <= width``.

    Vertices in order; the state is the set of the next ``width`` vertices already matched to an
    earlier one (bit ``d - 1`` for ``v + d``)."""
    forward: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for k1, k2, v in pairs:
        forward[k1].append((k2 - k1, v))
    dp = {0: 0.0}  # state -> best saving; state bit 0 is the current vertex
    for k in range(n):
        nxt: dict[int, float] = {}
        for state, value in dp.items():
            rest = state >> 1
            if state & 1:  # k already matched
                if nxt.get(rest, -1.0) < value:
                    nxt[rest] = value
                continue
            if nxt.get(rest, -1.0) < value:  # k unmatched (or matched later: never, partners are later)
                nxt[rest] = value
            for d, w in forward[k]:
                bit = 1 << (d - 1)
                if not rest & bit:
                    s2, v2 = rest | bit, value + w
                    if nxt.get(s2, -1.0) < v2:
                        nxt[s2] = v2
        dp = nxt
    return max(dp.values())


def max_reuse_saving(problem: ScheduleProblem) -> float:
    """The tightest upper bound computed here on the total saving of any plan (see module doc)."""
    cached: float | None = problem.__dict__.get("_bound_cache_saving")
    if cached is not None:
        return cached
    value = max_total_saving(problem)
    if problem.capacity == 2 and problem.has_reuse:
        pairs = _pairs(problem)
        width = max(k2 - k1 for k1, k2, _ in pairs)
        if width <= DP_MAX_BANDWIDTH:
            value = min(value, _banded_matching(problem.num_groups, pairs, width))
        elif len(pairs) <= NX_MAX_EDGES:
            import networkx as nx

            graph = nx.Graph()
            graph.add_weighted_edges_from(pairs)
            matching = nx.max_weight_matching(graph)
            value = min(value, sum(graph[a][b]["weight"] for a, b in matching))
    object.__setattr__(problem, "_bound_cache_saving", value)
    return value


def bin_floor(problem: ScheduleProblem) -> np.ndarray | None:
    """``e_k``: a lower bound on the load of any bin holding group ``k`` (None when unknown)."""
    times = np.asarray(problem.group_times, dtype=float)
    if not problem.has_reuse:
        return times
    if problem.capacity != 2:
        return None
    floor = times.copy()
    for k1, k2, v in _pairs(problem):
        load = times[k1] + times[k2] - v
        floor[k1] = min(floor[k1], load)
        floor[k2] = min(floor[k2], load)
    floored: np.ndarray = np.maximum(floor, 0.0)
    return floored


def work_bound(problem: ScheduleProblem) -> float:
    return max(0.0, sum(problem.group_times) - max_reuse_saving(problem)) / problem.num_gpus


def ranking_bound(problem: ScheduleProblem) -> float:
    floor = bin_floor(problem)
    if floor is None:
        return 0.0
    ordered = np.sort(floor)[::-1]
    return float(ordered[:: problem.capacity * problem.num_gpus].sum())


def combined_bound(problem: ScheduleProblem) -> float:
    """``max_q`` ranking terms of the ``q`` slowest iterations + work of the rest over ``G``."""
    floor = bin_floor(problem)
    if floor is None:
        return work_bound(problem)
    step = problem.capacity * problem.num_gpus
    n = problem.num_groups
    times = np.sort(np.asarray(problem.group_times, dtype=float))  # ascending
    prefix = np.concatenate([[0.0], np.cumsum(times)])  # prefix[c]: work of the c smallest groups
    heads = np.sort(floor)[::-1][::step]  # e_(rLG+1), r = 0..m0-1
    saving = max_reuse_saving(problem)
    best = 0.0
    ranked = 0.0
    for q in range(len(heads) + 1):
        rest = max(0, n - q * step)
        best = max(best, ranked + max(0.0, prefix[rest] - saving) / problem.num_gpus)
        if q < len(heads):
            ranked += float(heads[q])
    return best


def lower_bound(problem: ScheduleProblem) -> float:
    """A valid lower bound on the predicted epoch time of every plan for ``problem``."""
    cached: float | None = problem.__dict__.get("_bound_cache_total")
    if cached is not None:
        return cached
    value = max(work_bound(problem), ranking_bound(problem), combined_bound(problem))
    value += min_iterations(problem) * problem.allreduce_cost
    object.__setattr__(problem, "_bound_cache_total", value)
    return value
