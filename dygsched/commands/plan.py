"""``dygsched plan``: read group times, plan them, print the plan, its predicted time, bound and gap."""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from dygsched.arguments import CommandParser
from dygsched.errors import ScheduleError
from dygsched.planner import SOLVERS, ScheduleProblem, solve
from dygsched.planner.cost_model import CostModel, group_times_from_sizes
from dygsched.planner.solvers.ilp import BACKENDS


def read_problem_file(path: str | Path) -> tuple[list[float], list[list[float]] | None]:
    """Group times (and an optional reuse table) from JSON (a list, or ``{"group_times", "reuse"}``) or CSV (column ``time``)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScheduleError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ScheduleError(
            f"{path} is not a text file (byte {exc.start} is not UTF-8): give a JSON or CSV of group times"
        ) from None
    if path.suffix.lower() == ".csv":
        rows = list(csv.DictReader(text.splitlines()))
        if not rows or "time" not in rows[0]:
            raise ScheduleError(f"{path} needs a column named 'time' (one row per group)")
        try:
            return [float(r["time"]) for r in rows], None
        except (TypeError, ValueError):
            raise ScheduleError(f"{path}: every 'time' must be a number") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScheduleError(f"{path} is not valid JSON: {exc.msg} (line {exc.lineno})") from None
    reuse = None
    if isinstance(data, dict):
        if "group_times" not in data:
            raise ScheduleError(f"{path}: the JSON object needs a 'group_times' list")
        reuse = data.get("reuse")
        data = data["group_times"]
    if not isinstance(data, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in data):
        raise ScheduleError(f"{path}: group times must be a list of numbers")
    if reuse is not None and (not isinstance(reuse, list) or not all(isinstance(r, list) for r in reuse)):
        raise ScheduleError(f"{path}: 'reuse' must be a square list of lists")
    return [float(v) for v in data], reuse


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="dygsched plan", description="Plan snapshot groups onto GPUs and report the predicted epoch time."
    )
    parser.add_argument(
        "times",
        nargs="?",
        default=None,
        help="JSON list, JSON {'group_times': [...], 'reuse': [[...]]} (a run's profile.json too), or CSV with a 'time' column",
    )
    parser.add_argument(
        "--dataset",
        nargs="+",
        metavar="OVERRIDE",
        default=None,
        help="price a configured dataset's training groups instead, e.g. --dataset dataset=twitter_tennis window=4",
    )
    parser.add_argument("--profile", default=None, help="cost model JSON {a1, a2, a3} for --dataset (a run's cost_model.json)")
    parser.add_argument("--gpus", type=int, default=4, help="number of GPUs G (default 4)")
    parser.add_argument("--capacity", type=int, default=2, help="groups per GPU per iteration L (default 2)")
    parser.add_argument("--alpha", type=float, default=0.0, help="all-reduce cost per iteration (default 0)")
    parser.add_argument("--algo", default="greedy", help=f"solver: {', '.join(SOLVERS)} (default greedy)")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds for ilp/dygnex_l/real")
    parser.add_argument("--backend", default=None, help=f"ILP backend: {', '.join(BACKENDS)} (default cpsat)")
    parser.add_argument("--gap", type=float, default=None, help="ILP relative optimality gap (default 0.01)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the plan as JSON here")
    parser.add_argument("--quiet", action="store_true", help="print only the summary line")
    return parser


def dataset_group_times(overrides: list[str], cost_model: CostModel) -> list[float]:
    """``--dataset``: the run the overrides compose (``dataset=...``, ``window=...``), its training
    groups priced by ``cost_model``."""
    from dygsched.data.loading import load_graph
    from dygsched.engine.objective import build_split
    from dygsched.launch.compose import compose_run

    run = compose_run(overrides)
    graph = load_graph(run.dataset)
    sizes = [group.work(graph) for group in build_split(graph, run).train]
    return group_times_from_sizes([n for n, _ in sizes], [e for _, e in sizes], cost_model)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if (args.times is None) == (args.dataset is None):
        raise ScheduleError("give either a group-times file or --dataset OVERRIDES")
    if args.dataset is not None:
        times, reuse = dataset_group_times(args.dataset, CostModel.from_json(args.profile) if args.profile else CostModel()), None
    else:
        if args.profile:
            raise ScheduleError("--profile prices a --dataset; a times file already holds times")
        times, reuse = read_problem_file(args.times)
    problem = ScheduleProblem(tuple(times), args.gpus, args.capacity, args.alpha, tuple(map(tuple, reuse)) if reuse else None)
    options = {}
    if args.backend is not None or args.gap is not None:
        if args.algo not in ("ilp", "dygnex_l", "real"):
            raise ScheduleError(f"--backend and --gap apply to ilp, dygnex_l and real, not {args.algo!r}")
        if args.backend is not None:
            options["backend"] = args.backend
        if args.gap is not None:
            options["gap"] = args.gap
    plan = solve(problem, args.algo, time_limit=args.time_limit, seed=args.seed, **options)
    if not args.quiet:
        width = len(str(problem.num_groups - 1))
        for i, iteration in enumerate(plan.iterations):
            cells = ["+".join(str(k).rjust(width) for k in groups) or "-" for groups in iteration]
            slowest = problem.slowest_load(iteration)
            print(f"iter {i:>3} | {' | '.join(cells)} | {slowest:.6g}")
    print(
        f"solver={plan.solver} status={plan.solver_status.value} groups={problem.num_groups} gpus={problem.num_gpus} "
        f"iterations={plan.num_iterations} predicted={plan.predicted_epoch_time:.6g} bound={plan.lower_bound:.6g} "
        f"gap={plan.gap:.2%} solve_time={plan.solve_time_s:.3f}s"
    )
    if args.out:
        out = Path(args.out)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            plan.save(out)
        except OSError as exc:
            raise ScheduleError(f"cannot write {out}: {exc.strerror or exc}") from None
        print(f"plan written to {out}")
    return 0
