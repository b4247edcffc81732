"""REAL's reuse against PSG, side by side in one invocation: graph-convolution FLOPs and epoch time.

Runs `dygsched run` once per strategy (and round) on the same graph, model, seed and ranks (default: the
Arxiv-sized synthetic graph, ~170k nodes and ~1.3M edges per snapshot with 5% of them changing
per snapshot, TGCN, 2 CPU ranks), then prints each run's steady epoch time and graph-convolution
FLOPs per epoch, and their ratios against the first strategy (PSG).

    python scripts/bench_reuse.py                       # psg vs real, TGCN with 1 layer
    python scripts/bench_reuse.py --scheds psg,greedy --dataset twitter_tennis --snapshots 0 --rounds 3
                                                        # alternated A/B/A/B..., the median of the rounds
    python scripts/bench_reuse.py --layers 2 --extra device=cuda world_size=1 \
        --scheds psg,real,real:sched.executor.streams=false   # on a GPU: the triple-stream pipeline's gain too
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd


def run(spec: str, args: argparse.Namespace, round_index: int = 0) -> dict:
    """One run; ``spec`` is a sched name, optionally with its own overrides: ``real:sched.executor.streams=false``."""
    sched, *own = spec.split(":")
    label = "-".join([sched, *(o.split("=")[0].split(".")[-1] + "_" + o.split("=")[-1] for o in own)])
    run_id = f"bench-reuse-{label}-{args.model}-{args.layers}l-{args.dataset}-r{round_index}"
    overrides = [
        f"dataset={args.dataset}",
        *([f"dataset.num_snapshots={args.snapshots}"] if args.snapshots else []),
        f"seed={args.seed}",
        f"model={args.model}",
        f"model.num_layers={args.layers}",
        f"sched={sched}",
        f"epochs={args.epochs}",
        f"results_dir={args.results_dir}",
        f"run_id={run_id}",
        "overwrite=true",  # a rerun replaces this script's earlier run (moved aside)
        "progress=false",
        *args.extra,
        *own,
    ]
    if sched != "psg":
        overrides.append(f"sched.timeline.profile_epochs={args.profile_epochs}")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "dygsched", "run", *overrides], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench_reuse: {spec} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    summary = json.loads((args.results_dir / run_id / "summary.json").read_text())
    return {
        "run": label,
        "epoch_time_s": summary["epoch_time_s"],
        "conv_flops_per_epoch": summary["conv_flops_per_epoch"],
        "host_to_device_bytes": summary["comm_bytes_per_epoch"]["host_to_device"],
        "imbalance_ratio": summary["imbalance_ratio"],
        "final_train_loss": summary["final_train_loss"],
        "reuse_preprocess_s": summary.get("reuse_preprocess_s"),
        "reuse_case": summary.get("reuse_case"),
        "wall_s": time.perf_counter() - start,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scheds", default="psg,real", help="comma-separated sched[:override...]; the first is the baseline")
    parser.add_argument("--dataset", default="synthetic_arxiv")
    parser.add_argument("--snapshots", type=int, default=12, help="dataset.num_snapshots (0: the dataset's own)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=1, help="run the scheds this many times, alternated; report the medians")
    parser.add_argument("--model", default="tgcn")
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--profile-epochs", type=int, default=2)
    parser.add_argument("--results-dir", type=Path, default=Path("results/bench_reuse"))
    parser.add_argument("--extra", nargs="*", default=[], help="more overrides for every run (e.g. device=cuda)")
    args = parser.parse_args(argv)
    scheds = args.scheds.split(",")
    runs = pd.DataFrame([run(sched, args, r) for r in range(args.rounds) for sched in scheds])  # A B A B ...
    numeric = runs.drop(columns="run").columns
    table = runs.groupby("run", sort=False)[list(numeric)].median().reset_index()
    table.insert(1, "rounds", args.rounds)
    table["epoch_time_s_per_round"] = [" ".join(f"{v:.3g}" for v in runs[runs.run == name].epoch_time_s) for name in table.run]
    base = table.iloc[0]
    table["speedup"] = base["epoch_time_s"] / table["epoch_time_s"]
    table["flops_reduction"] = base["conv_flops_per_epoch"] / table["conv_flops_per_epoch"]
    out = args.results_dir / f"bench_reuse_{args.model}_{args.layers}l.csv"  # the name the report reads
    table.to_csv(out, index=False)
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.4g}".format):
        print(table.to_string(index=False))
    print(f"\nwritten {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
