"""What counting graph-convolution FLOPs costs: the same run with and without it, side by side.

Runs `dygsched run` with `metrics.count_flops=true` and `=false` alternately (`--pairs` times, so
drifts of the machine hit both alike) and prints the median steady epoch time of each and their
ratio. Defaults: TGCN (2 layers) on `twitter_tennis`, one rank, 6 epochs.

    python scripts/bench_flop_counting.py
    python scripts/bench_flop_counting.py --pairs 5 --extra sched=greedy world_size=2
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def epoch_time(count: bool, args: argparse.Namespace, results: Path, run_id: str) -> float:
    overrides = [
        f"dataset={args.dataset}", f"model={args.model}", f"epochs={args.epochs}", f"world_size={args.world_size}",
        f"metrics.count_flops={str(count).lower()}", f"results_dir={results}", f"run_id={run_id}", "progress=false",
        "checkpoint=false", *args.extra,
    ]  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "dygsched", "run", *overrides], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench_flop_counting: run failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    return float(json.loads((results / run_id / "summary.json").read_text())["epoch_time_s"])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="twitter_tennis")
    parser.add_argument("--model", default="tgcn")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--world-size", type=int, default=1)
    parser.add_argument("--pairs", type=int, default=3, help="runs with and without counting, alternately")
    parser.add_argument("--extra", nargs="*", default=[], help="more overrides for every run")
    parser.add_argument("--out", type=Path, default=None, help="also write the table as CSV here")
    args = parser.parse_args(argv)
    times: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        for pair in range(args.pairs):
            for count in (True, False):
                times[count].append(epoch_time(count, args, Path(tmp), f"{'on' if count else 'off'}-{pair}"))
    on, off = statistics.median(times[True]), statistics.median(times[False])
    print(f"epoch time with counting    {on:.4f} s  (runs: {', '.join(f'{t:.4f}' for t in times[True])})")
    print(f"epoch time without counting {off:.4f} s  (runs: {', '.join(f'{t:.4f}' for t in times[False])})")
    print(f"counting costs {100 * (on / off - 1):+.1f}% of the epoch time")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w") as out:
            out.write("count_flops,median_epoch_s,runs,overhead_pct\n")
            for count, median in ((True, on), (False, off)):
                overhead = f"{100 * (on / off - 1)}" if count else ""  # the baseline has no overhead to report
                out.write(f"{str(count).lower()},{median},{len(times[count])},{overhead}\n")
        print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
