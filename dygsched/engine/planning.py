"""Rank 0's planning step: estimate each training group's time, build the problem, solve it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dygsched.data.groups import SnapshotGroup
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.sched import ScheduleProblem, solve
from dygsched.sched.cost_model import CostModel, group_times_from_sizes
from dygsched.sched.plan import Plan


def make_plan(sched_cfg: Mapping[str, Any], graph: TemporalGraph, train_groups: tuple[SnapshotGroup, ...], world_size: int) -> Plan:
    sizes = [group.work(graph) for group in train_groups]
    coefficients = sched_cfg.get("cost_model") or CostModel()
    times = group_times_from_sizes([n for n, _ in sizes], [e for _, e in sizes], coefficients)
    problem = ScheduleProblem(
        group_times=tuple(times),
        num_gpus=world_size,
        capacity=int(sched_cfg["capacity"]),
        allreduce_cost=float(sched_cfg.get("allreduce_cost", 0.0)),
    )
    options = dict(sched_cfg.get("options") or {})
    plan = solve(problem, algo=str(sched_cfg["algo"]), time_limit=sched_cfg.get("time_limit"), **options)
    plan.validate(problem)
    return plan
