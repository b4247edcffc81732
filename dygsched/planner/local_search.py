"""Local search on a plan: move or swap groups out of each iteration's slowest GPU.

The objective is the predicted epoch time, ``sum_i max_j load_ij`` (+ alpha per iteration). For
the slowest bin of every iteration, every move of one of its groups to a bin with room, and every
swap with a group of any other bin (same or other iteration), is scored exactly (reuse included);
the best improving one is applied. Passes repeat until none improves or ``max_evaluations``
candidate moves have been scored (a deterministic budget, so the result does not depend on the
machine's speed).

``PairBinSearch`` / ``improve_pairs`` (``L = 2``) search more widely: they re-cut the iterations
after every move, so a move may regroup the bins of every iteration (see ``PairBinSearch``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from dygsched.planner.plan import Iterations, iterations_from_bins
from dygsched.planner.problem import ScheduleProblem

# the saving of each pair (a[i], b[i]): a SavingLookup
PairSavings = Callable[[np.ndarray, np.ndarray], np.ndarray]


class LocalSearch:
    def __init__(self, problem: ScheduleProblem, max_evaluations: int) -> None:
        self.problem = problem
        self.budget = max_evaluations

    def improve(self, iterations: Iterations) -> Iterations:
        p = self.problem
        cap = p.capacity
        bins = [[list(b) for b in it] for it in iterations]
        loads = [[p.load(tuple(b)) for b in it] for it in bins]
        evaluations = 0

        def best3(i: int) -> list[tuple[float, int]]:
            return sorted(((v, j) for j, v in enumerate(loads[i])), reverse=True)[:3]

        tops = [best3(i) for i in range(len(bins))]

        def top(i: int, excluded: tuple[int, ...]) -> float:
            return next((v for v, j in tops[i] if j not in excluded), 0.0)

        improved = True
        while improved and evaluations < self.budget:
            improved = False
            for i in sorted(range(len(bins)), key=lambda i: -max(loads[i])):
                c = max(range(len(bins[i])), key=lambda j: loads[i][j])
                peak = loads[i][c]
                rest_i = top(i, (c,))
                best: tuple[float, tuple[int, int, list[int], list[int]] | None] = (-1e-12, None)
                for a_pos, a in enumerate(bins[i][c]):
                    without_a = bins[i][c][:a_pos] + bins[i][c][a_pos + 1 :]
                    for i2, row in enumerate(bins):
                        for d, content in enumerate(row):
                            if i2 == i and d == c:
                                continue
                            options: list[tuple[int | None, list[int], list[int]]]
                            options = [(None, content + [a], without_a)] if len(content) < cap else []
                            options += [
                                (b, content[:b_pos] + content[b_pos + 1 :] + [a], without_a + [b])
                                for b_pos, b in enumerate(content)
                            ]
                            for _b, new_d, new_c in options:
                                evaluations += 1
                                lc = p.load(tuple(new_c))
                                if lc >= peak:
                                    continue
                                ld = p.load(tuple(new_d))
                                if i2 == i:
                                    delta = max(lc, ld, top(i, (c, d))) - peak
                                else:
                                    other = top(i2, (d,))
                                    delta = max(lc, rest_i) - peak + max(ld, other) - max(loads[i2][d], other)
                                if delta < best[0]:
                                    best = (delta, (i2, d, new_d, new_c))
                    if evaluations >= self.budget:
                        break
                if best[1] is not None:
                    i2, d, new_d, new_c = best[1]
                    bins[i][c] = new_c
                    bins[i2][d] = new_d
                    loads[i][c] = p.load(tuple(new_c))
                    loads[i2][d] = p.load(tuple(new_d))
                    tops[i] = best3(i)
                    tops[i2] = best3(i2)
                    improved = True
                if evaluations >= self.budget:
                    break
        return tuple(tuple(tuple(sorted(b)) for b in it) for it in bins if any(it))


STALE_KICKS_PER_GROUP = 3  # 3 n kicks in a row (at least 20) without a strict improvement end the search
FULL_NEIGHBOURHOOD_WORK = (
    200_000  # above this (2 B^2 x iterations) only exchanges out of the 3 largest bins of each iteration are scored
)
SCORE_FLOOR = 10_000  # each scoring round counts at least this much, so tiny plans end in time


class PairBinSearch:
    """Iterated local search over bins of two slots (``L = 2``) with the exact epoch-time objective.

    A plan is ``B = m G`` bins (some may be empty); its predicted epoch time is the *sorted cut*:
    bins sorted by load, cut into iterations of ``G``, each iteration costing its first (largest)
    load, plus ``alpha`` per iteration that holds a group. Unlike ``LocalSearch``, which keeps each
    bin in its iteration, this search re-cuts after every move, so a move that lowers any bin
    reshuffles the iterations optimally.

    Moves: exchange the contents of any two slots of different bins (a slot may be empty, so this
    covers moving a group to a bin with room). All candidate exchanges are scored exactly and at
    once (numpy): with ``srt`` the loads sorted in descending order, changing two bins to loads
    ``x >= y`` puts ``x`` at position ``#{remaining > x}`` and ``y`` just after the remaining
    loads above it, and every iteration head is read off ``srt`` with a shift of 0, 1 or 2.
    The best improving exchange is applied until none improves (a local optimum); then a few
    random exchanges (a kick, from a seeded generator) start the next descent, and a local
    optimum no worse than the best replaces it; ``3 n`` kicks in a row (at least 20) without a
    strict improvement end the search. Above ``FULL_NEIGHBOURHOOD_WORK`` only exchanges out of the
    three largest bins of each iteration are scored. The budget counts scored exchanges times
    iterations (at least 10,000 per round), so the result does not depend on the machine's speed.
    """

    def __init__(self, problem: ScheduleProblem, num_bins: int, lookup: PairSavings | None = None) -> None:
        self.problem = problem
        self.n = problem.num_groups
        self.gpus = problem.num_gpus
        self.alpha = problem.allreduce_cost
        self.nb = num_bins
        self.heads = num_bins // problem.num_gpus
        self.times = np.concatenate([np.asarray(problem.group_times, dtype=float), [0.0]])
        self.lookup = lookup
        self.evaluations = 0
        self.deadline: float | None = None  # a time.perf_counter() value that also ends the search
        self.target = -float("inf")  # a cost at or below which the search stops

    def _out_of_time(self) -> bool:
        return self.deadline is not None and time.perf_counter() > self.deadline

    def pair_loads(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        loads: np.ndarray = self.times[np.minimum(a, self.n)] + self.times[np.minimum(b, self.n)]
        if self.lookup is not None:
            loads = loads - self.lookup(a, b)
        return loads

    def cost(self, a: np.ndarray, b: np.ndarray) -> float:
        loads = self.pair_loads(a, b)
        used = int(((a < self.n) | (b < self.n)).sum())
        srt = np.sort(loads)[::-1]
        return float(srt[:: self.gpus].sum()) + self.alpha * (-(-used // self.gpus))

    def _candidates(self, a: np.ndarray, b: np.ndarray, srt_pos: np.ndarray, full: bool) -> tuple[np.ndarray, np.ndarray]:
        """Slot pairs (s1, s2) of different bins, not both empty; slot s is side s // nb of bin s % nb."""
        nb, n, gpus = self.nb, self.n, self.gpus
        items = np.concatenate([a, b])
        slots = np.arange(2 * nb)
        if full:
            s1, s2 = np.triu_indices(2 * nb, 1)
        else:
            # the largest few bins of every iteration (sorted positions r G .. r G + 2) against all slots
            focus = srt_pos % gpus < min(gpus, 3)
            first = slots[np.concatenate([focus, focus])]
            s1 = np.repeat(first, 2 * nb)
            s2 = np.tile(slots, len(first))
        keep = (s1 % nb != s2 % nb) & ((items[s1] < n) | (items[s2] < n))
        return s1[keep], s2[keep]

    def _score(
        self,
        a: np.ndarray,
        b: np.ndarray,
        loads: np.ndarray,
        srt: np.ndarray,
        pos: np.ndarray,
        used: int,
        s1: np.ndarray,
        s2: np.ndarray,
    ) -> np.ndarray:
        nb, n, gpus, heads = self.nb, self.n, self.gpus, self.heads
        items = np.concatenate([a, b])
        others = np.concatenate([b, a])
        b1, b2 = s1 % nb, s2 % nb
        x1 = self.pair_loads(others[s1], items[s2])  # bin b1 after the exchange
        x2 = self.pair_loads(others[s2], items[s1])
        p1, p2 = pos[b1], pos[b2]
        lo, hi = np.minimum(p1, p2), np.maximum(p1, p2)
        x, y = np.maximum(x1, x2), np.minimum(x1, x2)
        neg = -srt
        gx = np.searchsorted(neg, -x, side="left") - (srt[lo] > x) - (srt[hi] > x)
        gy = np.searchsorted(neg, -y, side="left") - (srt[lo] > y) - (srt[hi] > y)
        px, py = gx, gy + 1
        h = np.arange(heads) * gpus
        total = np.zeros(len(s1))
        step = max(1, 4_000_000 // max(heads, 1))
        for s in range(0, len(s1), step):
            e = min(len(s1), s + step)
            hx, hy = px[s:e, None], py[s:e, None]
            q = h[None, :] - (h[None, :] > hx) - (h[None, :] > hy)
            idx = q + (q >= lo[s:e, None]) + (q >= hi[s:e, None] - 1)
            val = srt[np.minimum(idx, nb - 1)]
            val = np.where(h[None, :] == hx, x[s:e, None], np.where(h[None, :] == hy, y[s:e, None], val))
            total[s:e] = val.sum(axis=1)
        self.evaluations += max(len(s1) * heads, SCORE_FLOOR)  # a floor for the per-step overhead
        u_old = ((a[b1] < n) | (b[b1] < n)).astype(int) + ((a[b2] < n) | (b[b2] < n)).astype(int)
        u_new = ((others[s1] < n) | (items[s2] < n)).astype(int) + ((others[s2] < n) | (items[s1] < n)).astype(int)
        levels = -(-(used - u_old + u_new) // gpus)
        scores: np.ndarray = total + self.alpha * levels
        return scores

    def _state(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        loads = self.pair_loads(a, b)
        order = np.argsort(-loads, kind="stable")
        pos = np.empty(self.nb, dtype=np.int64)
        pos[order] = np.arange(self.nb)
        used = int(((a < self.n) | (b < self.n)).sum())
        return loads, loads[order], pos, used

    def descend(self, a: np.ndarray, b: np.ndarray, budget: int, full: bool) -> tuple[np.ndarray, np.ndarray, float]:
        nb = self.nb
        current = self.cost(a, b)
        while self.evaluations < budget and not self._out_of_time():
            loads, srt, pos, used = self._state(a, b)
            s1, s2 = self._candidates(a, b, pos, full)
            if len(s1) == 0:
                break
            scores = self._score(a, b, loads, srt, pos, used, s1, s2)
            k = int(np.argmin(scores))
            if not scores[k] < current - 1e-12 * max(1.0, abs(current)):
                break
            i, j = int(s1[k]), int(s2[k])
            slots = np.concatenate([a, b])
            slots[i], slots[j] = slots[j], slots[i]
            a, b = slots[:nb].copy(), slots[nb:].copy()
            current = self.cost(a, b)
        return a, b, current

    def search(
        self, a: np.ndarray, b: np.ndarray, budget: int, seed: int = 0, kick: int = 3
    ) -> tuple[float, np.ndarray, np.ndarray]:
        """Iterated local search from bins ``(a, b)`` (ids ``>= n`` are empty slots)."""
        nb, n = self.nb, self.n
        full = 2 * nb * nb * self.heads <= FULL_NEIGHBOURHOOD_WORK
        rng = np.random.default_rng(seed)
        a, b, cost = self.descend(a.copy(), b.copy(), budget, full)
        best = (cost, a, b)
        stale = 0
        while (
            self.evaluations < budget
            and not self._out_of_time()
            and stale < max(20, STALE_KICKS_PER_GROUP * n)
            and not best[0] <= self.target
        ):
            stale += 1
            slots = np.concatenate([best[1], best[2]])
            for _ in range(kick):
                i, j = rng.choice(2 * nb, 2, replace=False)
                if i % nb != j % nb:
                    slots[i], slots[j] = slots[j], slots[i]
            a2, b2, cost2 = self.descend(slots[:nb].copy(), slots[nb:].copy(), budget, full)
            if cost2 < best[0] - 1e-12 * max(1.0, abs(best[0])):
                stale = 0
            if cost2 <= best[0] + 1e-12 * max(1.0, abs(best[0])):
                best = (cost2, a2, b2)
        return best

    def iterations(self, a: np.ndarray, b: np.ndarray) -> Iterations:
        """The bins sorted by load (groups before empty bins on ties) and cut into iterations."""
        n, gpus = self.n, self.gpus
        loads = self.pair_loads(a, b)
        used = (a < n) | (b < n)
        order = np.lexsort((~used, -loads))[: int(used.sum())]
        bins = [tuple(sorted(int(k) for k in (a[p], b[p]) if k < n)) for p in order]
        return iterations_from_bins(bins, gpus)


def _bins_from_plan(problem: ScheduleProblem, iterations: Iterations, num_bins: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The plan's bins as two slot arrays of ``num_bins`` bins; the lightest single groups are paired
    while there are too many bins (None when that is not enough)."""
    n = problem.num_groups
    bins = sorted((tuple(b) for it in iterations for b in it if b), key=problem.load)
    if any(len(b) > 2 for b in bins):
        return None
    singles = [b for b in bins if len(b) == 1]
    pairs = [b for b in bins if len(b) == 2]
    while len(singles) + len(pairs) > num_bins and len(singles) >= 2:
        pairs.append(singles.pop(0) + singles.pop(0))
    if len(singles) + len(pairs) > num_bins:
        return None
    chosen = pairs + singles
    a = np.full(num_bins, n, dtype=np.int64)
    b = np.full(num_bins, n, dtype=np.int64)
    for i, groups in enumerate(chosen):
        a[i] = groups[0]
        if len(groups) == 2:
            b[i] = groups[1]
    return a, b


def _shaped_starts(
    problem: ScheduleProblem, num_bins: int, search: PairBinSearch, keep: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Fold starts with two kinds of cheap bins split off: the ``s`` longest groups run alone and the
    ``2q`` shortest are paired among themselves (fold), the rest are folded into the other bins.
    With ``s + q`` about ``G`` those bins fill one cheap iteration (long singles next to pairs of
    short groups), which the plain fold cannot form. The ``keep`` best starts by exact cost."""
    n, gpus = problem.num_groups, problem.num_gpus
    order = np.argsort(np.asarray(problem.group_times), kind="stable")
    step = max(1, gpus // 16)  # at most about 16 x 16 shapes
    scored = []
    for s in range(0, min(2 * gpus, n) + 1, step):
        for q in range(0, max(0, gpus - s) + 1, step):
            middle = n - s - 2 * q
            rest = num_bins - s - q
            if middle < 0 or rest < 0 or middle > 2 * rest:
                continue
            small, big, mid = order[: 2 * q], order[n - s :], order[2 * q : n - s]
            padded = np.concatenate([np.full(2 * rest - middle, n, dtype=np.int64), mid])  # empty slots first
            a = np.concatenate([small[:q], big, padded[:rest]]).astype(np.int64)
            b = np.concatenate([small[2 * q - 1 : q - 1 : -1] if q else small[:0], np.full(s, n), padded[::-1][:rest]]).astype(
                np.int64
            )
            scored.append((search.cost(a, b), s, q, a, b))
    scored.sort(key=lambda e: (e[0], e[1], e[2]))
    return [(a, b) for _, _, _, a, b in scored[:keep]]


PAIR_SEARCH_MAX_WORK = 4_000_000  # num_bins^2 * iterations above which the pair search is skipped (one round would cost too much)


def improve_pairs(
    problem: ScheduleProblem,
    iterations: Iterations,
    budget: int,
    seed: int = 0,
    deadline: float | None = None,
    target: float | None = None,
) -> Iterations:
    """``L = 2``: iterated sorted-cut local search (``PairBinSearch``) from the plan and from shaped
    fold starts, for the plan's iteration count and the two smallest counts; returns the best plan
    found, never worse than ``iterations``. ``budget`` caps scored exchanges x iterations in total;
    ``deadline`` (``time.perf_counter()`` value) also stops it (used by the ILP's time limit), and
    so does reaching a cost of ``target`` or less."""
    from dygsched.planner.bounds import min_iterations
    from dygsched.planner.plan import predicted_epoch_time
    from dygsched.planner.saving_lookup import SavingLookup

    if problem.capacity != 2 or budget <= 0:
        return iterations
    n, gpus = problem.num_groups, problem.num_gpus
    m0 = min_iterations(problem)
    counts = sorted({len(iterations), m0, m0 + 1})
    lookup = SavingLookup(problem) if problem.has_reuse else None
    starts = []
    for m in counts:
        bins = m * gpus
        if 2 * bins < n or bins * bins * m > PAIR_SEARCH_MAX_WORK:
            continue
        search = PairBinSearch(problem, bins, lookup)
        own = _bins_from_plan(problem, iterations, bins)
        candidates = ([own] if own is not None else []) + _shaped_starts(problem, bins, search, 2)
        for a, b in candidates:
            starts.append((search.cost(a, b), m, a, b))
    if not starts:
        return iterations
    starts.sort(key=lambda e: (e[0], e[1]))
    best_cost, best = predicted_epoch_time(problem, iterations), iterations
    chosen = starts[:3]
    for rank, (_, m, a, b) in enumerate(chosen):
        if (deadline is not None and time.perf_counter() > deadline) or (target is not None and best_cost <= target):
            break
        search = PairBinSearch(problem, m * gpus, lookup)
        share = budget // len(chosen)
        if deadline is not None:  # an equal share of the time left to each remaining start
            now = time.perf_counter()
            search.deadline = now + (deadline - now) / (len(chosen) - rank)
        if target is not None:
            search.target = target
        cost, a, b = search.search(a, b, share, seed=seed + rank)
        if cost < best_cost - 1e-12 * max(1.0, abs(best_cost)):
            best_cost, best = cost, search.iterations(a, b)
    return best
