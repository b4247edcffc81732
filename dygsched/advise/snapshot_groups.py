"""The price of the snapshot-group strategies (PSG, DyGNeX-G/L, BLAD, REAL-G/L and the REAL policy, ESDG).

Each training group's seconds come from its family's cost curve (``t = a1 * nodes + a2 * edges +
a3``, fitted on the profiled steps with the optimizer step taken out: DyGNeX appendix H, REAL eq.
16), scaled to the target. Then the strategy's own planner plans them, as its timeline would once it
has measured them (``plan_units`` with the strategy's ``PlannerConfig``): PSG one group per rank and
iteration in time order, DyGNeX and REAL balanced with up to ``capacity`` groups per rank, BLAD
consecutive pairs round-robin. Each iteration pays its slowest rank and ``alpha``: the optimizer
step, the wait for every rank and the bucketed gradient all-reduce over the target's link. The
plan's predicted epoch time is the prediction, in the run's units.

REAL's reuse: the groups' seconds are those of its reuse engine (profiled with it: the incremental
first layer, type I reuse), and the savings of two overlapping groups merged on one rank (type II)
come from the timed merged pairs (``reusable_from_pairs``), so the planner's eq. 17 table is the one
the strategy itself builds after profiling. BLAD's pipeline is profiled on pairs: its curve prices a
pair of consecutive groups with their overlap. ESDG trains every group on all ranks, each a
contiguous block of the group's snapshots (``snapshot_block``), one after another along the chain,
the recurrent states (and their gradients back) crossing the link between neighbours: a group costs
its blocks' seconds in turn plus ``2 (W - 1)`` messages of the states' bytes (``StateLayout``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import cast

from dygsched.advise.cases import BLAD, REUSE, StrategyCase
from dygsched.advise.pricing import (
    EXACT,
    LARGER_STEPS,
    Prediction,
    Target,
    step_cost,
)
from dygsched.advise.profile import Curve, Profile, StepSample, memory_curve, time_curve
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.engine.objective import build_split
from dygsched.engine.snapshot_groups import SnapshotGroupStrategy
from dygsched.engine.snapshot_groups.esdg import snapshot_block
from dygsched.planner.planning import plan_units
from dygsched.planner.reuse_table import Span, capped_reuse_pairs, reusable_from_pairs

# The ILP solvers' limit when the advisor plans (a run gives them their configured limit, so its
# plan is at least this good): the advisor plans every strategy on every GPU count at once.
PLAN_TIME_LIMIT_S = 1.0
ILP_SOLVERS = ("ilp", "dygnex_l", "real")


def groups_of(graph: TemporalGraph, case: StrategyCase) -> tuple[list[Span], list[tuple[int, int]]]:
    """The training groups' spans and (nodes, edges): the cost model's inputs, as the timeline reads them."""
    groups = build_split(graph, case.run).train
    return [(g.start, g.stop) for g in groups], [g.work(graph) for g in groups]


def memory_of(profile: Profile, family: str, samples: Sequence[StepSample], target: Target) -> Curve | None:
    """The family's peak memory per step above what the process held before its set-up."""
    return memory_curve(samples, profile.family_memory_bytes.get(family, 0))


def peak_memory(profile: Profile, curve: Curve | None, target: Target, *features: float) -> float | None:
    """A rank's peak as the run measures it: on CPU ranks the process's resident set before training
    plus what the family added; on a GPU the tensors alone (what the allocator's peak counts)."""
    if curve is None:
        return None
    added = max(0.0, curve(*features))
    return profile.baseline_memory_bytes + added if target.cpu_ranks else added


def training_effect(strategy: SnapshotGroupStrategy) -> str:
    capacity = strategy.planner.capacity
    return LARGER_STEPS.format(capacity=capacity) if capacity > 1 else EXACT


def price(case: StrategyCase, graph: TemporalGraph, profile: Profile, target: Target, time_limit: float) -> Prediction:
    """``case`` on ``target`` (see the module docstring)."""
    strategy = cast(SnapshotGroupStrategy, case.strategy)
    if case.is_esdg:
        return price_esdg(case, graph, profile, target)
    spans, sizes = groups_of(graph, case)
    threads = target.threads
    step = step_cost(profile, target)
    raw_step = profile.step_s(threads)
    family = case.family
    singles = profile.of(family, threads, units=1)
    pairs = profile.of(family, threads, units=2)
    kernels = profile.kernels(family)
    if family == BLAD:  # the pipeline is timed on pairs: half the pair's fixed term per group
        curve = time_curve(pairs, raw_step)
        *slopes, fixed = curve.coefficients
        unit = Curve((*slopes, fixed / 2), curve.r2, curve.samples)
    else:
        unit = time_curve(singles, raw_step)
    times = [target.compute(unit(n, e), kernels) for n, e in sizes]
    reuse = None
    if family == REUSE and strategy.planner.reuse_table:
        reuse = _reuse_pairs(spans, sizes, times, unit, pairs, raw_step, target, strategy.planner.costs.reuse_ratio)
    planner = replace(strategy.planner, plan_file=None)
    if planner.solver in ILP_SOLVERS:
        planner = replace(planner, time_limit=min(planner.time_limit or time_limit, time_limit))
    plan = plan_units(planner, times, target.gpus, allreduce_cost=step.total_s, reuse_pairs=reuse)
    iterations = plan.num_iterations
    compute = max(0.0, plan.predicted_epoch_time - iterations * step.total_s)
    memory_samples = pairs if family == BLAD else [*singles, *pairs]
    memory = memory_of(profile, family, memory_samples, target)
    largest = _largest_rank_work(plan.iterations, sizes, merged=family in (REUSE, BLAD))
    return Prediction(
        strategy=case.name,
        family=family,
        gpus=target.gpus,
        epoch_time_s=plan.predicted_epoch_time,
        compute_s=compute,
        communication_s=iterations * step.communication_s,
        overhead_s=iterations * step.optimizer_s,
        steps=iterations,
        peak_memory_bytes=peak_memory(profile, memory, target, *largest),
        traffic={"allreduce": iterations * target.gpus * step.allreduce_bytes} if target.gpus > 1 else {},
        training=training_effect(strategy),
        exact=strategy.exact,
        terms=f"plan {plan.solver} ({plan.solver_status.value}), {iterations} iterations; group curve R^2 {unit.r2:.2f}",
    )


def _largest_rank_work(
    iterations: Sequence[Sequence[Sequence[int]]], sizes: Sequence[tuple[int, int]], merged: bool
) -> tuple[float, float]:
    """The largest (nodes, edges) a rank holds at once: its largest group, or its iteration's groups
    together where the executor trains them as one (REAL's merged chains, BLAD's pipeline)."""
    best = (0.0, 0.0)
    for iteration in iterations:
        for cell in iteration:
            if not cell:
                continue
            held = [sizes[k] for k in cell]
            work = (sum(n for n, _ in held), sum(e for _, e in held)) if merged else max(held, key=lambda s: s[0] + s[1])
            if work[0] + work[1] > best[0] + best[1]:
                best = (float(work[0]), float(work[1]))
    return best


def _reuse_pairs(
    spans: Sequence[Span],
    sizes: Sequence[tuple[int, int]],
    times: Sequence[float],
    unit: Curve,
    pairs: Sequence[StepSample],
    raw_step: float,
    target: Target,
    ratio: float,
) -> list[tuple[int, int, float]]:
    """REAL eq. 17's table from the timed merged pairs (each pair's saving over its two groups alone),
    as the strategy's timeline builds it; the configured ``reuse_ratio`` where no pair was timed."""
    unit_seconds: dict[int, float] = {}
    pair_seconds: dict[tuple[int, int], float] = {}
    for sample in pairs:
        i, j = (int(k) for k in sample.label.split("+"))
        if j >= len(spans):
            continue
        unit_seconds[i], unit_seconds[j] = times[i], times[j]
        pair_seconds[(i, j)] = target.compute(max(sample.seconds - raw_step, 0.0))
    measured = reusable_from_pairs(unit_seconds, pair_seconds, spans) if pair_seconds else {}
    if measured:  # groups without a timed pair: the median measured share of their time
        share = sorted(measured[k] / times[k] for k in measured if times[k] > 0)
        middle = share[len(share) // 2] if share else ratio
        measured = {k: measured.get(k, middle * times[k]) for k in range(len(times))}
    return capped_reuse_pairs(spans, times, measured or None, ratio)


def state_bytes(profile: Profile, nodes: int) -> float:
    """The bytes of the recurrent states one ESDG rank sends the next (``StateLayout``'s message)."""
    return profile.fact("state_bytes_per_node") * nodes + profile.fact("state_bytes_fixed")


def price_esdg(case: StrategyCase, graph: TemporalGraph, profile: Profile, target: Target) -> Prediction:
    """ESDG: every group on all ranks along the chain (see the module docstring)."""
    strategy = cast(SnapshotGroupStrategy, case.strategy)
    ranks, window = target.gpus, case.run.window
    groups = build_split(graph, case.run).train
    threads = target.threads
    step = step_cost(profile, target)
    raw_step = profile.step_s(threads)
    samples = profile.of(case.family, threads, units=1)
    unit = time_curve(samples, raw_step)
    *slopes, fixed = unit.coefficients
    kernels = profile.kernels(case.family)
    message = state_bytes(profile, graph.num_nodes)
    per_snapshot = [(s.num_active_nodes, s.num_edges) for s in graph.snapshots]
    compute = chain = 0.0
    largest = (0.0, 0.0)
    for group in groups:
        for rank in range(ranks):
            lo, hi = snapshot_block(group.size, ranks, rank)
            block = per_snapshot[group.start + lo : group.start + hi]
            nodes, edges = sum(n for n, _ in block), sum(e for _, e in block)
            share = (hi - lo) / window
            seconds = slopes[0] * nodes + slopes[1] * edges + fixed * share
            compute += target.compute(seconds, kernels * share if kernels else None)
            if nodes + edges > sum(largest):
                largest = (float(nodes), float(edges))
        chain += 2 * (ranks - 1) * target.link.message_s(message)
    iterations = math.ceil(len(groups) / ranks)
    memory = memory_of(profile, case.family, samples, target)
    traffic = {"hidden_state": len(groups) * 2 * (ranks - 1) * message} if ranks > 1 else {}
    if ranks > 1:
        traffic["allreduce"] = iterations * ranks * step.allreduce_bytes
    return Prediction(
        strategy=case.name,
        family=case.family,
        gpus=ranks,
        epoch_time_s=compute + chain + iterations * step.total_s,
        compute_s=compute,
        communication_s=chain + iterations * step.communication_s,
        overhead_s=iterations * step.optimizer_s,
        steps=iterations,
        peak_memory_bytes=peak_memory(profile, memory, target, *largest),
        traffic=traffic,
        training=EXACT,
        exact=strategy.exact,
        terms=f"each group's blocks one after another on {ranks} rank(s), {message / 2**20:.2f} MiB of states per message",
    )
