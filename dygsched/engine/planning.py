"""Rank 0's planning step: estimate each training group's time, build the problem, solve it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dygsched.data.groups import SnapshotGroup
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.errors import ConfigError
from dygsched.sched import ScheduleProblem, solve
from dygsched.sched.cost_model import CostModel, group_times_from_sizes
from dygsched.sched.plan import Plan


def make_plan(
    sched_cfg: Mapping[str, Any],
    graph: TemporalGraph,
    train_groups: tuple[SnapshotGroup, ...],
    world_size: int,
    measured_times: Sequence[float] | None = None,
    measured_allreduce: float | None = None,
) -> Plan:
    """Plan the training groups: from measured times after profiling, else from the cost model."""
    if measured_times is None:
        sizes = [group.work(graph) for group in train_groups]
        coefficients = sched_cfg.get("cost_model") or CostModel()
        measured_times = group_times_from_sizes([n for n, _ in sizes], [e for _, e in sizes], coefficients)
    allreduce = measured_allreduce if measured_allreduce is not None else float(sched_cfg.get("allreduce_cost", 0.0))
    problem = ScheduleProblem(
        group_times=tuple(measured_times), num_gpus=world_size, capacity=int(sched_cfg["capacity"]), allreduce_cost=allreduce
    )
    options = dict(sched_cfg.get("options") or {})
    plan = solve(problem, algo=str(sched_cfg["algo"]), time_limit=sched_cfg.get("time_limit"), **options)
    plan.validate(problem)
    return plan


def profiling_config(sched_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The plan the profiling epochs train with: PSG, one group per rank per iteration (REAL 3.3)."""
    return {**sched_cfg, "algo": "psg", "capacity": 1, "options": {}}


def lr_factor(sched_cfg: Mapping[str, Any]) -> float:
    """Learning-rate multiplier for a plan that trains up to ``capacity`` groups per rank per step."""
    scaling = str(sched_cfg.get("lr_scaling", "none"))
    capacity = int(sched_cfg["capacity"])
    factors = {"none": 1.0, "linear": float(capacity), "sqrt": float(capacity) ** 0.5}
    if scaling not in factors:
        raise ConfigError(f"unknown sched.lr_scaling '{scaling}' (choose from {', '.join(factors)})")
    return factors[scaling]
