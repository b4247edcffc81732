"""What ``dygsched advise`` costs for a large GPU count, against the planner's own simulation at that size.

Issue 60 asks that the advisor's predictions for 1,024 GPUs cost no more than the planner's own
simulation there (``dygsched simulate``). Both commands plan the same kind of problem with the same
solver: the advisor plans a synthetic snapshot graph's training groups (from a profile written once,
``--profile``, so no profiling is timed), the simulation a generated graph with as many groups, both
with DyGNeX's capacity of two groups per rank and the advisor's one-second limit for an ILP. Each
round runs the two commands one after the other (alternated, in processes of their own) and records
each one's wall time and peak resident set (``wait4``), and the advisor at one GPU (its fixed
cost); the table is the median over rounds, with the ratio of the two. Run it with nothing else running.

Usage: python scripts/bench_advise_scale.py [--gpus 1024] [--groups 1100] [--solvers dygnex_g,dygnex_l] [--rounds 3]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRAIN_SHARE = 0.7  # the run's default split: the advisor plans the training groups
WINDOW = 4


def timed(command: list[str]) -> tuple[float, float]:
    """Wall seconds and peak resident set (MB) of ``command`` run to its end; exit 1 if it failed."""
    with tempfile.TemporaryFile() as stderr:  # a file, not a pipe: a child that writes much cannot block on it
        begin = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - begin
        if os.waitstatus_to_exitcode(status) != 0:
            stderr.seek(0)
            error = stderr.read().decode(errors="replace").strip().splitlines()[-1:]
            sys.exit(f"bench_advise_scale: {' '.join(command[:4])} ... failed: {error[0] if error else status}")
    return seconds, usage.ru_maxrss / 1024  # Linux reports kilobytes


def median_of(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(s for s, _ in runs), statistics.median(m for _, m in runs)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_advise_scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=1024)
    parser.add_argument("--groups", type=int, default=1100, help="training groups (at least --gpus: a rank with none is refused)")
    parser.add_argument("--solvers", default="dygnex_g,dygnex_l", help="sched names whose solver has the same name")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if args.groups < args.gpus or args.rounds < 1:
        parser.error("--groups must be at least --gpus, and --rounds at least 1")
    snapshots = math.ceil(args.groups / TRAIN_SHARE) + WINDOW  # the advisor's graph: its training groups
    dygsched = [sys.executable, "-m", "dygsched"]
    data = ["dataset=synthetic", f"dataset.num_snapshots={snapshots}", "dataset.num_nodes=100", "model=tgcn"]
    with tempfile.TemporaryDirectory() as folder:
        profile = Path(folder) / "profile.json"
        print(f"profiling TGCN once on {snapshots} synthetic snapshots (not timed)", flush=True)
        timed([*dygsched, "advise", *data, "--sched", args.solvers, "--profile-only", "--out", folder, "--no-progress"])
        rows = []
        for solver in args.solvers.split(","):
            advise = [*dygsched, "advise", *data, "--sched", solver, "--profile", str(profile), "--gpus", str(args.gpus)]
            advise += ["--out", str(Path(folder) / solver), "--no-progress"]
            simulate = [*dygsched, "simulate", "--snapshots", str(args.groups + WINDOW - 1), "--gpus", str(args.gpus)]
            simulate += ["--solvers", solver, "--time-limit", "1", "--out", str(Path(folder) / f"{solver}.csv")]
            one = [*advise[: advise.index("--gpus")], "--gpus", "1", *advise[advise.index("--gpus") + 2 :]]
            seen: dict[str, list[tuple[float, float]]] = {"advise": [], "simulate": [], "one": []}
            for _ in range(args.rounds):  # alternated
                seen["advise"].append(timed(advise))
                seen["simulate"].append(timed(simulate))
                seen["one"].append(timed(one))
            medians = {name: median_of(runs) for name, runs in seen.items()}
            rows.append((solver, *medians["advise"], *medians["simulate"], medians["one"][0]))
    print(f"\n{args.gpus} GPUs, {args.groups} training groups, median of {args.rounds} alternated rounds (whole commands)")
    print("(advise at 1 GPU: the command's own start, the data and the profile read, a trivial plan)")
    heads = ("advise s", "simulate s", "ratio", "advise MB", "simulate MB", "advise 1 GPU s")
    print(f"{'solver':<10} " + " ".join(f"{head:>{len(head) + 1}}" for head in heads))
    for solver, advise_s, advise_mb, simulate_s, simulate_mb, one_s in rows:
        ratio = advise_s / simulate_s
        print(f"{solver:<10} {advise_s:9.2f} {simulate_s:11.2f} {ratio:6.2f} {advise_mb:10.0f} {simulate_mb:12.0f} {one_s:15.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
