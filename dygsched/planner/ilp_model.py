"""The REAL-L / DyGNeX-L integer program, independent of the solver backend.

Variables (REAL section 5.2): ``x[k,i,j]`` = group ``k`` runs in iteration ``i`` on GPU ``j``;
``y[k1,k2,i,j]`` = both run there (only for pairs with a positive saving; McCormick envelope,
eq. 13); ``T[i]`` = duration of iteration ``i`` (epigraph, eq. 14). Constraints: each group once
(eq. 11), at most ``L`` groups per GPU per iteration (eq. 12), ``T[i] >= load[i,j] + alpha*u[i]``.

Additions, all valid for every plan and stated here so the model stays honest:

* ``u[i]`` marks a used iteration, so an empty iteration of the horizon pays no all-reduce
  (eq. 14 as printed charges ``alpha`` for every iteration of the horizon);
* symmetry breaking: iterations sorted by duration, GPUs within an iteration by load;
* ``sum T >= lower_bound(problem)`` and ``sum u >= ceil(n / (L G))``, the project's bound, which
  lets the solver stop as soon as its incumbent is within the gap of that bound.

The horizon (number of iterations in the model) is ``ceil(n / G)`` as in DyGNeX appendix C
(eq. 11) with ``horizon="full"``; by default it is the warm start's iteration count plus one,
which keeps the model small; the solver's proven bound is reported only for the full horizon.
The CP-SAT backend states the same program over load-ordered bins (see ``ilp_cpsat.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from dygsched.planner.bounds import lower_bound, min_iterations
from dygsched.planner.plan import Iterations
from dygsched.planner.problem import ScheduleProblem


@dataclass(frozen=True)
class IlpModel:
    problem: ScheduleProblem
    horizon: int
    full_horizon: bool
    pairs: tuple[tuple[int, int, float], ...]  # (k1 < k2, saving > 0) used by the model
    bound: float  # the project's lower bound, added as a cut

    @classmethod
    def build(cls, problem: ScheduleProblem, horizon: int, use_reuse: bool) -> IlpModel:
        full = math.ceil(problem.num_groups / problem.num_gpus)
        horizon = max(min(horizon, full), min_iterations(problem))
        pairs: list[tuple[int, int, float]] = []
        if use_reuse and problem.capacity >= 2:
            for k1 in range(problem.num_groups):
                for k2, value in sorted(problem.partners(k1).items()):
                    if k1 < k2 and value > 0:
                        pairs.append((k1, k2, value))
        if use_reuse:
            bound = lower_bound(problem)
        else:
            bound = lower_bound(ScheduleProblem(problem.group_times, problem.num_gpus, problem.capacity, problem.allreduce_cost))
        return cls(problem, horizon, horizon >= full, tuple(pairs), bound)

    def load(self, groups: tuple[int, ...]) -> float:
        """A GPU's load as the model sees it (without reuse for DyGNeX-L)."""
        total = sum(self.problem.group_times[k] for k in groups)
        if self.pairs:
            members = set(groups)
            total -= sum(v for k1, k2, v in self.pairs if k1 in members and k2 in members)
        return total

    def hint(
        self, iterations: Iterations, key: Callable[[tuple[int, ...]], float] | None = None
    ) -> dict[tuple[int, int, int], int]:
        """Map a plan onto model indices consistent with the symmetry breaking: ``{(k, i, j): 1}``."""
        key = key or self.load
        rows = []
        for iteration in iterations:
            bins = sorted((tuple(b) for b in iteration), key=lambda b: -key(b))
            rows.append((max(key(b) for b in bins), bins))
        rows.sort(key=lambda r: -r[0])
        if len(rows) > self.horizon:
            return {}
        return {(k, i, j): 1 for i, (_, bins) in enumerate(rows) for j, b in enumerate(bins) for k in b}

    def decode(self, chosen: list[tuple[int, int, int]]) -> Iterations:
        gpus = self.problem.num_gpus
        grid: list[list[list[int]]] = [[[] for _ in range(gpus)] for _ in range(self.horizon)]
        for k, i, j in chosen:
            grid[i][j].append(k)
        return tuple(tuple(tuple(sorted(b)) for b in row) for row in grid if any(row))
