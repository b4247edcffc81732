"""REAL's ablation (figure 13): PSG, then + type I, + type II, + REAL-G, + REAL-L, as cumulative speedups.

Reads the runs table the sweeps wrote (see `make table-ablation`: ABLATION_ROUNDS sweeps, one
after another, so every step is run once per round and the steps alternate), writes a tidy CSV
beside it and prints one row per (dataset, model, step): the median over rounds of each run's
steady epoch time, its spread (the rounds' lowest and highest), the speedup over PSG, the
graph-convolution FLOPs per epoch and their reduction against PSG.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

STEPS = {"psg": "PSG", "psg_type1": "+ type I", "psg_type12": "+ type II", "real_g": "+ REAL-G", "real_l": "+ REAL-L"}


def build(results_dir: Path) -> pd.DataFrame:
    runs_path = results_dir / "runs.parquet"
    if not runs_path.exists():
        raise SystemExit(f"no runs table at {runs_path}: run the sweep first")
    runs = pd.read_parquet(runs_path)
    runs = runs[(runs["status"] == "ok") & runs["sched"].isin(list(STEPS))].copy()
    if runs.empty:
        raise SystemExit(f"no completed ablation runs in {runs_path}")
    runs["step"] = pd.Categorical(runs["sched"].map(STEPS), list(STEPS.values()))
    keys = ["dataset", "model", "world_size"]
    grouped = runs.groupby([*keys, "step", "sched"], observed=True)
    table = grouped[["epoch_time_s", "conv_flops_per_epoch", "imbalance_ratio", "final_train_loss"]].median().reset_index()
    table["rounds"] = grouped.size().to_numpy()
    table["epoch_time_min_s"] = grouped["epoch_time_s"].min().to_numpy()
    table["epoch_time_max_s"] = grouped["epoch_time_s"].max().to_numpy()
    baseline = table[table["sched"] == "psg"].set_index(keys)
    index = pd.MultiIndex.from_frame(table[keys])
    table["speedup_vs_psg"] = baseline["epoch_time_s"].reindex(index).to_numpy() / table["epoch_time_s"].to_numpy()
    table["flops_reduction_vs_psg"] = baseline["conv_flops_per_epoch"].reindex(index).to_numpy() / table["conv_flops_per_epoch"].to_numpy()
    return table.drop(columns="sched").sort_values([*keys, "step"]).reset_index(drop=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results_dir", type=Path)
    args = parser.parse_args(argv)
    table = build(args.results_dir)
    out = args.results_dir / "table_ablation.csv"
    table.to_csv(out, index=False)
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.3g}".format):
        print(table.to_string(index=False))
    print(f"\nwritten {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
