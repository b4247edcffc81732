"""DyGNeX-G: Algorithm 2 of DyGNeX (appendix D), kept faithful as the published baseline.

One pass of the main loop builds one iteration:

1. ``GroupPreProcess``: add a zero group (``t_0 = 0``) and sort ascending. The zero group stays
   available in every pass: pairing a group with it means the group runs alone.
2. ``GetTargetList``: candidate targets ``t[n] + t[i]`` for every remaining ``i`` (``i = 0`` is the
   zero group, i.e. the longest group alone), ``t[n]`` being the longest remaining group.
3. ``GetGroupPair``: for each target, pick ``G - 1`` pairs, each the pair whose sum is closest to
   the target among the groups not yet taken (the two-pointer search over the sorted list).
4. The waste ``W_i = G * max(max pair sum, T_target) - sum of pair sums - T_target`` (eq. 9);
   the target with the smallest waste gives the iteration.

When at most ``G`` groups remain, they form the last iteration, one per GPU.

REAL-G (REAL Algorithm 1) is the same loop with the reuse table: a pair's time is
``t[a] + t[b] - R[a][b]`` and the two-pointer walk runs on those times (``real_g_paper``).

Without reuse the two-pointer search returns a pair of minimum ``|sum - target|``; that pair is
found here with a vectorized search (``searchsorted``), which only changes which of several equally
close pairs is taken. With reuse the two-pointer walk is run literally, since reuse breaks the
monotonicity it relies on. The published algorithm pairs at most two groups per GPU; for
``capacity == 1`` it degenerates to running the longest ``G`` remaining groups each iteration.

The algorithm is ``O(n^3)``; without reuse an iteration's candidate targets are evaluated together
on index arrays (``_pick_pairs_for_targets``: the same pairs, about 7x faster at 300 groups; the
one-by-one loop stays as the reference the tests compare plans with). ``max_targets`` (default:
all) evaluates only that many evenly spaced candidate targets per iteration, for experiments on
very large problems.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from dygsched.errors import ScheduleError
from dygsched.planner.base import Solver, SolverResult, check_options
from dygsched.planner.plan import Iterations, SolverStatus
from dygsched.planner.problem import ScheduleProblem

ZERO = -1  # id of the zero group
VECTOR_ELEMENTS = 1_000_000  # targets x groups per vectorised step (about 100 MB of index arrays)


def _closest_pair_sorted(values: np.ndarray, target: float) -> tuple[int, int] | None:
    """Positions ``h < t`` in the sorted ``values`` whose sum is closest to ``target``."""
    m = len(values)
    if m < 2:
        return None
    heads = np.arange(m)
    j = np.searchsorted(values, target - values)
    best_err, best = np.inf, None
    for cand in (np.maximum(j, heads + 1), j - 1):
        ok = (cand > heads) & (cand < m)
        if not ok.any():
            continue
        h = heads[ok]
        c = cand[ok]
        err = np.abs(values[h] + values[c] - target)
        pos = int(np.argmin(err))
        if err[pos] < best_err:
            best_err, best = err[pos], (int(h[pos]), int(c[pos]))
    return best


def _two_pointer_reuse(
    ids: list[int], times: list[float], problem: ScheduleProblem, target: float
) -> tuple[int, int, float] | None:
    """The literal two-pointer walk of REAL Algorithm 1 (GetPairs) on pair times net of reuse."""
    head, tail = 0, len(ids) - 1
    best = None
    best_err = float("inf")
    while head < tail:
        value = times[head] + times[tail] - problem.saving(ids[head], ids[tail])
        err = abs(value - target)
        if err < best_err:
            best_err, best = err, (head, tail, value)
        if value < target:
            head += 1
        else:
            tail -= 1
    return best


def _pair_time(problem: ScheduleProblem, a: int, b: int, use_reuse: bool) -> float:
    ta = problem.group_times[a] if a != ZERO else 0.0
    tb = problem.group_times[b] if b != ZERO else 0.0
    return ta + tb - (problem.saving(a, b) if use_reuse else 0.0)


def _pick_pairs(
    problem: ScheduleProblem, ids: list[int], taken: set[int], target: float, count: int, use_reuse: bool
) -> list[tuple[float, tuple[int, ...]]]:
    """``GetGroupPair``: ``count`` pairs closest to ``target`` from the untaken groups (zero reusable)."""
    avail_ids = [k for k in ids if k == ZERO or k not in taken]
    avail_times = [0.0 if k == ZERO else problem.group_times[k] for k in avail_ids]
    pairs: list[tuple[float, tuple[int, ...]]] = []
    if use_reuse:
        while len(pairs) < count:
            found = _two_pointer_reuse(avail_ids, avail_times, problem, target)
            if found is None:
                break
            head, tail, value = found
            pair = tuple(k for k in (avail_ids[head], avail_ids[tail]) if k != ZERO)
            pairs.append((value, pair))
            for pos in sorted((p for p in (head, tail) if avail_ids[p] != ZERO), reverse=True):
                del avail_ids[pos]
                del avail_times[pos]
        return pairs
    values = np.asarray(avail_times, dtype=float)
    id_arr = np.asarray(avail_ids, dtype=np.int64)
    while len(pairs) < count:
        closest = _closest_pair_sorted(values, target)
        if closest is None:
            break
        head, tail = closest
        pair = tuple(int(k) for k in (id_arr[head], id_arr[tail]) if k != ZERO)
        pairs.append((float(values[head] + values[tail]), pair))
        drop = [p for p in (head, tail) if id_arr[p] != ZERO]
        values = np.delete(values, drop)
        id_arr = np.delete(id_arr, drop)
    return pairs


def _pick_pairs_for_targets(
    values: np.ndarray, ids: np.ndarray, rows: np.ndarray, count: int
) -> list[list[tuple[float, tuple[int, ...]]]]:
    """``_pick_pairs`` (no reuse) for every candidate target of one iteration at once.

    ``values``/``ids``: the remaining groups, sorted ascending, the zero group first (position 0);
    ``rows``: per target the position of its partner (the longest group, position ``m - 1``, is
    every target's other member). Row ``r`` sees the groups but those two (the zero group stays),
    and takes ``count`` times the closest pair to its target with ``_closest_pair_sorted``'s
    candidates and tie-breaking, evaluated on index arrays over the alive positions instead of a
    compacted copy: the same pairs in the same order.
    """
    m, t_count = len(values), len(rows)
    targets = values[m - 1] + values[rows] - 0.0
    alive = np.ones((t_count, m), dtype=bool)
    alive[:, m - 1] = False
    alive[np.arange(t_count), rows] = rows == 0  # the zero group stays available
    positions = np.arange(m)
    wanted = np.searchsorted(values, targets[:, None] - values[None, :])  # first index >= target - v[h]
    picked: list[list[tuple[float, tuple[int, ...]]]] = [[] for _ in range(t_count)]
    active = np.ones(t_count, dtype=bool)
    row_index = np.arange(t_count)
    for _ in range(count):
        if not active.any():
            break
        next_alive = np.full((t_count, m + 1), m)
        next_alive[:, :m] = np.minimum.accumulate(np.where(alive, positions, m)[:, ::-1], axis=1)[:, ::-1]
        prev_alive = np.maximum.accumulate(np.where(alive, positions, -1), axis=1)
        first_up = np.take_along_axis(next_alive, wanted, axis=1)  # ``j`` as an index
        c1 = np.maximum(first_up, next_alive[:, 1:])  # max(j, h + 1)
        below = np.where(wanted > 0, np.take_along_axis(prev_alive, np.maximum(wanted - 1, 0), axis=1), -1)  # j - 1
        ok1 = alive & (c1 < m)
        ok2 = alive & (below > positions)
        err1 = np.where(ok1, np.abs(values[None, :] + values[np.minimum(c1, m - 1)] - targets[:, None]), np.inf)
        err2 = np.where(ok2, np.abs(values[None, :] + values[np.maximum(below, 0)] - targets[:, None]), np.inf)
        h1, h2 = err1.argmin(axis=1), err2.argmin(axis=1)
        e1, e2 = err1[row_index, h1], err2[row_index, h2]
        use2 = e2 < e1
        found = active & (np.isfinite(e1) | np.isfinite(e2))
        heads = np.where(use2, h2, h1)
        tails = np.where(use2, below[row_index, h2], c1[row_index, h1])
        for r in np.flatnonzero(found):
            head, tail = int(heads[r]), int(tails[r])
            picked[r].append((float(values[head] + values[tail]), tuple(int(k) for k in (ids[head], ids[tail]) if k != ZERO)))
        rows_found = np.flatnonzero(found)
        alive[rows_found, heads[found]] = heads[found] == 0
        alive[rows_found, tails[found]] = False
        active &= found
    return picked


def target_pairing_iterations(
    problem: ScheduleProblem, use_reuse: bool, max_targets: int | None = None, vectorized: bool = True
) -> Iterations:
    """DyGNeX Algorithm 2 (``use_reuse=False``) or REAL Algorithm 1 (``use_reuse=True``).

    ``vectorized`` (no reuse only): evaluate an iteration's candidate targets together
    (``_pick_pairs_for_targets``); ``False`` runs them one by one, the reference the tests compare
    the plans with."""
    gpus = problem.num_gpus
    order = sorted(range(problem.num_groups), key=lambda k: (problem.group_times[k], k))
    if problem.capacity == 1:
        longest_first = order[::-1]
        return tuple(
            tuple((longest_first[s + r],) if s + r < len(longest_first) else () for r in range(gpus))
            for s in range(0, len(longest_first), gpus)
        )
    remaining = [ZERO, *order]  # GroupPreProcess: zero group first, ascending times
    iterations: list[tuple[tuple[int, ...], ...]] = []
    while len(remaining) - 1 > gpus:
        longest = remaining[-1]
        partners = remaining[:-1]  # GetTargetList: t[n] + t[i], i = 0 .. n-1 (i = 0: alone)
        if max_targets is not None and len(partners) > max_targets:
            picks = np.unique(np.linspace(0, len(partners) - 1, max_targets).round().astype(int))
            partners = [partners[p] for p in picks]
        all_pairs: Iterable[list[tuple[float, tuple[int, ...]]]]
        if vectorized and not use_reuse:
            position = {k: i for i, k in enumerate(remaining)}
            values = np.asarray([0.0 if k == ZERO else problem.group_times[k] for k in remaining], dtype=float)
            ids, rows = np.asarray(remaining, dtype=np.int64), np.asarray([position[k] for k in partners])
            chunk = max(1, VECTOR_ELEMENTS // len(remaining))  # targets evaluated together: bounded memory
            all_pairs = [
                pairs
                for start in range(0, len(rows), chunk)
                for pairs in _pick_pairs_for_targets(values, ids, rows[start : start + chunk], gpus - 1)
            ]
        else:
            all_pairs = (
                _pick_pairs(
                    problem, remaining, {longest, partner}, _pair_time(problem, longest, partner, use_reuse), gpus - 1, use_reuse
                )
                for partner in partners
            )
        best_waste, best_choice = float("inf"), None
        for partner, pairs in zip(partners, all_pairs):
            target = _pair_time(problem, longest, partner, use_reuse)
            sums = [value for value, _ in pairs]
            waste = gpus * max(max(sums, default=0.0), target) - sum(sums) - target
            if waste < best_waste:
                best_waste = waste
                first = tuple(k for k in (longest, partner) if k != ZERO)
                best_choice = [first, *(pair for _, pair in pairs)]
        assert best_choice is not None
        used = {k for group in best_choice for k in group}
        remaining = [k for k in remaining if k == ZERO or k not in used]
        row = list(best_choice) + [()] * (gpus - len(best_choice))
        iterations.append(tuple(row))
    rest = remaining[1:]  # "Record rest group": one per GPU
    if rest:
        iterations.append(tuple((rest[r],) if r < len(rest) else () for r in range(gpus)))
    return tuple(iterations)


class DyGNeXG(Solver):
    """DyGNeX-G, DyGNeX Algorithm 2 as published (reuse-agnostic)."""

    name = "dygnex_g"
    description = "DyGNeX Algorithm 2: zero group, candidate targets, two-pointer pairing, waste W_i"
    use_reuse = False

    def run(self, problem: ScheduleProblem, time_limit: float | None, seed: int, **options: Any) -> SolverResult:
        check_options(self.name, options, ("max_targets",))
        max_targets = options.get("max_targets")
        if max_targets is not None and (int(max_targets) != max_targets or max_targets < 1):
            raise ScheduleError(f"max_targets must be a positive integer, got {max_targets!r}")
        iterations = target_pairing_iterations(problem, self.use_reuse, max_targets)
        return SolverResult(iterations, SolverStatus.HEURISTIC)
