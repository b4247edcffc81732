"""OR-Tools CP-SAT backend for the ILP (the default): REAL-L over load-ordered bins.

The program is REAL-L (the same plans, objective and reuse), written over *bins* instead of
(iteration, GPU) cells, which removes the symmetry of eqs. 11-14 without cutting off any optimum:

* ``x[k,b]`` = group ``k`` runs in bin ``b``, ``b = 0..H G - 1``; bin ``b`` is GPU ``b mod G`` of
  iteration ``b // G``; at most ``L`` groups per bin (eq. 12), each group in one bin (eq. 11);
* ``load[b] = sum_k t_k x[k,b] - sum R[k1][k2] y[k1,k2,b]`` with ``y <= x[k1,b]``, ``y <= x[k2,b]``
  (the upper half of the McCormick envelope, eq. 13: a smaller ``y`` only over-states a load, so
  the lower half is implied at the optimum and every model solution maps to a plan no worse);
* ``load[b] >= load[b+1]``: bins are sorted by load, so iteration ``r``'s slowest GPU is bin
  ``r G`` and its duration is ``load[r G] + alpha u[r]`` (the epigraph of eq. 14 becomes an
  equality). Any plan can be re-cut this way at no extra cost (sort its bins, cut into runs of
  ``G``), so the ordering is symmetry breaking, not a restriction;
* ``u[r]`` marks a used iteration (non-increasing), ``sum u >= ceil(n / (L G))``, and the objective
  is at least the project's lower bound (``bounds.lower_bound``), so CP-SAT can stop as soon as its
  incumbent is within the relative gap of that bound.

Times are scaled to integers (the largest group time maps to ``_RESOLUTION`` units); the bound
cut and the reported bound allow for the rounding. When the model would need more than
``MAX_REUSE_VARIABLES`` ``y`` variables, only the reuse pairs of the warm start are modelled: the
plan is still exact (loads are recomputed) but the solver's bound is not reported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dygsched.planner.bounds import min_iterations
from dygsched.planner.ilp_backend import BackendResult, IlpBackend
from dygsched.planner.ilp_model import IlpModel
from dygsched.planner.plan import Iterations, iterations_from_bins
from dygsched.planner.problem import ScheduleProblem

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

_RESOLUTION = 1_000_000  # the largest group time maps to this many integer units
MAX_REUSE_VARIABLES = 60_000


class CpSatBackend(IlpBackend):
    name = "cpsat"
    package = "ortools"

    @classmethod
    def available(cls) -> bool:
        try:
            from ortools.sat.python import cp_model  # noqa: F401
        except ImportError:
            return False
        return True

    def solve(
        self, model: IlpModel, warm: Iterations | None, time_limit: float, gap: float, seed: int, workers: int
    ) -> BackendResult:
        import time

        from ortools.sat.python import cp_model

        entered = time.perf_counter()
        p = model.problem
        n, gpus, cap, horizon = p.num_groups, p.num_gpus, p.capacity, model.horizon
        bins = horizon * gpus
        scale = _RESOLUTION / max(max(p.group_times), p.allreduce_cost, 1e-12)
        t = [round(v * scale) for v in p.group_times]
        alpha = round(p.allreduce_cost * scale)
        pairs = [(k1, k2, round(v * scale)) for k1, k2, v in model.pairs]
        exact_reuse = True
        if len(pairs) * bins > MAX_REUSE_VARIABLES:
            kept = {tuple(sorted(b)) for it in (warm or ()) for b in it if len(b) == 2}
            pairs = [e for e in pairs if (e[0], e[1]) in kept]
            exact_reuse = False
        top = cap * max(t) if t else 0
        m = cp_model.CpModel()
        x = [[m.new_bool_var(f"x{k}_{b}") for b in range(bins)] for k in range(n)]
        for k in range(n):
            m.add_exactly_one(x[k])
        by_bin_pairs: list[tuple[int, int, int]] = pairs
        y: dict[tuple[int, int], cp_model.IntVar] = {}
        load = []
        for b in range(bins):
            column = [x[k][b] for k in range(n)]
            m.add(cp_model.LinearExpr.sum(column) <= cap)
            terms, weights = column, t
            if by_bin_pairs:
                ys = []
                for k1, k2, _ in by_bin_pairs:
                    v = m.new_bool_var(f"y{k1}_{k2}_{b}")
                    m.add_implication(v, x[k1][b])
                    m.add_implication(v, x[k2][b])
                    y[k1 * n + k2, b] = v
                    ys.append(v)
                terms = column + ys
                weights = t + [-r for _, _, r in by_bin_pairs]
            lv = m.new_int_var(0, top, f"load{b}")
            m.add(lv == cp_model.LinearExpr.weighted_sum(terms, weights))
            load.append(lv)
        for b in range(bins - 1):
            m.add(load[b] >= load[b + 1])
        u = [m.new_bool_var(f"u{r}") for r in range(horizon)]
        for r in range(horizon):
            chunk = [x[k][b] for k in range(n) for b in range(r * gpus, (r + 1) * gpus)]
            m.add(cp_model.LinearExpr.sum(chunk) <= cap * gpus * u[r])
            if r + 1 < horizon:
                m.add(u[r] >= u[r + 1])
        m.add(cp_model.LinearExpr.sum(u) >= min_iterations(p))
        objective = cp_model.LinearExpr.sum([load[r * gpus] for r in range(horizon)]) + alpha * cp_model.LinearExpr.sum(u)
        slack = n + len(pairs) + horizon  # rounding: each scaled value is off by at most half a unit
        m.add(objective >= int(model.bound * scale) - slack)
        m.minimize(objective)
        if warm:
            self._hint(m, warm, x, y, load, u, t, by_bin_pairs, n, gpus, bins)
        solver = cp_model.CpSolver()
        # the limit covers this model's build and hints too
        solver.parameters.max_time_in_seconds = max(0.05, float(time_limit) - (time.perf_counter() - entered))
        solver.parameters.relative_gap_limit = float(gap)
        solver.parameters.num_workers = int(workers)
        solver.parameters.random_seed = int(seed)
        status = solver.solve(m)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return BackendResult(None, False, None, solver.status_name(status))
        contents: list[list[int]] = [[] for _ in range(bins)]
        for k in range(n):  # one read per group: the index of its bin
            contents[int(solver.value(cp_model.LinearExpr.weighted_sum(x[k], range(bins))))].append(k)
        value = solver.objective_value
        best = solver.best_objective_bound
        converged = status == cp_model.OPTIMAL or value - best <= gap * abs(value) + 1e-9
        bound = (best - slack) / scale if exact_reuse else None
        return BackendResult(_cut(p, contents), converged and exact_reuse, bound, solver.status_name(status))

    @staticmethod
    def _hint(
        m: cp_model.CpModel,
        warm: Iterations,
        x: list[list[cp_model.IntVar]],
        y: dict[tuple[int, int], cp_model.IntVar],
        load: list[cp_model.IntVar],
        u: list[cp_model.IntVar],
        t: list[int],
        pairs: list[tuple[int, int, int]],
        n: int,
        gpus: int,
        bins: int,
    ) -> None:
        saving = {(k1, k2): r for k1, k2, r in pairs}

        def scaled(groups: tuple[int, ...]) -> int:
            g = sorted(groups)
            return sum(t[k] for k in g) - sum(saving.get((a, c), 0) for i, a in enumerate(g) for c in g[i + 1 :])

        contents = sorted((tuple(b) for it in warm for b in it if b), key=lambda b: -scaled(b))
        if len(contents) > bins:
            return
        contents += [()] * (bins - len(contents))
        for b, groups in enumerate(contents):
            members = set(groups)
            for k in range(n):
                m.add_hint(x[k][b], 1 if k in members else 0)
            m.add_hint(load[b], scaled(groups))
            for k1, k2, _ in pairs:
                m.add_hint(y[k1 * n + k2, b], 1 if k1 in members and k2 in members else 0)
        for r in range(len(u)):
            m.add_hint(u[r], 1 if any(contents[r * gpus : (r + 1) * gpus]) else 0)


def _cut(problem: ScheduleProblem, contents: list[list[int]]) -> Iterations:
    """Bins sorted by their true load (heaviest first), cut into iterations of ``G`` ranks."""
    used = sorted((tuple(sorted(b)) for b in contents if b), key=lambda b: -problem.load(b))
    return iterations_from_bins(used, problem.num_gpus)
