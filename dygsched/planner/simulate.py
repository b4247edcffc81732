"""Scalability simulation (DyGNeX section 5.4 / REAL section 7.5 and appendix G).

A DyGraph-like generator makes ``S`` snapshots whose node and edge counts grow steadily with
fluctuations (DyGNeX appendix E), plus each snapshot's diff map (edges added and removed, nodes
touched). Groups are sliding windows of ``tw`` snapshots (stride 1). With the linear cost model:

* the first snapshot of a group costs ``a1*nodes + a2*edges + a3``, every later one is run from
  its diff map, ``a1*touched + a2*(added + removed) + a3`` (REAL appendix G);
* the reuse between groups ``i < j`` with ``j - i < tw`` is REAL eq. 17,
  ``R[i][j] = RATIO * sum_{k=i+1}^{i+tw-(j-i)} t_snapshot_k`` (``t_snapshot_k`` the diff cost).

For each GPU count and solver the plan's predicted epoch time gives the parallel efficiency
``T_1 / (G * T_G)`` (per-GPU throughput relative to one GPU; ``T_1`` is the single-GPU epoch
with the same reuse and no all-reduce, planned by ``greedy``) and the imbalance ratio (the
busiest GPU's total load over the idlest one's, synchronization excluded). ``scaling_rows`` makes
that table and ``plot_scaling`` its figure, for ``dygsched simulate`` and the ``simulate`` paper target.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dygsched.errors import ScheduleError
from dygsched.planner.cost_model import CostModel
from dygsched.planner.plan import Plan
from dygsched.planner.problem import ScheduleProblem
from dygsched.planner.solve import SOLVERS, solve


@dataclass(frozen=True)
class SnapshotStats:
    """Per snapshot: nodes, edges, and its diff map against the previous snapshot."""

    nodes: np.ndarray
    edges: np.ndarray
    added: np.ndarray
    removed: np.ndarray
    touched: np.ndarray

    @property
    def num_snapshots(self) -> int:
        return len(self.nodes)


def generate_snapshots(
    num_snapshots: int,
    seed: int = 0,
    nodes0: float = 100_000,
    edges0: float = 1_000_000,
    node_growth: float = 1.0,
    edge_growth: float = 2.0,
    fluctuation: float = 0.05,
    churn: float = 0.08,
) -> SnapshotStats:
    """Steady growth (nodes x ``1 + node_growth``, edges x ``1 + edge_growth`` over the run) with
    AR(1) fluctuations of relative size ``fluctuation``, occasional bursts, and diff maps that
    add the growth plus ``churn`` of the edges replaced."""
    if not 1 <= num_snapshots <= 100_000:
        raise ScheduleError(f"the number of snapshots must be in 1..100000, got {num_snapshots}")
    rng = np.random.default_rng(seed)
    s = np.linspace(0.0, 1.0, num_snapshots)
    noise = np.zeros(num_snapshots)
    for k in range(1, num_snapshots):
        noise[k] = 0.8 * noise[k - 1] + rng.normal(0.0, fluctuation * 0.6)
    bursts = rng.random(num_snapshots) < 0.02
    noise = noise + bursts * rng.uniform(0.0, 3 * fluctuation, num_snapshots)
    nodes = np.maximum(1.0, nodes0 * (1 + node_growth * s) * (1 + 0.5 * noise)).round()
    edges = np.maximum(1.0, edges0 * (1 + edge_growth * s) * (1 + noise)).round()
    return _with_diff_maps(nodes, edges, churn, rng)


def _with_diff_maps(nodes: np.ndarray, edges: np.ndarray, churn: float, rng: np.random.Generator) -> SnapshotStats:
    """The sizes with diff maps that replace about ``churn`` of the edges plus what the size change
    adds or removes, and touch the nodes those edges reach."""
    replaced = edges * churn * rng.uniform(0.5, 1.5, len(edges))
    growth = np.diff(edges, prepend=edges[0])
    added = np.maximum(0.0, replaced + np.maximum(growth, 0)).round()
    removed = np.maximum(0.0, replaced + np.maximum(-growth, 0)).round()
    touched = np.minimum(nodes, 1.6 * (added + removed) * nodes / np.maximum(edges, 1)).round()
    return SnapshotStats(nodes, edges, added, removed, touched)


FAMILIES = ("trend", "regime", "bursty")


def generate_family(
    family: str, num_snapshots: int, seed: int = 0, nodes0: float = 100_000, edges0: float = 1_000_000, churn: float = 0.08
) -> SnapshotStats:
    """Snapshot sizes of one of the planner benchmark's families:

    * ``trend``: DyGNeX appendix E's steady growth with fluctuations (``generate_snapshots``);
    * ``regime``: regime switching: sizes hold a level and jump to another (levels log-uniform over
      a 10x range, held for geometric durations averaging ``num_snapshots / 8``), with 2% noise;
    * ``bursty``: a steady base with heavy-tailed bursts: each snapshot starts a burst with
      probability 0.05, of Pareto(1.5) height (median +60%, sometimes 10x and more) decaying over a
      few snapshots.

    Diff maps replace ``churn`` of the edges plus whatever the size change adds or removes.
    """
    if family not in FAMILIES:
        raise ScheduleError(f"unknown snapshot family {family!r} (choose from {', '.join(FAMILIES)})")
    if family == "trend":
        return generate_snapshots(num_snapshots, seed=seed, nodes0=nodes0, edges0=edges0, churn=churn)
    if not 1 <= num_snapshots <= 100_000:
        raise ScheduleError(f"the number of snapshots must be in 1..100000, got {num_snapshots}")
    rng = np.random.default_rng(seed)
    if family == "regime":
        scale = np.empty(num_snapshots)
        k = 0
        while k < num_snapshots:
            hold = int(rng.geometric(min(1.0, 8.0 / num_snapshots)))
            scale[k : k + hold] = 10 ** rng.uniform(-0.5, 0.5)
            k += hold
        scale *= 1 + rng.normal(0.0, 0.02, num_snapshots)
    else:
        scale = np.ones(num_snapshots)
        for start in np.flatnonzero(rng.random(num_snapshots) < 0.05):
            height = rng.pareto(1.5)
            decay = 0.5 ** np.arange(num_snapshots - start)
            scale[start:] += height * decay
        scale *= 1 + rng.normal(0.0, 0.02, num_snapshots)
    scale = np.maximum(scale, 0.05)
    nodes = np.maximum(1.0, nodes0 * np.sqrt(scale)).round()
    edges = np.maximum(1.0, edges0 * scale).round()
    return _with_diff_maps(nodes, edges, churn, rng)


def group_costs(stats: SnapshotStats, window: int, cost: CostModel) -> tuple[np.ndarray, np.ndarray]:
    """Group times (first snapshot full, the rest from diff maps) and per-snapshot diff costs."""
    if window < 1 or window > stats.num_snapshots:
        raise ScheduleError(f"the time window must be in 1..{stats.num_snapshots}, got {window}")
    full = cost.a1 * stats.nodes + cost.a2 * stats.edges + cost.a3
    diff = cost.a1 * stats.touched + cost.a2 * (stats.added + stats.removed) + cost.a3
    groups = stats.num_snapshots - window + 1
    csum = np.concatenate([[0.0], np.cumsum(diff)])
    times = full[:groups] + (csum[np.arange(groups) + window] - csum[np.arange(groups) + 1])
    return times, diff


def reuse_pairs(diff: np.ndarray, groups: int, window: int, ratio: float) -> list[tuple[int, int, float]]:
    """REAL eq. 17 for every pair of overlapping windows (``0 < j - i < tw``)."""
    csum = np.concatenate([[0.0], np.cumsum(diff)])
    pairs = []
    for d in range(1, window):
        for i in range(groups - d):
            last = i + window - d  # k runs over i+1 .. i+tw-(j-i)
            value = ratio * (csum[last + 1] - csum[i + 1])
            if value > 0:
                pairs.append((i, i + d, float(value)))
    return pairs


def simulation_problem(
    stats: SnapshotStats, window: int, cost: CostModel, num_gpus: int, reuse: bool, capacity: int = 2
) -> ScheduleProblem:
    times, diff = group_costs(stats, window, cost)
    pairs = reuse_pairs(diff, len(times), window, cost.reuse_ratio) if reuse else None
    return ScheduleProblem(tuple(times.tolist()), num_gpus, capacity, cost.allreduce_cost, None, tuple(pairs) if pairs else None)


def with_gpus(problem: ScheduleProblem, num_gpus: int, allreduce_cost: float | None = None) -> ScheduleProblem:
    alpha = problem.allreduce_cost if allreduce_cost is None else allreduce_cost
    return ScheduleProblem(problem.group_times, num_gpus, problem.capacity, alpha, problem.reuse, problem.reuse_pairs)


def gpu_loads(problem: ScheduleProblem, plan: Plan[int]) -> list[float]:
    loads = [0.0] * problem.num_gpus
    for iteration in plan.iterations:
        for rank, groups in enumerate(iteration):
            loads[rank] += problem.load(groups)
    return loads


def imbalance_ratio(problem: ScheduleProblem, plan: Plan[int]) -> float:
    loads = gpu_loads(problem, plan)
    low = min(loads)
    return float("inf") if low <= 0 else max(loads) / low


def scaling_rows(
    snapshots: int,
    gpus: Sequence[int],
    solvers: Sequence[str],
    window: int = 4,
    reuse: bool = False,
    cost: CostModel | None = None,
    seed: int = 0,
    time_limit: float | None = None,
) -> list[dict[str, Any]]:
    """One row per (solver, GPU count): the plan's predicted epoch time on ``snapshots`` generated
    snapshots in groups of ``window``, and its parallel efficiency against one GPU's greedy plan."""
    if not gpus or min(gpus) < 1:
        raise ScheduleError("--gpus needs at least one positive GPU count")
    for name in solvers:
        if name not in SOLVERS:
            raise ScheduleError(f"unknown solver {name!r}; valid choices: {', '.join(SOLVERS)}")
    stats = generate_snapshots(snapshots, seed=seed)
    base = simulation_problem(stats, window, cost or CostModel(), 1, reuse)
    single = solve(with_gpus(base, 1, 0.0), "greedy").predicted_epoch_time
    rows = []
    for name in solvers:
        for g in gpus:
            problem = with_gpus(base, g)
            plan = solve(problem, name, time_limit=time_limit, seed=seed)
            rows.append(
                {
                    "solver": name,
                    "gpus": g,
                    "groups": problem.num_groups,
                    "reuse": "on" if reuse else "off",
                    "epoch_time": plan.predicted_epoch_time,
                    "lower_bound": plan.lower_bound,
                    "single_gpu_time": single,
                    "efficiency": single / (g * plan.predicted_epoch_time),
                    "imbalance": imbalance_ratio(problem, plan),
                    "iterations": plan.num_iterations,
                    "solve_time_s": plan.solve_time_s,
                }
            )
    return rows


def plot_scaling(rows: list[dict[str, Any]], path: Path) -> None:
    """Parallel efficiency and imbalance ratio against the GPU count, one line per solver."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for name in dict.fromkeys(r["solver"] for r in rows):
        mine = [r for r in rows if r["solver"] == name]
        xs = [r["gpus"] for r in mine]
        left.plot(xs, [r["efficiency"] for r in mine], marker="o", label=name)
        right.plot(xs, [r["imbalance"] if math.isfinite(r["imbalance"]) else float("nan") for r in mine], marker="o", label=name)
    for ax, label in ((left, "parallel efficiency"), (right, "imbalance ratio")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("GPUs")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
