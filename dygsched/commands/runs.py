"""``dygsched runs``: browse ``results/runs.parquet`` without writing pandas.

dygsched runs                              every run, newest last, the headline columns
dygsched runs sched=greedy model=tgcn      only the runs whose columns have those values
dygsched runs --compare RUN_A RUN_B        two runs side by side (ids or unique prefixes)
dygsched runs --columns run_id,epoch_time_s --results results/table_epoch_time
dygsched runs --plot loss sched=sven           a metric over the epochs of the selected runs, as a PNG
dygsched runs --aggregate seed model=tgn       runs that differ only in seed: mean ± std per metric, and the seeds
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from dygsched.arguments import CommandParser
from dygsched.errors import ConfigError, DataError
from dygsched.metrics.runs_table import RUNS_TABLE, read_runs, runs_from_folders

HEADLINE = (
    "run_id",
    "status",
    "dataset",
    "model",
    "sched",
    "world_size",
    "epochs_completed",
    "optimizer_steps_per_epoch",
    "units_per_step",
    "epoch_time_s",
    "imbalance_ratio",
    "final_train_loss",
    "eval.metric",
    "eval.value",
)


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(prog="dygsched runs", description="List and compare the runs in a results folder.")
    parser.add_argument(
        "filters", nargs="*", metavar="KEY=VALUE", help="keep runs whose column KEY equals VALUE (e.g. sched=greedy)"
    )
    parser.add_argument("--results", default="results", help="the results folder holding runs.parquet (default: results)")
    parser.add_argument(
        "--compare", nargs=2, metavar=("A", "B"), help="show two runs side by side, every column (ids or unique prefixes)"
    )
    parser.add_argument("--columns", default=None, help="comma-separated columns to show (default: the headline figures)")
    parser.add_argument("--plot", metavar="METRIC", help="draw METRIC over the epochs of the selected runs into a PNG")
    parser.add_argument("--phase", default=None, help="with --plot: train, val or test (default: val, else train, else test)")
    parser.add_argument("--out", default=None, help="with --plot: the PNG to write (default: <results>/runs_<metric>.png)")
    parser.add_argument(
        "--aggregate",
        choices=("seed",),
        default=None,
        help="seed: one row per group of runs whose configs differ only in seed (and bookkeeping), "
        "each metric as mean ± std over the seeds that have it",
    )
    return parser


# What names a group of seeds in --aggregate's table (each group's configs are equal, so these are too).
GROUP_COLUMNS = ("dataset", "model", "sched", "world_size", "epochs", "eval.metric")


def run_configs(results: Path, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Each run's resolved ``config.yaml``; a run without a readable one gets a config of its own id
    (it is then a group alone: nothing says it differs only in seed)."""
    from omegaconf import OmegaConf

    configs: dict[str, dict[str, Any]] = {}
    for run_id in run_ids:
        try:
            loaded = OmegaConf.to_container(OmegaConf.load(results / run_id / "config.yaml"), resolve=False)
        except Exception:  # missing or unreadable: not comparable
            loaded = None
        configs[run_id] = {str(k): v for k, v in loaded.items()} if isinstance(loaded, dict) else {"unreadable config": run_id}
    return configs


def aggregate_seeds(runs: pd.DataFrame, results: Path, metrics: list[str]) -> pd.DataFrame:
    """One row per group of runs that differ only in seed: the group's columns, the seeds, and each
    metric as mean ± std over the seeds that have it (``dygsched.metrics.seeds``)."""
    from dygsched.metrics.seeds import over_seeds, seed_groups, shown

    groups = seed_groups(run_configs(results, [str(r) for r in runs["run_id"]]))
    runs = runs.assign(group=[groups[str(r)] for r in runs["run_id"]])
    numeric = [m for m in metrics if pd.api.types.is_numeric_dtype(runs[m])]
    long = runs.melt(id_vars=["group"], value_vars=numeric, var_name="metric")
    stats = over_seeds(long, ["group", "metric"]) if numeric else pd.DataFrame()
    rows = []
    for group, members in runs.groupby("group", sort=True):
        row: dict[str, Any] = {c: members[c].iloc[0] for c in GROUP_COLUMNS if c in members.columns}
        row["seeds"] = len(members)
        if "seed" in members.columns:
            row["seed"] = ",".join(str(int(s)) if not pd.isna(s) else "?" for s in members["seed"])
        for metric in numeric:
            cell = stats[(stats["group"] == group) & (stats["metric"] == metric)].iloc[0]
            row[metric] = shown(float(cell["mean"]), float(cell["std"]), int(cell["seeds"]), int(cell["runs"]))
        rows.append(row)
    return pd.DataFrame(rows)


def parse_filters(filters: list[str], columns: pd.Index) -> list[tuple[str, str]]:
    parsed = []
    for item in filters:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"a filter is KEY=VALUE, got {item!r}")
        if key not in columns:
            raise ConfigError(f"unknown column {key!r} (the runs table has: {', '.join(columns)})")
        parsed.append((key, value))
    return parsed


def matches(value: Any, wanted: str) -> bool:
    """A cell equals ``wanted`` as text, or as a number (``world_size=2`` matches 2 and 2.0)."""
    if isinstance(value, float) and math.isnan(value):
        return wanted.lower() in ("nan", "none", "null")
    if str(value) == wanted:
        return True
    try:
        return float(value) == float(wanted)
    except (TypeError, ValueError):
        return False


def select(runs: pd.DataFrame, filters: list[tuple[str, str]]) -> pd.DataFrame:
    keep = pd.Series(True, index=runs.index)
    for key, wanted in filters:
        keep &= runs[key].map(lambda v, w=wanted: matches(v, w))
    return runs[keep]


def find_run(runs: pd.DataFrame, key: str) -> pd.Series:
    exact = runs[runs["run_id"] == key]
    found = exact if not exact.empty else runs[runs["run_id"].astype(str).str.startswith(key)]
    if found.empty:
        raise ConfigError(f"no run {key!r} in the runs table")
    if len(found) > 1:
        raise ConfigError(f"{key!r} matches {len(found)} runs: {', '.join(found['run_id'].astype(str).head(5))}")
    return found.iloc[0]


def compare(runs: pd.DataFrame, first: str, second: str) -> pd.DataFrame:
    """Every column of the two runs, one row per column; ``differs`` marks the columns that differ."""
    a, b = find_run(runs, first), find_run(runs, second)
    table = pd.DataFrame({str(a["run_id"]): a, str(b["run_id"]): b})
    table["differs"] = ["" if _same(x, y) else "*" for x, y in zip(a, b, strict=True)]
    return table


def _same(x: Any, y: Any) -> bool:
    missing = [isinstance(v, float) and math.isnan(v) or v is None for v in (x, y)]
    return all(missing) or (not any(missing) and x == y)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    path = Path(args.results) / RUNS_TABLE
    if not path.is_file():
        raise ConfigError(f"no runs table at {path} (train something with `dygsched run`, or pass --results)")
    try:
        runs = read_runs(Path(args.results))
    except DataError as exc:
        print(f"dygsched: warning: {exc}; listing the runs from their folders instead", file=sys.stderr)
        runs = runs_from_folders(Path(args.results))
    if args.compare:
        print(compare(runs, *args.compare).to_string())
        return 0
    runs = select(runs, parse_filters(args.filters, runs.columns))
    if args.columns:
        columns = [c.strip() for c in args.columns.split(",") if c.strip()]
        unknown = [c for c in columns if c not in runs.columns]
        if unknown:
            raise ConfigError(f"unknown column(s) {', '.join(unknown)} (the runs table has: {', '.join(runs.columns)})")
    else:
        columns = [c for c in HEADLINE if c in runs.columns]
    if runs.empty:
        print("no run matches")
        return 0
    if args.aggregate == "seed":
        metrics = [c for c in columns if c not in (*GROUP_COLUMNS, "run_id", "status", "seed")]
        if not args.columns:  # every test metric of the reported epoch beside the headline figures
            metrics += [c for c in runs.columns if c.startswith("test_metrics.") and c not in metrics]
        table = aggregate_seeds(runs, Path(args.results), metrics)
        with pd.option_context("display.width", 200, "display.max_columns", None, "display.max_colwidth", 60):
            print(table.to_string(index=False))
        print(f"{len(table)} group(s) of {len(runs)} run(s); mean ± std over the seeds that have each metric")
        return 0
    if args.plot:
        from dygsched.metrics.run_plot import plot_runs

        out = Path(args.out) if args.out else Path(args.results) / f"runs_{args.plot}.png"
        written, notes = plot_runs(runs, Path(args.results), args.plot, args.phase, out)
        for note in notes:
            print(f"dygsched: note: left out {note}", file=sys.stderr)
        print(f"{args.plot} of {len(runs) - len(notes)} run(s) drawn in {written}")
        return 0
    with pd.option_context("display.width", 200, "display.max_columns", None, "display.max_colwidth", 60):
        print(runs[columns].to_string(index=False))
    print(f"{len(runs)} run(s); folders under {Path(args.results)}/<run_id>")
    return 0
