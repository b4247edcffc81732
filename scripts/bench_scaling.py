"""Snapshot strategies on a growing graph: seconds per epoch and peak memory per rank as the nodes and the snapshots grow.

Runs `dygsched run` (2 ranks, the default local launcher) once per strategy and size on the
synthetic graph at a fixed average degree with `growth=none` (every snapshot has all its nodes and
`avg_degree x nodes` edges, so the sizes are exact), along two axes: the nodes at a fixed number
of snapshots, and the snapshots at a fixed number of nodes (the point both axes share runs once).
Each run trains `--epochs` epochs; the table keeps the last one (the first pays for warm-up and,
for greedy, its one profiling epoch: greedy plans from the second): its epoch time (the slowest rank's) and the peak resident set of each
rank in that epoch, as the run's metrics.parquet records them. Then it writes a table (CSV) and a
log-log plot (PNG) with the fitted growth exponent per strategy and axis (1.0 is linear).

PSG, greedy and FlareDTDG train TGCN; DistDy trains only a sampled GraphSAGE encoder with a
temporal model, so it runs `model=sage_temporal`. A run that fails or passes `--timeout` keeps its
row with the reason and no numbers (missing, never 0). Runs go smallest first, the strategies
alternated at each size.

    python scripts/bench_scaling.py                                   # 4 strategies; 5 node counts, 4 snapshot counts
    python scripts/bench_scaling.py --scheds psg --nodes 1000,10000 --snapshots 24,48
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

MODEL = {"distdy": "sage_temporal"}  # every other strategy trains TGCN
# Greedy profiles 4 PSG epochs before it plans (conf/sched/dygnex_g.yaml); here one, so the measured
# last epoch runs its plan (the table's `plan_from_epoch` says from which epoch each run did).
OVERRIDES = {"greedy": ["sched.timeline.profile_epochs=1"]}
EPOCH_LEVEL = -1  # the iteration of epoch-level rows in metrics.parquet (dygsched.metrics.recorder)


def run(sched: str, nodes: int, snapshots: int, args: argparse.Namespace) -> dict:
    run_id = f"scaling-{sched}-{nodes}n-{snapshots}t"
    model = MODEL.get(sched, "tgcn")
    overrides = [
        "dataset=synthetic",
        "dataset.growth=none",
        f"dataset.num_nodes={nodes}",
        f"dataset.num_snapshots={snapshots}",
        f"dataset.avg_degree={args.avg_degree}",
        f"model={model}",
        f"sched={sched}",
        *OVERRIDES.get(sched, []),
        f"epochs={args.epochs}",
        f"seed={args.seed}",
        "checkpoint=false",
        f"results_dir={args.results_dir}",
        f"run_id={run_id}",
        "overwrite=true",  # a rerun replaces this script's earlier run (moved aside)
        "progress=false",
        *args.extra,
    ]
    row: dict = {"sched": sched, "model": model, "nodes": nodes, "snapshots": snapshots,
                 "edge_rows": int(round(args.avg_degree * nodes)) * snapshots}  # fmt: skip
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "dygsched", "run", *overrides], capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {**row, "wall_s": time.perf_counter() - start, "error": f"over --timeout {args.timeout:g} s"}
    row["wall_s"] = time.perf_counter() - start
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:]
        print(f"bench_scaling: {sched} at {nodes} nodes x {snapshots} snapshots failed: {last}", file=sys.stderr)
        return {**row, "error": last[0] if last else f"exit {done.returncode}"}
    return {**row, **last_epoch(args.results_dir / run_id / "metrics.parquet")}


def last_epoch(path: Path) -> dict:
    """The last epoch's time (the slowest rank's) and each rank's peak resident set in it (MB)."""
    frame = pd.read_parquet(path)
    frame = frame[frame["iteration"] == EPOCH_LEVEL]
    train = frame[frame["phase"] == "train"]
    last = train[train["epoch"] == train["epoch"].max()]
    times = last[last["metric"] == "epoch_time_s"]["value"]
    rss = last[last["metric"] == "peak_rss_bytes"].dropna(subset=["value"]).sort_values("rank")
    switch = frame[frame["metric"] == "switch_epoch"]["value"]
    per_rank = "/".join(f"{v / 2**20:.0f}" for v in rss["value"])
    return {
        "epoch": int(last["epoch"].max()),
        "plan_from_epoch": int(switch.iloc[0]) if not switch.empty else 0,
        "epoch_time_s": float(times.max()) if not times.empty else float("nan"),
        "peak_rss_mb": float(rss["value"].max() / 2**20) if not rss.empty else float("nan"),  # the largest rank's
        "peak_rss_mb_per_rank": per_rank,
        "error": "",
    }


def growth_exponent(frame: pd.DataFrame, x: str, column: str) -> float:
    """The slope of log(column) against log(x) by least squares: 1.0 is linear growth."""
    ok = frame[column].notna() & (frame[column] > 0)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(frame.loc[ok, x]), np.log(frame.loc[ok, column]), 1)[0])


def axis_rows(table: pd.DataFrame, axis: str, args: argparse.Namespace) -> pd.DataFrame:
    """The rows of one axis: the nodes at the fixed snapshot count, or the snapshots at the fixed node count."""
    fixed = ("snapshots", args.base_snapshots) if axis == "nodes" else ("nodes", args.base_nodes)
    return table[table[fixed[0]] == fixed[1]].sort_values(axis)


def exponents(table: pd.DataFrame, args: argparse.Namespace) -> pd.DataFrame:
    """Per strategy and axis, the exponents over every size and over the two largest (where the data outweighs the libraries)."""
    rows = []
    for axis in ("nodes", "snapshots"):
        for sched, group in axis_rows(table, axis, args).groupby("sched", sort=False):
            top = group.dropna(subset=["epoch_time_s"]).tail(2)
            rows.append({
                "sched": sched, "axis": axis, "points": int(group["epoch_time_s"].notna().sum()),
                "time_exponent": growth_exponent(group, axis, "epoch_time_s"),
                "memory_exponent": growth_exponent(group, axis, "peak_rss_mb"),
                "time_exponent_top": growth_exponent(top, axis, "epoch_time_s"),
                "memory_exponent_top": growth_exponent(top, axis, "peak_rss_mb"),
            })  # fmt: skip
    return pd.DataFrame(rows)


def plot(table: pd.DataFrame, args: argparse.Namespace, out: Path) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    fixed = {"nodes": f"{args.base_snapshots} snapshots", "snapshots": f"{args.base_nodes:,} nodes"}
    for row, axis in enumerate(("nodes", "snapshots")):
        rows = axis_rows(table, axis, args)
        for ax, column, label in ((axes[row, 0], "epoch_time_s", "seconds per epoch"), (axes[row, 1], "peak_rss_mb", "peak resident set per rank (MB)")):
            for sched, group in rows.groupby("sched", sort=False):
                group = group.dropna(subset=[column])
                if not group.empty:
                    ax.loglog(group[axis], group[column], "o-", label=f"{sched} (slope {growth_exponent(group, axis, column):.2f})")
            sizes = sorted(rows[axis].unique())
            ax.set_xticks(sizes, [f"{s / 1000:g}k" if axis == "nodes" else str(s) for s in sizes])
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_xlabel(f"{axis} (at {fixed[axis]})")
            ax.set_ylabel(label)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    fig.suptitle(f"2 CPU ranks, synthetic graph at average degree {args.avg_degree:g}, epoch {args.epochs} of {args.epochs}")
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scheds", default="psg,greedy,flare,distdy")
    parser.add_argument("--nodes", default="1000,3000,10000,30000,100000", help="node counts, at --base-snapshots")
    parser.add_argument("--snapshots", default="24,48,120,240", help="snapshot counts, at --base-nodes")
    parser.add_argument("--base-nodes", type=int, default=3_000, help="the node count of the snapshot axis")
    parser.add_argument("--base-snapshots", type=int, default=24, help="the snapshot count of the node axis")
    parser.add_argument("--avg-degree", type=float, default=6.0, help="edges per node in every snapshot")
    parser.add_argument("--epochs", type=int, default=2, help="the last one is measured")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per run; a run over it keeps its row without numbers")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--results-dir", type=Path, default=Path("results/scaling"))
    parser.add_argument("--extra", nargs="*", default=[], help="more overrides for every run")
    args = parser.parse_args(argv)
    sizes = {(int(n), args.base_snapshots) for n in args.nodes.split(",")} | {(args.base_nodes, int(t)) for t in args.snapshots.split(",")}
    order = sorted(sizes, key=lambda size: (size[0] * size[1], size))  # smallest graph first
    args.results_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for nodes, snapshots in order:
        for sched in args.scheds.split(","):
            rows.append(run(sched, nodes, snapshots, args))
            pd.DataFrame(rows).to_csv(args.results_dir / "scaling.csv", index=False)  # a stopped sweep keeps its rows
    table = pd.DataFrame(rows)
    fits = exponents(table, args)
    fits.to_csv(args.results_dir / "scaling_exponents.csv", index=False)
    plot(table, args, args.results_dir / "scaling.png")
    with pd.option_context("display.width", 200, "display.float_format", "{:.4g}".format):
        print(table.drop(columns=["model"]).to_string(index=False))
        print()
        print(fits.to_string(index=False))
    print(f"\nwritten {args.results_dir / 'scaling.csv'}, scaling_exponents.csv and scaling.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
