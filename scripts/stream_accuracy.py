"""Link-prediction accuracy of TGN, JODIE and APAN a user can check: AP and AUC, transductive and
inductive, over seeds.

One `dygsched run sched=single` per dataset, model and seed, with DyGLib's inductive split
(`split.new_nodes=0.1`: 10% of the later nodes hidden from training) and one uniform negative per
event (TGL's rule, docs/models.md). Each run's test metrics are read at the epoch of its best
validation AP (model selection on validation, as DyGLib does), then averaged over the seeds with
their standard deviation. Runs already in the results folder are reused (``--reuse``).

    python scripts/stream_accuracy.py                                   # collegemsg (10 epochs), reddit_like (1), 3 seeds
    python scripts/stream_accuracy.py --datasets collegemsg --epochs 10 --seeds 0,1,2 --jobs 2
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

METRICS = {("ap", "transductive"): "ap", ("auc", "transductive"): "auc", ("ap", "inductive"): "ap_inductive", ("auc", "inductive"): "auc_inductive"}


def run_id(dataset: str, model: str, seed: int) -> str:
    return f"accuracy-{dataset}-{model}-seed{seed}"


def epochs_per_dataset(spec: str, datasets: list[str]) -> dict[str, int]:
    """``"3"``: every dataset 3 epochs; ``"a=10,b=1"``: per dataset (a dataset not named: 3)."""
    if "=" not in spec:
        epochs = {d: int(spec) for d in datasets}
    else:
        named = {name: int(value) for name, value in (part.split("=", 1) for part in spec.split(","))}
        epochs = {d: named.get(d, 3) for d in datasets}
    if min(epochs.values()) < 1:
        raise ValueError("--epochs must be at least 1")
    return epochs


def run(dataset: str, model: str, seed: int, args: argparse.Namespace) -> Path:
    folder = args.results_dir / run_id(dataset, model, seed)
    if args.reuse and (folder / "metrics.parquet").exists():
        return folder
    overrides = [
        f"dataset={dataset}", f"model={model}", "sched=single", "world_size=1", f"epochs={args.epochs_of[dataset]}", f"seed={seed}",
        f"split.new_nodes={args.new_nodes}", f"results_dir={args.results_dir}", f"run_id={run_id(dataset, model, seed)}",
        "overwrite=true", "progress=false", "checkpoint=false", *args.extra,
    ]  # fmt: skip
    # parallel runs share the cores: one thread each, or they oversubscribe them
    env = {**os.environ, "OMP_NUM_THREADS": "1"} if args.jobs > 1 else None
    done = subprocess.run([sys.executable, "-m", "dygsched", "run", *overrides], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"stream_accuracy: {dataset}/{model}/seed {seed} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    print(f"  {dataset} {model} seed {seed} done", flush=True)
    return folder


def selected(folder: Path) -> dict[str, float]:
    """Test metrics at the epoch whose validation AP is highest (the first such epoch)."""
    metrics = pd.read_parquet(folder / "metrics.parquet")
    epochs = metrics[metrics["iteration"] < 0]  # epoch-level rows (iterations have their index)
    val_ap = epochs[(epochs["phase"] == "val") & (epochs["metric"] == "ap")].groupby("epoch")["value"].first()
    best = int(val_ap.idxmax())
    test = epochs[(epochs["phase"] == "test") & (epochs["epoch"] == best)].groupby("metric")["value"].first()
    time = epochs[(epochs["phase"] == "train") & (epochs["metric"] == "epoch_time_s")]["value"].median()
    return {**{name: float(test.get(column, np.nan)) for name, column in METRICS.items()}, "epoch": best, "epoch_time_s": float(time),
            "inductive_share": float(test.get("inductive_share", np.nan))}  # fmt: skip


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="collegemsg,reddit_like")
    parser.add_argument("--models", default="tgn,jodie,apan")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--epochs", default="collegemsg=10,reddit_like=1", help="epochs for every dataset (3), or per dataset (NAME=3,...)")
    parser.add_argument("--new-nodes", type=float, default=0.1, help="DyGLib's share of nodes hidden from training")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (each on one thread when more than 1)")
    parser.add_argument("--reuse", action="store_true", help="keep runs already in the results folder")
    parser.add_argument("--results-dir", type=Path, default=Path("results/stream_accuracy"))
    parser.add_argument("--extra", nargs="*", default=[], help="more overrides for every run")
    args = parser.parse_args(argv)
    datasets = args.datasets.split(",")
    try:
        args.epochs_of = epochs_per_dataset(args.epochs, datasets)
    except ValueError as exc:
        parser.error(str(exc))
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    seeds = [int(s) for s in args.seeds.split(",")]
    cases = [(d, m, s) for d in datasets for m in args.models.split(",") for s in seeds]
    with ThreadPoolExecutor(args.jobs) as pool:
        folders = list(pool.map(lambda case: run(*case, args), cases))
    rows = [{"dataset": d, "model": m, "seed": s, **selected(f)} for (d, m, s), f in zip(cases, folders, strict=True)]
    runs = pd.DataFrame(rows)
    long = runs.melt(id_vars=["dataset", "model", "seed"], value_vars=list(METRICS), var_name="key")
    long[["metric", "setting"]] = pd.DataFrame(long["key"].tolist(), index=long.index)
    table = (
        long.groupby(["dataset", "model", "setting", "metric"], sort=False)["value"]
        .agg(mean="mean", std="std", seeds="count")
        .reset_index()
    )
    table["epochs"] = table["dataset"].map(args.epochs_of)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    runs.rename(columns={k: f"{k[0]}_{k[1]}" for k in METRICS}).to_csv(args.results_dir / "stream_accuracy_runs.csv", index=False)
    table.to_csv(args.results_dir / "stream_accuracy.csv", index=False)
    with pd.option_context("display.width", 200, "display.float_format", "{:.4f}".format):
        print(table.to_string(index=False))
    print(f"\nwritten {args.results_dir / 'stream_accuracy.csv'} and stream_accuracy_runs.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
