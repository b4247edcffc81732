"""Lower bounds on the epoch time of a scheduling problem.

Every plan trains all groups, so the epoch time is at least the sum over iterations of the
slowest GPU, plus one all-reduce per iteration. Two valid bounds on the sum of the slowest
loads are combined (the larger one wins):

* work bound: the total work (net of the largest saving reuse could possibly bring) spread
  evenly over the ``G`` GPUs;
* ranking bound (no reuse): with groups sorted by time, the ``r*L*G + 1``-th longest group cannot
  share an iteration with ``r*L*G`` longer ones in fewer than ``r + 1`` iterations, so the
  ``(r+1)``-th slowest iteration lasts at least that long.

and every plan needs at least ``ceil(n / (L*G))`` iterations, each paying ``alpha``.
"""

from __future__ import annotations

import heapq
import math

from dygsched.sched.problem import ScheduleProblem


def min_iterations(problem: ScheduleProblem) -> int:
    """The fewest iterations any plan needs: every GPU holds at most ``capacity`` groups per iteration."""
    return math.ceil(problem.num_groups / (problem.num_gpus * problem.capacity))


def max_total_saving(problem: ScheduleProblem) -> float:
    """An upper bound on the total reuse saving any plan can collect.

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


def work_bound(problem: ScheduleProblem) -> float:
    return max(0.0, sum(problem.group_times) - max_total_saving(problem)) / problem.num_gpus


def ranking_bound(problem: ScheduleProblem) -> float:
    if problem.has_reuse:
        return 0.0
    ordered = sorted(problem.group_times, reverse=True)
    return sum(ordered[:: problem.capacity * problem.num_gpus])


def lower_bound(problem: ScheduleProblem) -> float:
    """A valid lower bound on the predicted epoch time of every plan for ``problem``."""
    return max(work_bound(problem), ranking_bound(problem)) + min_iterations(problem) * problem.allreduce_cost
