"""``dygsched simulate``: scalability simulation (DyGNeX fig. 5 / REAL fig. 15) as a CSV and a PNG."""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from dygsched.arguments import CommandParser
from dygsched.errors import ScheduleError
from dygsched.planner import SOLVERS
from dygsched.planner.cost_model import CostModel
from dygsched.planner.simulate import plot_scaling, scaling_rows

DEFAULT_GPUS = "4,8,16,32,64,128,256,512,1024"


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="dygsched simulate", description="Simulate planning for 4..1,024 GPUs and report parallel efficiency."
    )
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
        print(
            f"{r['solver']:<14}{r['gpus']:>6}{r['efficiency']:>12.4f}{r['imbalance']:>11.3f}{r['epoch_time']:>12.4f}{r['solve_time_s']:>9.3f}"
        )
    png = out.with_suffix(".png")
    plot_scaling(rows, png)
    print(f"table written to {out}, plot to {png}")
    return 0
