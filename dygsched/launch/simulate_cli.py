"""``dygsched simulate``: scalability simulation (DyGNeX fig. 5 / REAL fig. 15) as a CSV and a PNG."""

from __future__ import annotations

import argparse
import csv
import math
from collections.abc import Sequence
from pathlib import Path

from dygsched.errors import ScheduleError
from dygsched.planner import SOLVERS, solve
from dygsched.planner.cost_model import CostModel
from dygsched.planner.simulate import generate_snapshots, imbalance_ratio, simulation_problem, with_gpus

DEFAULT_GPUS = "4,8,16,32,64,128,256,512,1024"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dygsched simulate", description="Simulate planning for 4..1,024 GPUs and report parallel efficiency.")
    parser.add_argument("--snapshots", type=int, default=10_000, help="snapshots to generate (default 10000)")
    parser.add_argument("--window", type=int, default=4, help="snapshots per group (sliding window, default 4)")
    parser.add_argument("--gpus", default=DEFAULT_GPUS, help=f"comma-separated GPU counts (default {DEFAULT_GPUS})")
    parser.add_argument("--solvers", default="psg,greedy", help=f"comma-separated solvers from {', '.join(SOLVERS)}")
    parser.add_argument("--reuse", choices=("on", "off"), default="off", help="reuse table of REAL eq. 17 (default off)")
    parser.add_argument("--profile", default=None, help="cost profile JSON with a1, a2, a3 (+ reuse_ratio, allreduce_cost)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=None, help="per-plan limit for ilp/real")
    parser.add_argument("--out", default="results/simulate_scaling.csv", help="CSV path (the PNG goes beside it)")
    return parser


def scaling_rows(
    snapshots: int,
    gpus: Sequence[int],
    solvers: Sequence[str],
    window: int = 4,
    reuse: bool = False,
    cost: CostModel | None = None,
    seed: int = 0,
    time_limit: float | None = None,
) -> list[dict]:
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


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        gpus = [int(g) for g in args.gpus.split(",") if g.strip()]
    except ValueError:
        raise ScheduleError(f"--gpus must be comma-separated integers, got {args.gpus!r}") from None
    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    cost = CostModel.from_json(args.profile) if args.profile else CostModel()
    rows = scaling_rows(args.snapshots, gpus, solvers, args.window, args.reuse == "on", cost, args.seed, args.time_limit)
    out = Path(args.out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    except OSError as exc:
        raise ScheduleError(f"cannot write {out}: {exc.strerror or exc}") from None
    print(f"{'solver':<14}{'gpus':>6}{'efficiency':>12}{'imbalance':>11}{'epoch_time':>12}{'solve_s':>9}")
    for r in rows:
        print(f"{r['solver']:<14}{r['gpus']:>6}{r['efficiency']:>12.4f}{r['imbalance']:>11.3f}{r['epoch_time']:>12.4f}{r['solve_time_s']:>9.3f}")
    png = out.with_suffix(".png")
    plot_scaling(rows, png)
    print(f"table written to {out}, plot to {png}")
    return 0


def plot_scaling(rows: list[dict], path: Path) -> None:
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
