"""table-stream-accuracy: TGN, JODIE and APAN, test AP and AUC, transductive and inductive, over seeds
(DyGLib's protocol)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dygsched.errors import DygschedError
from dygsched.metrics.early_stop import best_epoch
from dygsched.metrics.seeds import over_seeds
from dygsched.paper.bench.common import EPOCH_LEVEL, SECTION
from dygsched.paper.common import completed_runs, table_named, write_table
from dygsched.paper.target import PaperTarget, Regime, Sweep, Tables

STREAM_ACCURACY_DIR = "stream_accuracy"
STREAM_ACCURACY_CSV = f"{STREAM_ACCURACY_DIR}/stream_accuracy.csv"
STREAM_ACCURACY_RUNS_CSV = f"{STREAM_ACCURACY_DIR}/stream_accuracy_runs.csv"  # each run's selected numbers, beside the table
ACCURACY_METRICS = {  # (measure, setting) -> the test metric's name in metrics.parquet
    ("ap", "transductive"): "ap",
    ("auc", "transductive"): "auc",
    ("ap", "inductive"): "ap_inductive",
    ("auc", "inductive"): "auc_inductive",
}


def _accuracy_runs(dataset: str, epochs: int, seeds: str, *sizes: str) -> tuple[str, ...]:
    """Every model and seed on one dataset, one process each, with DyGLib's inductive split (10% of
    the later nodes hidden from training) and one uniform negative per event (TGL's rule)."""
    return (
        f"dataset={dataset}",
        "model=tgn,jodie,apan",
        "sched=single",
        "world_size=1",
        f"epochs={epochs}",
        f"seed={seeds}",
        "split.new_nodes=0.1",
        "checkpoint=false",
        *sizes,
    )


STREAM_ACCURACY_SWEEP = Sweep(
    folder=STREAM_ACCURACY_DIR,
    runs=(_accuracy_runs("collegemsg", 10, "0,1,2"), _accuracy_runs("reddit_like", 1, "0,1,2")),
    smoke=(_accuracy_runs("bipartite", 1, "0", "dataset.num_users=200", "dataset.num_items=40", "dataset.num_events=3000"),),
)


def selected_epoch(metrics: pd.DataFrame) -> dict[str, float]:
    """One run's test metrics at the epoch of its best validation AP (the first such epoch: model
    selection on validation, as DyGLib does), that epoch, and its median training epoch time."""
    epochs = metrics[metrics["iteration"] == EPOCH_LEVEL]
    best = best_epoch(metrics, "ap", "max")
    if best is None:
        raise DygschedError("table-stream-accuracy: a run recorded no validation AP to select its epoch by")
    test = epochs[(epochs["phase"] == "test") & (epochs["epoch"] == best)].groupby("metric")["value"].first()
    train_time = epochs[(epochs["phase"] == "train") & (epochs["metric"] == "epoch_time_s")]["value"].median()
    return {
        **{f"{measure}_{setting}": float(test.get(column, np.nan)) for (measure, setting), column in ACCURACY_METRICS.items()},
        "epoch": best,
        "epoch_time_s": float(train_time),
        "inductive_share": float(test.get("inductive_share", np.nan)),
    }


def accuracy_table(runs: pd.DataFrame, epochs_of: dict[str, int]) -> pd.DataFrame:
    """Each (dataset, model, setting, measure): the mean and standard deviation over the seeds."""
    named = {f"{measure}_{setting}": (measure, setting) for measure, setting in ACCURACY_METRICS}
    long = runs.melt(id_vars=["dataset", "model", "seed"], value_vars=list(named), var_name="key")
    long["metric"] = long["key"].map(lambda key: named[key][0])
    long["setting"] = long["key"].map(lambda key: named[key][1])
    table = over_seeds(long, ["dataset", "model", "setting", "metric"]).drop(columns="runs")
    table["epochs"] = table["dataset"].map(epochs_of)
    return table


def build_stream_accuracy(results: Path) -> None:
    """AP and AUC, transductive and inductive, of each model on each dataset: each run read at its
    best validation epoch, then the mean and standard deviation over its seeds."""
    folder = results / STREAM_ACCURACY_DIR
    runs = completed_runs(folder)
    rows = [
        {
            "dataset": run.dataset,
            "model": run.model,
            "seed": int(run.seed),
            **selected_epoch(pd.read_parquet(folder / run.run_id / "metrics.parquet")),
        }
        for run in runs.itertuples()
    ]
    per_run = pd.DataFrame(rows)
    write_table(per_run, results / STREAM_ACCURACY_RUNS_CSV)
    epochs_of = {str(dataset): int(epochs) for dataset, epochs in runs.groupby("dataset")["epochs"].first().items()}
    write_table(accuracy_table(per_run, epochs_of), results / STREAM_ACCURACY_CSV)


def read_stream_accuracy(tables: Tables) -> str:
    table = table_named(tables)
    parts = []
    for (dataset, setting), rows in table[table["metric"] == "ap"].groupby(["dataset", "setting"], sort=False):
        shown = ", ".join(
            f"{r.model} {r['mean']:.3f}" + (f" ± {r['std']:.3f}" if r["seeds"] > 1 else "") for _, r in rows.iterrows()
        )
        parts.append(f"{dataset} {setting}: {shown}")
    return "test AP at the best validation epoch, mean ± std over seeds: " + "; ".join(parts)


STREAM_ACCURACY = PaperTarget(
    name="table-stream-accuracy",
    paper=SECTION.key,
    title="TGN, JODIE and APAN: test AP and AUC, transductive and inductive, over seeds",
    reproduces="(no paper table; DyGLib's protocol)",
    outputs=(STREAM_ACCURACY_CSV,),
    repeats="one run per model and seed; test at the best validation epoch; mean and standard deviation over 3 seeds",
    minutes=45,
    build=build_stream_accuracy,
    reading=read_stream_accuracy,
    regime=Regime(
        paper="",
        ours="TGN, JODIE and APAN in one process on CollegeMsg (10 epochs) and the REDDIT-sized stream (1 epoch), 3 seeds, "
        "DyGLib's inductive split (10% of later nodes hidden), one uniform negative per event",
    ),
    sweep=STREAM_ACCURACY_SWEEP,
)
