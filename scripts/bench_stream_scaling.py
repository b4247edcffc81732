"""Memory-based models on growing streams: seconds per epoch and peak memory from 20,000 to REDDIT's 672,447 events.

Runs `dygsched run sched=single` (one process, TGL's loop) once per model and stream size on the
generated REDDIT-shaped stream (`dataset=bipartite` with REDDIT's users, items, repeat ratio and
172 edge features, cut to each number of events), then writes a table (CSV) and a log-log plot
(PNG) of the training epoch time and the process's peak resident set against the events, with the
fitted growth exponent per model (1.0 is linear). Runs are made smallest first, the models
alternated at each size; a larger size starts only after all models finished the smaller one.

    python scripts/bench_stream_scaling.py                                  # tgn, jodie, apan; 4 sizes
    python scripts/bench_stream_scaling.py --models tgn --events 20000,157474 --epochs 2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

REDDIT_SHAPE = ["dataset=bipartite", "dataset.edge_dim=172", "dataset.repeat_probability=0.5"]  # and REDDIT's users and items


def run(model: str, events: int, args: argparse.Namespace) -> dict:
    run_id = f"stream-scaling-{model}-{events}"
    overrides = [
        *REDDIT_SHAPE,
        f"dataset.num_users={args.users}",
        f"dataset.num_items={args.items}",
        f"dataset.num_events={events}",
        f"model={model}",
        "sched=single",
        "world_size=1",
        f"epochs={args.epochs}",
        f"seed={args.seed}",
        f"results_dir={args.results_dir}",
        f"run_id={run_id}",
        "overwrite=true",  # a rerun replaces this script's earlier run (moved aside)
        "progress=false",
        *args.extra,
    ]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "dygsched", "run", *overrides], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench_stream_scaling: {model} at {events} events failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    summary = json.loads((args.results_dir / run_id / "summary.json").read_text())
    return {
        "model": model,
        "events": events,
        "epoch_time_s": summary["epoch_time_s"],
        "peak_rss_mb": (summary.get("peak_rss_bytes") or float("nan")) / 2**20,
        "test_ap": (summary.get("eval") or {}).get("value"),
        "wall_s": time.perf_counter() - start,
    }


def growth_exponent(frame: pd.DataFrame, column: str) -> float:
    """The slope of log(column) against log(events): 1.0 is linear growth."""
    ok = frame[column] > 0
    return float(np.polyfit(np.log(frame.loc[ok, "events"]), np.log(frame.loc[ok, column]), 1)[0]) if ok.sum() >= 2 else float("nan")


def plot(table: pd.DataFrame, out: Path) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, column, label in ((axes[0], "epoch_time_s", "seconds per training epoch"), (axes[1], "peak_rss_mb", "peak resident set (MB)")):
        for model, rows in table.groupby("model"):
            ax.loglog(rows["events"], rows[column], "o-", label=f"{model} (slope {growth_exponent(rows, column):.2f})")
        sizes = sorted(table["events"].unique())
        ax.set_xticks(sizes, [f"{int(e / 1000)}k" for e in sizes])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("events in the stream")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle("One process, REDDIT-shaped generated stream (172 edge features)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="tgn,jodie,apan")
    parser.add_argument("--events", default="20000,80000,157474,672447")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--users", type=int, default=10_000, help="REDDIT's 10,000")
    parser.add_argument("--items", type=int, default=984, help="REDDIT's 984")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--results-dir", type=Path, default=Path("results/stream_scaling"))
    parser.add_argument("--extra", nargs="*", default=[], help="more overrides for every run")
    args = parser.parse_args(argv)
    sizes = sorted(int(e) for e in args.events.split(","))
    rows = [run(model, events, args) for events in sizes for model in args.models.split(",")]
    table = pd.DataFrame(rows)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.results_dir / "stream_scaling.csv", index=False)
    plot(table, args.results_dir / "stream_scaling.png")
    with pd.option_context("display.width", 200, "display.float_format", "{:.4g}".format):
        print(table.to_string(index=False))
    for model, group in table.groupby("model"):
        print(f"{model}: epoch time grows as events^{growth_exponent(group, 'epoch_time_s'):.2f}, "
              f"peak memory as events^{growth_exponent(group, 'peak_rss_mb'):.2f}")
    print(f"\nwritten {args.results_dir / 'stream_scaling.csv'} and stream_scaling.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
