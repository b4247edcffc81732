"""REAL eq. 17: the reuse table of overlapping snapshot windows, from measured or estimated times.

Units here are windows of consecutive snapshots, given as ``(start, stop)`` spans in time order.
When windows ``i`` (earlier) and ``j`` share a rank and an iteration, ``j``'s shared snapshots are
neither transferred nor convolved again: the saving is the share ``s / w`` of ``j``'s reusable
seconds (transfer and first-layer convolutions) for the ``s`` of its ``w`` snapshots that ``i``
covers. Pure Python: the planner builds its problem from this without torch.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from dygsched.planner.base import empty_iteration
from dygsched.planner.plan import Plan, SolverStatus

Span = tuple[int, int]  # (start, stop) of a window of snapshots


def reuse_pairs(spans: Sequence[Span], reusable_seconds: Mapping[int, float]) -> list[tuple[int, int, float]]:
    """``(i, j, R[i][j])`` for every pair of overlapping windows ``i < j`` with a positive saving."""
    pairs = []
    for i, (_, first_stop) in enumerate(spans):
        for j in range(i + 1, len(spans)):
            start, stop = spans[j]
            shared = first_stop - start
            if shared <= 0:
                break
            saving = reusable_seconds.get(j, 0.0) * shared / (stop - start)
            if saving > 0:
                pairs.append((i, j, float(saving)))
    return pairs


def capped_reuse_pairs(
    spans: Sequence[Span], unit_seconds: Sequence[float], reusable_seconds: Mapping[int, float] | None, ratio: float
) -> list[tuple[int, int, float]]:
    """Eq. 17 with each window's reusable seconds measured (``reusable_seconds``) or ``ratio`` times
    its time; a saving is a share of work both windows do, so never more than either's time."""
    reusable = reusable_seconds or {k: ratio * t for k, t in enumerate(unit_seconds)}
    return [(i, j, min(v, unit_seconds[i], unit_seconds[j])) for i, j, v in reuse_pairs(spans, reusable)]


def reusable_from_pairs(
    unit_seconds: Mapping[int, float], pair_seconds: Mapping[tuple[int, int], float], spans: Sequence[Span]
) -> dict[int, float]:
    """Each window's reusable seconds for eq. 17, from timed neighbour pairs.

    A merged pair ``(i, j)`` saves ``t_i + t_j - t_pair``; eq. 17 says that is ``reusable_j * s / w``
    (``s`` shared of ``w`` snapshots), so ``reusable_j = saving * w / s`` (at most ``t_j``). This
    measures what merging really saves (the shared transfers and first-layer convolutions, their
    backward, and the rest of the work running on data already in cache), where timing a window's
    first layer alone sees only the forward convolutions. A window with no timed pair gets the
    median measured share of its time. Empty when no pair was timed.
    """
    shares: dict[int, float] = {}
    for (i, j), seconds in pair_seconds.items():
        shared = spans[i][1] - spans[j][0]
        if shared <= 0 or i not in unit_seconds or j not in unit_seconds or unit_seconds[j] <= 0:
            continue
        saving = max(0.0, unit_seconds[i] + unit_seconds[j] - seconds)
        size = spans[j][1] - spans[j][0]
        shares[j] = min(1.0, saving * size / shared / unit_seconds[j])
    if not shares:
        return {}
    typical = statistics.median(shares.values())
    return {k: shares.get(k, typical) * t for k, t in unit_seconds.items()}


def pair_profiling_plan(num_units: int, world_size: int, offset: int) -> Plan[int]:
    """A profiling epoch that trains neighbour windows ``(k, k + 1)``, ``k = offset, offset + 2, ...``
    merged on one rank (the windows left over alone), ``world_size`` bins per iteration. Epochs with
    offsets 0 and 1 time every neighbour pair once."""
    bins: list[tuple[int, ...]] = [(0,)] if offset % 2 and num_units else []
    for k in range(offset % 2, num_units, 2):
        bins.append((k, k + 1) if k + 1 < num_units else (k,))
    iterations = []
    for i in range(0, len(bins), world_size):
        cells = empty_iteration(world_size)
        for r, cell in enumerate(bins[i : i + world_size]):
            cells[r] = cell
        iterations.append(tuple(cells))
    return Plan(tuple(iterations), world_size, 2, 0.0, 0.0, "profile_pairs", SolverStatus.HEURISTIC, 0.0)
