"""OR-Tools CP-SAT backend for the ILP (the default). Times are scaled to integers."""

from __future__ import annotations

from dygsched.sched.ilp_backend import BackendResult, IlpBackend
from dygsched.sched.ilp_model import IlpModel
from dygsched.sched.plan import Iterations

_RESOLUTION = 1_000_000  # the largest group time maps to this many integer units


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

    def solve(self, model: IlpModel, warm: Iterations | None, time_limit: float, gap: float, seed: int, workers: int) -> BackendResult:
        from ortools.sat.python import cp_model

        p = model.problem
        n, gpus, cap, horizon = p.num_groups, p.num_gpus, p.capacity, model.horizon
        scale = _RESOLUTION / max(max(p.group_times), p.allreduce_cost, 1e-12)
        t = [round(v * scale) for v in p.group_times]
        alpha = round(p.allreduce_cost * scale)
        pairs = [(k1, k2, round(v * scale)) for k1, k2, v in model.pairs]
        m = cp_model.CpModel()
        x = {(k, i, j): m.new_bool_var(f"x{k}_{i}_{j}") for k in range(n) for i in range(horizon) for j in range(gpus)}
        u = [m.new_bool_var(f"u{i}") for i in range(horizon)]
        top = sum(t) + alpha
        T = [m.new_int_var(0, top, f"T{i}") for i in range(horizon)]
        for k in range(n):
            m.add_exactly_one(x[k, i, j] for i in range(horizon) for j in range(gpus))
        loads = {}
        for i in range(horizon):
            for j in range(gpus):
                m.add(sum(x[k, i, j] for k in range(n)) <= cap * u[i])
                expr = sum(t[k] * x[k, i, j] for k in range(n))
                for k1, k2, r in pairs:
                    y = m.new_bool_var(f"y{k1}_{k2}_{i}_{j}")
                    m.add_implication(y, x[k1, i, j])
                    m.add_implication(y, x[k2, i, j])
                    m.add_bool_or([x[k1, i, j].Not(), x[k2, i, j].Not(), y])
                    expr -= r * y
                loads[i, j] = expr
                m.add(T[i] >= expr + alpha * u[i])
            for j in range(gpus - 1):
                m.add(loads[i, j] >= loads[i, j + 1])
        for i in range(horizon - 1):
            m.add(u[i] >= u[i + 1])
            m.add(T[i] >= T[i + 1])
        from dygsched.sched.bounds import min_iterations

        m.add(sum(u) >= min_iterations(p))
        slack = n + len(pairs) + horizon  # rounding: each scaled value is off by at most half a unit
        m.add(sum(T) >= int(model.bound * scale) - slack)
        m.minimize(sum(T))
        if warm:
            hint = model.hint(warm, key=lambda b: sum(t[k] for k in b) - sum(r for k1, k2, r in pairs if k1 in b and k2 in b))
            used = {i for (_, i, _) in hint}
            for key, var in x.items():
                m.add_hint(var, hint.get(key, 0))
            for i in range(horizon):
                m.add_hint(u[i], 1 if i in used else 0)
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = float(time_limit)
        solver.parameters.relative_gap_limit = float(gap)
        solver.parameters.num_workers = int(workers)
        solver.parameters.random_seed = int(seed)
        status = solver.solve(m)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return BackendResult(None, False, None, solver.status_name(status))
        chosen = [key for key, var in x.items() if solver.boolean_value(var)]
        bound = (solver.best_objective_bound - slack) / scale
        objective = solver.objective_value
        converged = status == cp_model.OPTIMAL or objective - solver.best_objective_bound <= gap * abs(objective) + 1e-9
        return BackendResult(model.decode(chosen), converged, bound, solver.status_name(status))
