"""Rank 0's planning step: estimate each training group's time, build the problem, solve it."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dygsched.data.groups import SnapshotGroup
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.errors import ConfigError
from dygsched.sched import ScheduleProblem, solve
from dygsched.sched.cost_model import CostModel, group_times_from_sizes
from dygsched.sched.plan import Plan, SolverStatus


def make_plan(
    sched_cfg: Mapping[str, Any],
    graph: TemporalGraph,
    train_groups: tuple[SnapshotGroup, ...],
    world_size: int,
    measured_times: Sequence[float] | None = None,
    measured_allreduce: float | None = None,
    measured_reusable: Mapping[int, float] | None = None,
) -> Plan:
    """Plan the training groups: a given plan file, or solve on measured times (after profiling) or cost-model times.

    With ``sched.plan_reuse`` on (REAL's schedulers), the problem carries REAL's reuse table
    (eq. 17): each group's reusable seconds are measured while profiling when the reuse engine ran,
    else ``RATIO`` (``cost_model.reuse_ratio``) times its time. The table depends on the strategy,
    not on ``sched.reuse``: turning the engine off leaves a given profile's plan as it is.
    """
    if sched_cfg.get("plan_file"):
        return load_plan_file(str(sched_cfg["plan_file"]), len(train_groups), world_size, int(sched_cfg["capacity"]))
    cost_model = CostModel.from_mapping(sched_cfg.get("cost_model") or {})
    if measured_times is None:
        sizes = [group.work(graph) for group in train_groups]
        measured_times = group_times_from_sizes([n for n, _ in sizes], [e for _, e in sizes], cost_model)
    allreduce = measured_allreduce if measured_allreduce is not None else float(sched_cfg.get("allreduce_cost", 0.0))
    pairs = None
    if sched_cfg.get("plan_reuse"):
        reusable = measured_reusable or {k: cost_model.reuse_ratio * t for k, t in enumerate(measured_times)}
        # a saving is a share of work both groups do (REAL eq. 17), never more than either's time
        pairs = [(i, j, min(v, measured_times[i], measured_times[j])) for i, j, v in reuse_pairs(train_groups, reusable)]
    problem = ScheduleProblem(
        group_times=tuple(measured_times),
        num_gpus=world_size,
        capacity=int(sched_cfg["capacity"]),
        allreduce_cost=allreduce,
        reuse_pairs=tuple(pairs) if pairs else None,
    )
    options = dict(sched_cfg.get("options") or {})
    plan = solve(problem, algo=str(sched_cfg["algo"]), time_limit=sched_cfg.get("time_limit"), **options)
    plan.validate(problem)
    return plan


def reuse_pairs(train_groups: Sequence[SnapshotGroup], reusable_seconds: Mapping[int, float]) -> list[tuple[int, int, float]]:
    """REAL eq. 17 with measured times: ``R[i][j]`` for groups whose windows overlap.

    When groups ``i`` (earlier) and ``j`` share a rank and an iteration, ``j``'s shared snapshots
    are neither transferred nor convolved again: the saving is the share ``s / w`` of ``j``'s
    reusable seconds (transfer + first-layer convolutions, measured while profiling), for the ``s``
    of its ``w`` snapshots that ``i`` covers.
    """
    pairs = []
    for i, first in enumerate(train_groups):
        for j in range(i + 1, len(train_groups)):
            second = train_groups[j]
            shared = first.stop - second.start
            if shared <= 0:
                break
            saving = reusable_seconds.get(j, 0.0) * shared / second.size
            if saving > 0:
                pairs.append((i, j, float(saving)))
    return pairs


def profiles_pairs(sched_cfg: Mapping[str, Any]) -> bool:
    """Whether profiling also times merged neighbour pairs (type II reuse), to measure REAL eq. 17's table.

    Opt-in (``sched.profile_pairs``), for a plan that uses the reuse table with an engine that
    merges overlapping groups; it takes every other profiling epoch, so at least two are needed
    (with four, every pair is timed once). A pair's saving is the difference of two measured
    times, so it is only as good as the machine is quiet (see the README's measurements).
    """
    return (
        bool(sched_cfg.get("profile_pairs"))
        and bool(sched_cfg.get("plan_reuse"))
        and bool(sched_cfg.get("reuse"))
        and bool(sched_cfg.get("reuse_group", True))
        and int(sched_cfg.get("capacity", 1)) >= 2
        and int(sched_cfg.get("profile_epochs", 0) or 0) >= 2
    )


def pair_profiling_plan(num_groups: int, world_size: int, offset: int) -> Plan:
    """A profiling epoch that trains neighbour groups ``(k, k + 1)``, ``k = offset, offset + 2, ...``
    merged on one rank (the groups left over alone), ``world_size`` bins per iteration. Epochs with
    offsets 0 and 1 time every neighbour pair once."""
    bins: list[tuple[int, ...]] = [(0,)] if offset % 2 and num_groups else []
    for k in range(offset % 2, num_groups, 2):
        bins.append((k, k + 1) if k + 1 < num_groups else (k,))
    iterations = tuple(
        tuple(bins[i + r] if i + r < len(bins) else () for r in range(world_size)) for i in range(0, len(bins), world_size)
    )
    return Plan(iterations, world_size, 2, 0.0, 0.0, "profile_pairs", SolverStatus.HEURISTIC, 0.0)


def reusable_from_pairs(
    group_seconds: Mapping[int, float], pair_seconds: Mapping[tuple[int, int], float], train_groups: Sequence[SnapshotGroup]
) -> dict[int, float]:
    """Each group's reusable seconds for REAL eq. 17, from timed neighbour pairs.

    A merged pair ``(i, j)`` saves ``t_i + t_j - t_pair``; eq. 17 says that is ``reusable_j * s / w``
    (``s`` shared of ``w`` snapshots), so ``reusable_j = saving * w / s`` (at most ``t_j``). This
    measures what merging really saves (the shared transfers and first-layer convolutions, their
    backward, and the rest of the work running on data already in cache), where timing a group's
    first layer alone sees only the forward convolutions. A group with no timed pair gets the
    median measured share of its time. Empty when no pair was timed.
    """
    shares: dict[int, float] = {}
    for (i, j), seconds in pair_seconds.items():
        shared = train_groups[i].stop - train_groups[j].start
        if shared <= 0 or i not in group_seconds or j not in group_seconds or group_seconds[j] <= 0:
            continue
        saving = max(0.0, group_seconds[i] + group_seconds[j] - seconds)
        shares[j] = min(1.0, saving * train_groups[j].size / shared / group_seconds[j])
    if not shares:
        return {}
    typical = statistics.median(shares.values())
    return {k: shares.get(k, typical) * t for k, t in group_seconds.items()}


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


def load_plan_file(path: str, num_groups: int, world_size: int, capacity: int) -> Plan:
    """A plan written by ``dygsched plan --out``, checked against this run's groups and ranks."""
    plan = Plan.load(Path(path))
    if plan.num_gpus != world_size:
        raise ConfigError(f"the plan in {path} is for {plan.num_gpus} ranks, this run has world_size={world_size}")
    trained = sorted(k for iteration in plan.iterations for groups in iteration for k in groups)
    if trained != list(range(num_groups)):
        raise ConfigError(f"the plan in {path} does not train each of this run's {num_groups} training groups exactly once")
    if max((len(groups) for iteration in plan.iterations for groups in iteration), default=0) > capacity:
        raise ConfigError(f"the plan in {path} gives a rank more than sched.capacity={capacity} groups in one iteration")
    return plan
