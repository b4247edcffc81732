"""Local search on a plan: move or swap groups out of each iteration's slowest GPU.

The objective is the predicted epoch time, ``sum_i max_j load_ij`` (+ alpha per iteration). For
the slowest bin of every iteration, every move of one of its groups to a bin with room, and every
swap with a group of any other bin (same or other iteration), is scored exactly (reuse included);
the best improving one is applied. Passes repeat until none improves or ``max_evaluations``
candidate moves have been scored (a deterministic budget, so the result does not depend on the
machine's speed).
"""

from __future__ import annotations

from dygsched.sched.plan import Iterations
from dygsched.sched.problem import ScheduleProblem


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
                best = (-1e-12, None)
                for a_pos, a in enumerate(bins[i][c]):
                    without_a = bins[i][c][:a_pos] + bins[i][c][a_pos + 1 :]
                    for i2, row in enumerate(bins):
                        for d, content in enumerate(row):
                            if i2 == i and d == c:
                                continue
                            options = [(None, content + [a], without_a)] if len(content) < cap else []
                            options += [(b, content[:b_pos] + content[b_pos + 1 :] + [a], without_a + [b])
                                        for b_pos, b in enumerate(content)]
                            for b, new_d, new_c in options:
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
