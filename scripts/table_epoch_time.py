"""Epoch time and imbalance ratio per strategy, model and dataset (DyGNeX table 4 shape).

Reads the runs table a sweep wrote (see `make table-epoch-time`), writes a tidy CSV beside it
and prints the pivot: one row per (dataset, model), one column pair per strategy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ORDER = ["psg", "esdg", "blad", "dygnex_g", "dygnex_l", "real_g_paper", "greedy", "ilp", "real"]


def build(results_dir: Path) -> pd.DataFrame:
    runs_path = results_dir / "runs.parquet"
    if not runs_path.exists():
        raise SystemExit(f"no runs table at {runs_path}: run the sweep first")
    runs = pd.read_parquet(runs_path)
    runs = runs[runs["status"] == "ok"]
    columns = ["dataset", "model", "sched", "world_size", "epoch_time_s", "imbalance_ratio", "final_train_loss", "eval.metric", "eval.value"]
    table = runs[columns].copy()
    psg = table[table["sched"] == "psg"].set_index(["dataset", "model", "world_size"])["epoch_time_s"]
    table["speedup_vs_psg"] = [
        psg.get((d, m, w), float("nan")) / t for d, m, w, t in zip(table["dataset"], table["model"], table["world_size"], table["epoch_time_s"])
    ]
    table["sched"] = pd.Categorical(table["sched"], [s for s in ORDER if s in set(table["sched"])] + sorted(set(table["sched"]) - set(ORDER)))
    return table.sort_values(["dataset", "model", "sched"]).reset_index(drop=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results_dir", type=Path)
    args = parser.parse_args(argv)
    table = build(args.results_dir)
    out = args.results_dir / "table_epoch_time.csv"
    table.to_csv(out, index=False)
    pivot = table.pivot_table(index=["dataset", "model"], columns="sched", values=["epoch_time_s", "imbalance_ratio"], observed=True)
    with pd.option_context("display.width", 200, "display.max_columns", 40, "display.float_format", "{:.3f}".format):
        print(pivot.swaplevel(0, 1, axis=1).sort_index(axis=1, level=0, sort_remaining=False))
    print(f"\nwritten {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
