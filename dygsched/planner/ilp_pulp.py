"""PuLP backend for the ILP, with CBC (bundled with PuLP up to 3.x) or HiGHS (``highspy``)."""

from __future__ import annotations

from typing import Any

from dygsched.planner.bounds import min_iterations
from dygsched.planner.ilp_backend import BackendResult, IlpBackend
from dygsched.planner.ilp_model import IlpModel
from dygsched.planner.plan import Iterations


class PulpBackend(IlpBackend):
    """Builds the model with PuLP; ``engine`` is PuLP's solver name."""

    name = "pulp"
    package = "pulp"
    engine = ""

    @classmethod
    def available(cls) -> bool:
        try:
            import pulp
        except ImportError:
            return False
        try:
            return cls.engine in pulp.listSolvers(onlyAvailable=True)
        except Exception:  # a broken solver install counts as unavailable
            return False

    def _solver(self, time_limit: float, gap: float, workers: int, warm: bool) -> Any:  # a pulp solver (untyped)
        import pulp

        return pulp.getSolver(
            self.engine, msg=False, timeLimit=float(time_limit), gapRel=float(gap), threads=int(workers), warmStart=warm
        )

    def solve(
        self, model: IlpModel, warm: Iterations | None, time_limit: float, gap: float, seed: int, workers: int
    ) -> BackendResult:
        import pulp

        p = model.problem
        n, gpus, cap, horizon = p.num_groups, p.num_gpus, p.capacity, model.horizon
        prob = pulp.LpProblem("real_l", pulp.LpMinimize)
        x = {
            (k, i, j): pulp.LpVariable(f"x_{k}_{i}_{j}", cat=pulp.LpBinary)
            for k in range(n)
            for i in range(horizon)
            for j in range(gpus)
        }
        u = [pulp.LpVariable(f"u_{i}", cat=pulp.LpBinary) for i in range(horizon)]
        T = [pulp.LpVariable(f"T_{i}", lowBound=0) for i in range(horizon)]
        prob += pulp.lpSum(T)
        for k in range(n):
            prob += pulp.lpSum(x[k, i, j] for i in range(horizon) for j in range(gpus)) == 1
        for i in range(horizon):
            loads = []
            for j in range(gpus):
                prob += pulp.lpSum(x[k, i, j] for k in range(n)) <= cap * u[i]
                terms = [p.group_times[k] * x[k, i, j] for k in range(n)]
                for k1, k2, r in model.pairs:
                    y = pulp.LpVariable(f"y_{k1}_{k2}_{i}_{j}", cat=pulp.LpBinary)
                    prob += y <= x[k1, i, j]
                    prob += y <= x[k2, i, j]
                    prob += y >= x[k1, i, j] + x[k2, i, j] - 1
                    terms.append(-r * y)
                load = pulp.lpSum(terms)
                loads.append(load)
                prob += T[i] >= load + p.allreduce_cost * u[i]
            for j in range(gpus - 1):
                prob += loads[j] >= loads[j + 1]
        for i in range(horizon - 1):
            prob += u[i] >= u[i + 1]
            prob += T[i] >= T[i + 1]
        prob += pulp.lpSum(u) >= min_iterations(p)
        prob += pulp.lpSum(T) >= model.bound * (1 - 1e-9)
        if warm:
            hint = model.hint(warm)
            used = {i for (_, i, _) in hint}
            for key, var in x.items():
                var.setInitialValue(hint.get(key, 0))
            for i in range(horizon):
                u[i].setInitialValue(1 if i in used else 0)
        status = prob.solve(self._solver(time_limit, gap, workers, bool(warm)))
        if prob.sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
            return BackendResult(None, False, None, pulp.LpStatus.get(status, str(status)))
        chosen = [key for key, var in x.items() if (var.value() or 0) > 0.5]
        converged = prob.sol_status == pulp.LpSolutionOptimal
        objective = pulp.value(prob.objective)
        bound = objective * (1 - gap) if converged and objective is not None else None
        return BackendResult(model.decode(chosen), converged, bound, pulp.LpStatus.get(status, str(status)))


class CbcBackend(PulpBackend):
    name = "cbc"
    package = "pulp (with its bundled CBC)"
    engine = "PULP_CBC_CMD"


class HighsBackend(PulpBackend):
    name = "highs"
    package = "highspy"
    engine = "HiGHS"
