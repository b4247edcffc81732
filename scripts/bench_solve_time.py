"""The shape of DyGNeX tables 5 and 6: solve time by number of snapshots, and ILP time by gap.

Table 5: DyGNeX-G (and this project's greedy) solve time for 10 .. 10,000 snapshots.
Table 6: DyGNeX-L (reuse-agnostic ILP, CP-SAT, warm-started) time to reach each optimality gap
for 10 .. 300 snapshots; ">limit" when it did not converge within the time limit.
Writes results/solve_time_greedy.csv and results/solve_time_ilp.csv (tidy) and prints both tables.
Usage: python scripts/bench_solve_time.py [--quick] [--gpus 8] [--time-limit 30]
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from dygsched.sched import SolverStatus, solve
from dygsched.sched.cost_model import CostModel
from dygsched.sched.simulate import generate_snapshots, simulation_problem

WINDOW = 4
DYGNEX_FULL_MAX = 1000  # above this DyGNeX-G runs with 64 candidate targets per iteration (marked *)


def problem_for(snapshots: int, gpus: int):
    stats = generate_snapshots(snapshots + WINDOW - 1, seed=snapshots)
    return simulation_problem(stats, WINDOW, CostModel(), gpus, reuse=False)


def write(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_solve_time")
    parser.add_argument("--quick", action="store_true", help="fewer sizes and gaps, 5 s limit")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--out-dir", default="results")
    parser.add_argument("--max-snapshots", type=int, default=None, help="keep only the sizes up to this many snapshots")
    args = parser.parse_args(argv)
    limit = 5.0 if args.quick else args.time_limit
    sizes5 = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 150, 300, 500, 1000, 3000, 7000, 10000]
    sizes6 = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 150, 300]
    gaps = [0.01, 0.02, 0.03, 0.05, 0.06, 0.08, 0.10]
    if args.quick:
        sizes5 = [10, 50, 100, 300, 1000, 10000]
        sizes6 = [10, 50, 100, 300]
        gaps = [0.01, 0.02, 0.05, 0.10]
    if args.max_snapshots is not None:
        sizes5 = [s for s in sizes5 if s <= args.max_snapshots]
        sizes6 = [s for s in sizes6 if s <= args.max_snapshots]
    full_max = 300 if args.quick else DYGNEX_FULL_MAX  # --quick: 8 targets above 300 snapshots (keeps it ~2 min)
    targets = 8 if args.quick else 64
    rows5 = []
    for s in sizes5:
        problem = problem_for(s, args.gpus)
        for label, algo, opts in (
            ("dygnex_g" if s <= full_max else "dygnex_g*", "dygnex_g", {} if s <= full_max else {"max_targets": targets}),
            ("greedy", "greedy", {}),
        ):
            plan = solve(problem, algo, **opts)
            rows5.append(dict(table=5, solver=label, snapshots=s, gpus=args.gpus, solve_time_s=plan.solve_time_s, gap=plan.gap))
    write(rows5, Path(args.out_dir) / "solve_time_greedy.csv")
    print(f"Table 5 shape: solve time (s), G = {args.gpus}  (* = {targets} candidate targets per iteration)")
    print(f"{'snapshots':<12}" + "".join(f"{s:>9}" for s in sizes5))
    for label in dict.fromkeys(r["solver"].rstrip("*") for r in rows5):
        cells = [r for r in rows5 if r["solver"].rstrip("*") == label]
        print(f"{label:<12}" + "".join(f"{r['solve_time_s']:>8.4f}{'*' if r['solver'].endswith('*') else ' '}" for r in cells))
    rows6 = []
    for gap in gaps:
        for s in sizes6:
            problem = problem_for(s, args.gpus)
            plan = solve(problem, "dygnex_l", time_limit=limit, gap=gap)
            converged = plan.solver_status is SolverStatus.OPTIMAL
            rows6.append(dict(table=6, solver="dygnex_l", snapshots=s, gpus=args.gpus, gap_target=gap,
                              converged=converged, solve_time_s=plan.solve_time_s, gap_to_bound=plan.gap))
    write(rows6, Path(args.out_dir) / "solve_time_ilp.csv")
    print(f"\nTable 6 shape: DyGNeX-L time (s) to reach the gap, limit {limit:g} s")
    print(f"{'gap':<6}" + "".join(f"{s:>8}" for s in sizes6))
    for gap in gaps:
        cells = [r for r in rows6 if r["gap_target"] == gap]
        print(f"{gap:<6.0%}" + "".join(f"{r['solve_time_s']:>8.2f}" if r["converged"] else f"{'>' + format(limit, 'g'):>8}" for r in cells))
    print(f"\ntables written to {args.out_dir}/solve_time_greedy.csv and {args.out_dir}/solve_time_ilp.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
