"""A strategy's planning step: its settings (``PlannerConfig``, the ``planner:`` block of a
``conf/sched/*.yaml``) and ``plan_units``, which builds the ``ScheduleProblem`` for a list of unit
times and solves it. Pure Python: units are opaque here, known by index and time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, cast

from dygsched.errors import ScheduleError
from dygsched.planner.cost_model import CostModel, group_times_from_sizes
from dygsched.planner.plan import Plan, U
from dygsched.planner.problem import ScheduleProblem
from dygsched.planner.solve import get_solver, solve
from dygsched.typed_config import Typed


@dataclass(frozen=True)
class PlannerConfig(Typed):
    """How a strategy plans its units onto ranks and iterations.

    ``solver``: a registered solver's name (``dygsched plan --help`` lists them) or
    ``package.module:Class``. ``capacity``: units per rank per iteration (``L``). ``time_limit``:
    seconds for the ILP solvers (``None``: the solver's default). ``options``: passed to the solver.
    ``allreduce_cost``: ``alpha`` before it is measured. ``cost_model``: ``{a1, a2, a3, reuse_ratio}``
    to price units before they are timed (``None``: the defaults). ``plan_file``: a plan written by
    ``dygsched plan --out`` to train with instead of solving. ``reuse_table``: plan with REAL's
    eq. 17 table (the strategy supplies each unit's span and reusable seconds).
    """

    key: ClassVar[str] = "sched.planner"

    solver: str = "psg"  # a registered solver (dygsched plan --help lists them) or package.module:Class
    capacity: int = 1  # groups per rank per iteration (L)
    time_limit: float | None = None  # seconds for the ILP solvers (null: the solver's default)
    options: Mapping[str, Any] = field(default_factory=dict)  # passed to the solver, e.g. {backend: highs} for the ILP
    allreduce_cost: float = 0.0  # alpha before it is measured (profiling measures it)
    cost_model: Mapping[str, float] | None = None  # {a1, a2, a3, reuse_ratio}: t = a1*nodes + a2*edges + a3; null = defaults
    plan_file: str | None = None  # a plan from `dygsched plan --out` to train with instead of solving
    reuse_table: bool = False  # plan with REAL's reuse table (eq. 17)

    def __post_init__(self) -> None:
        if isinstance(self.capacity, bool) or not isinstance(self.capacity, int) or self.capacity < 1:
            raise ScheduleError(
                f"sched.planner.capacity (units per rank per iteration) must be a positive integer, got {self.capacity!r}"
            )
        if self.time_limit is not None and not (isinstance(self.time_limit, (int, float)) and self.time_limit > 0):
            raise ScheduleError(f"sched.planner.time_limit must be positive seconds (or null), got {self.time_limit!r}")
        if not isinstance(self.allreduce_cost, (int, float)) or not math.isfinite(self.allreduce_cost) or self.allreduce_cost < 0:
            raise ScheduleError(f"sched.planner.allreduce_cost must be non-negative seconds, got {self.allreduce_cost!r}")
        object.__setattr__(self, "options", dict(self.options or {}))
        super().__post_init__()
        CostModel.from_mapping(self.cost_model or {})  # unknown or negative coefficients: one line now
        get_solver(self.solver)  # an unknown solver: one line now

    @property
    def costs(self) -> CostModel:
        return CostModel.from_mapping(self.cost_model or {})

    def for_profiling(self) -> PlannerConfig:
        """The plan profiling epochs train with: PSG, one unit per rank per iteration (REAL 3.3)."""
        return replace(self, solver="psg", capacity=1, options={}, plan_file=None)

    def check(self, world_size: int) -> None:
        """Plan a small stand-in problem (two units per rank, on at most two ranks), so an unknown
        option or backend fails before any rank starts rather than on rank 0 after the profiling
        epochs. Not on ``world_size`` ranks: an ILP of 2,048 units on 1,024 ranks took 57 s and
        4 GB, for a check."""
        if self.plan_file:
            return
        ranks = min(world_size, 2)
        plan_units(self, (1.0,) * (2 * ranks), ranks)


def unit_times_from_sizes(config: PlannerConfig, sizes: Sequence[tuple[int, int]]) -> list[float]:
    """Each unit's time from its (nodes, edges) with the configured cost model."""
    return group_times_from_sizes([n for n, _ in sizes], [e for _, e in sizes], config.costs)


def plan_units(
    config: PlannerConfig,
    unit_times: Sequence[float],
    world_size: int,
    allreduce_cost: float | None = None,
    reuse_pairs: Sequence[tuple[int, int, float]] | None = None,
) -> Plan[int]:
    """Solve the problem of ``unit_times`` on ``world_size`` ranks (units by index); validated.

    ``allreduce_cost``: measured ``alpha`` (default the config's). ``reuse_pairs``: the sparse
    reuse table ``(i, j, saving)``, used when ``config.reuse_table`` is on.
    """
    problem = ScheduleProblem(
        group_times=tuple(unit_times),
        num_gpus=world_size,
        capacity=config.capacity,
        allreduce_cost=config.allreduce_cost if allreduce_cost is None else allreduce_cost,
        reuse_pairs=tuple(reuse_pairs) if config.reuse_table and reuse_pairs else None,
    )
    plan = solve(problem, algo=config.solver, time_limit=config.time_limit, **dict(config.options))
    plan.validate(problem)
    return plan


def load_plan_file(path: str | Path, units: Sequence[U], world_size: int, capacity: int) -> Plan[U]:
    """A plan written by ``dygsched plan --out``, checked against this run's units and ranks."""
    plan = Plan.load(Path(path))
    if plan.num_gpus != world_size:
        raise ScheduleError(f"the plan in {path} is for {plan.num_gpus} ranks, this run has world_size={world_size}")
    trained = plan.units()
    if len(trained) != len(units) or set(trained) != set(units):
        raise ScheduleError(f"the plan in {path} does not train each of this run's {len(units)} training units exactly once")
    if max((len(cell) for iteration in plan.iterations for cell in iteration), default=0) > capacity:
        raise ScheduleError(f"the plan in {path} gives a rank more than sched.planner.capacity={capacity} units in one iteration")
    return cast("Plan[U]", plan)  # its units are exactly ``units`` (checked above)
