"""table-node-tasks: node property prediction on event streams, each figure beside its floor.

Dynamic node classification under DyGLib's protocol (``train_node_classification.py`` at its
commit 3aacc36): TGN, JODIE and APAN trained by link prediction first (one process, a batch of
200, the stream split by time 70/15/15), then DyGLib's classifier trained on each one's frozen
model (``node_task.init_from``), early-stopped on validation AUC, its test AUC at the best
validation epoch; on the generated Wikipedia- and REDDIT-sized labelled streams, 3 seeds, beside
the persistent forecast and the moving average of the same labels (TGB's floors). Node affinity
under TGB's protocol (its ``examples/nodeproppred``): the models trained end to end on the
affinity loss (``node_task.backbone=fine_tune``, TGB's optimiser holds the memory, the embedding
and the decoder), NDCG@10 on a generated ``tgbn-trade``-like stream beside the same two floors.
Where JODIE's labelled Wikipedia and REDDIT files are on disk (``dygsched datasets fetch
wikipedia reddit``), the full build runs the same protocol on them too and sets DyGLib's
published AUC (its Table 15, ``published/dyglib.csv``) beside ours; TGB's leaderboard figures for
the real ``tgbn-trade`` are in ``published/tgb.csv``, for reference.

A second table gives what the classifier costs: its forward pass per training event
(``node_head_s``), against the whole epoch of the frozen run and of the link-prediction run before it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dygsched.errors import DygschedError
from dygsched.paper.bench.common import ACCURACY_SECTION, EPOCH_LEVEL
from dygsched.paper.common import table_named, write_table
from dygsched.paper.published import rows_of
from dygsched.paper.target import Overrides, PaperTarget, Regime, Settings, Sweep, Tables

NODE_TASKS_NAME = "table-node-tasks"
NODE_TASKS_DIR = "node_tasks"
NODE_TASKS_REAL_DIR = "node_tasks_real"
NODE_TASKS_CSV = f"{NODE_TASKS_DIR}/node_tasks.csv"
NODE_TASKS_COST_CSV = f"{NODE_TASKS_DIR}/node_tasks_cost.csv"
MODELS = "tgn,jodie,apan"
FLOORS = "persistent,moving_average"
LINK_RUN = "link-${dataset.name}-${model.name}-${seed}"  # each dataset, model and seed's link run, named so its node run finds it
# DyGLib's protocol: one process, a batch of 200, split by time 70/15/15
DYGLIB = ("sched=single", "world_size=1", "sched.batch_size=200", "split.by=time", "split.train=0.7", "split.val=0.15")
METRIC = {"classification": "auc", "affinity": "ndcg@10"}
PUBLISHED_DATASETS = {"wikipedia": "Wikipedia", "reddit": "Reddit", "tgbn": "tgbn-trade"}  # real streams: the paper's names


def classification_runs(
    dataset: str,
    seeds: str,
    link_epochs: int,
    node_epochs: int,
    patience: int,
    *sizes: str,
    learned: str = MODELS,
    models: Overrides = (),
) -> tuple[Overrides, ...]:
    """Link prediction, then the classifier on the frozen model, for each of the ``learned`` models and
    each seed; the floors. ``sizes``: the dataset's settings; ``models``: the learned models' (the floors have none)."""
    common = (f"dataset={dataset}", f"seed={seeds}", *DYGLIB, *sizes)
    return (
        (*common, f"model={learned}", *models, f"epochs={link_epochs}", f"run_id={LINK_RUN}"),
        (
            *common,
            f"model={learned}",
            *models,
            "task=node",
            f"node_task.init_from={LINK_RUN}",
            f"epochs={node_epochs}",
            "early_stop.metric=val.auc",
            f"early_stop.patience={patience}",
            "checkpoint=false",
        ),
        (*common, f"model={FLOORS}", "task=node", "epochs=1", "checkpoint=false"),
    )


def affinity_runs(
    dataset: str, seeds: str, epochs: int, patience: int, *sizes: str, learned: str = MODELS, models: Overrides = ()
) -> tuple[Overrides, ...]:
    """TGB's node affinity: each of the ``learned`` models trained end to end on the affinity loss; the floors."""
    common = (f"dataset={dataset}", f"seed={seeds}", *DYGLIB, "task=node", "checkpoint=false", *sizes)
    return (
        (
            *common,
            f"model={learned}",
            *models,
            "node_task.backbone=fine_tune",
            f"epochs={epochs}",
            "early_stop.metric='val.ndcg@10'",
            f"early_stop.patience={patience}",
        ),
        (*common, f"model={FLOORS}", "epochs=1"),
    )


WIKIPEDIA_EPOCHS = (3, 5)  # link prediction, then the classifier (at most: early-stopped with a patience of 2)
REDDIT_EPOCHS = (1, 3)  # 4.3 times the events: fewer epochs in the machine's time
TRADE_EPOCHS = 5
SMOKE_SIZES = ("model.memory_dim=16", "model.time_dim=8")
NODE_TASKS_SWEEP = Sweep(
    folder=NODE_TASKS_DIR,
    runs=(
        *classification_runs("wikipedia_like", "0,1,2", *WIKIPEDIA_EPOCHS, 2),
        *classification_runs("reddit_like", "0,1,2", *REDDIT_EPOCHS, 2),
        *affinity_runs("trade_like", "0,1,2", TRADE_EPOCHS, 2),
    ),
    smoke=(
        *classification_runs(
            "bipartite",
            "0",
            1,
            1,
            1,
            "dataset.num_users=50",
            "dataset.num_items=10",
            "dataset.num_events=500",
            "dataset.label_rate=0.1",
            learned="tgn",
            models=SMOKE_SIZES,
        ),
        *affinity_runs(
            "trade_like",
            "0",
            1,
            1,
            "dataset.num_nodes=15",
            "dataset.num_periods=10",
            "dataset.partners=3",
            learned="tgn",
            models=SMOKE_SIZES,
        ),
    ),
)


def real_sweep(datasets: list[str]) -> Sweep:
    """The same classification protocol on JODIE's labelled files (only those on disk)."""
    runs = tuple(run for dataset in datasets for run in classification_runs(dataset, "0,1,2", *WIKIPEDIA_EPOCHS, 2))
    return Sweep(folder=NODE_TASKS_REAL_DIR, runs=runs, smoke=runs)


def real_streams_on_disk() -> list[str]:
    """JODIE's labelled streams whose files are on disk (fetched, or in ``DYGSCHED_DATA``)."""
    from dygsched.data.catalog import locate

    return [name for name in ("wikipedia", "reddit") if locate(f"{name}.csv").is_file()]


def _epoch_values(metrics: pd.DataFrame, phase: str, metric: str) -> pd.Series:
    rows = metrics[(metrics["iteration"] == EPOCH_LEVEL) & (metrics["phase"] == phase) & (metrics["metric"] == metric)]
    return rows.groupby("epoch")["value"].first().sort_index()


def run_rows(folder: Path) -> pd.DataFrame:
    """One row per finished run of a folder: what it trained, its test figure (at the best validation
    epoch where it stopped early), and its cost per training event."""
    rows: list[dict[str, Any]] = []
    for summary_path in sorted(Path(folder).glob("*/summary.json")):
        summary = json.loads(summary_path.read_text())
        if summary.get("status") != "ok":
            continue
        metrics = pd.read_parquet(summary_path.parent / "metrics.parquet")
        task = summary.get("node_task") or "link"
        test = summary.get("test_metrics") or {}
        train_events = int(summary.get("train_events") or _train_events(summary_path.parent))
        epoch_s = _epoch_values(metrics, "train", "epoch_time_s")
        head_s = _epoch_values(metrics, "train", "node_head_s")
        rows.append(
            {
                "run_id": summary["run_id"],
                "task": task,
                "dataset": summary["dataset"],
                "model": summary["model"],
                "seed": int(summary["seed"]),
                "backbone": summary.get("node_backbone"),
                "value": float(test[METRIC[task]]) if task in METRIC and test.get(METRIC[task]) is not None else np.nan,
                "epoch": summary.get("eval_epoch"),
                "epochs_trained": int(summary.get("epochs_completed", 0)),
                "epoch_s_per_1k_events": float(epoch_s.median()) / train_events * 1e3 if len(epoch_s) else np.nan,
                "head_s_per_1k_events": float(head_s.median()) / train_events * 1e3 if len(head_s) else np.nan,
            }
        )
    if not rows:
        raise DygschedError(f"no finished runs under {folder}: run the target's sweep first")
    return in_order(pd.DataFrame(rows))


ORDER = {
    "task": ("link", "classification", "affinity"),
    "dataset": ("wikipedia_like", "reddit_like", "trade_like", *PUBLISHED_DATASETS),
    "model": (*MODELS.split(","), *FLOORS.split(",")),
}


def in_order(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs in the table's order (task, dataset, the learned models then the floors, seed),
    whatever order the sweep's runs finished in (a sweep built in parts, merged, keeps none)."""
    keys = {column: runs[column].map({name: rank for rank, name in enumerate(names)}).fillna(len(names))
            for column, names in ORDER.items()}  # fmt: skip
    ranked = runs.assign(**{f"_{column}": rank for column, rank in keys.items()})
    ordered = ranked.sort_values([*(f"_{column}" for column in ORDER), "dataset", "model", "seed"], kind="stable")
    return ordered.drop(columns=[f"_{column}" for column in ORDER]).reset_index(drop=True)


def _train_events(folder: Path) -> int:
    """The training events of a link-prediction run (its units of its first epoch, summed over ranks)."""
    metrics = pd.read_parquet(folder / "metrics.parquet")
    units = metrics[(metrics["metric"] == "units") & (metrics["phase"] == "train") & (metrics["iteration"] >= 0)]
    first = units[units["epoch"] == units["epoch"].min()]["value"].sum() if len(units) else 0
    return max(int(first), 1)


def accuracy_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Each (task, dataset, model): the test figure's mean and standard deviation over seeds, beside
    the floors' (the persistent forecast, the moving average) and any published figure."""
    node = runs[runs["task"] != "link"]
    table = (
        node.groupby(["task", "dataset", "model"], sort=False)["value"].agg(mean="mean", std="std", seeds="count").reset_index()
    )
    table.insert(3, "metric", table["task"].map(METRIC))
    floors = table[table["model"].isin(FLOORS.split(","))]
    for floor in FLOORS.split(","):
        mine = floors[floors["model"] == floor].set_index(["task", "dataset"])["mean"]
        table[floor] = [mine.get((r.task, r.dataset), np.nan) for r in table.itertuples()]
    trained = node.groupby(["task", "dataset", "model"])["epochs_trained"].max().rename("epochs_trained").reset_index()
    table = table.merge(trained, on=["task", "dataset", "model"], how="left")
    table["published"] = [_published(r.dataset, r.model, r.metric) for r in table.itertuples()]
    return table


def _published(dataset: str, model: str, metric: str) -> float:
    """The paper's figure for a real stream (DyGLib's Table 15 AUC, TGB's leaderboard NDCG), as a fraction."""
    if dataset not in PUBLISHED_DATASETS:
        return np.nan
    rows = rows_of(NODE_TASKS_NAME)
    column = "AUC-ROC" if metric == "auc" else "Test NDCG@10"
    names = {
        "tgn": "TGN",
        "jodie": "JODIE",
        "apan": "APAN",
        "persistent": "Persistent Forecast",
        "moving_average": "Moving Average",
    }
    hit = rows[
        (rows["dataset"] == PUBLISHED_DATASETS[dataset]) & (rows["row"] == names.get(model, model)) & (rows["column"] == column)
    ]
    if hit.empty:
        return np.nan
    value = float(hit["value"].iloc[0])
    return value / 100 if hit["unit"].iloc[0] == "%" else value


def cost_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, model): seconds per 1,000 training events of the link-prediction epoch, the node
    task's epoch, and the classifier's forward pass alone, medians over seeds."""
    learned = runs[~runs["model"].isin(FLOORS.split(","))]
    link = learned[learned["task"] == "link"].groupby(["dataset", "model"])["epoch_s_per_1k_events"].median()
    node = learned[learned["task"] != "link"]
    out = (
        node.groupby(["task", "dataset", "model"], sort=False)[["epoch_s_per_1k_events", "head_s_per_1k_events"]]
        .median()
        .reset_index()
    )
    out = out.rename(columns={"epoch_s_per_1k_events": "node_epoch_s_per_1k", "head_s_per_1k_events": "classifier_s_per_1k"})
    out.insert(3, "link_epoch_s_per_1k", [link.get((r.dataset, r.model), np.nan) for r in out.itertuples()])
    out["classifier_share"] = out["classifier_s_per_1k"] / out["node_epoch_s_per_1k"]
    return out


def build_node_tasks(results: Path, real_streams: bool = True) -> None:
    """The node tasks' table and the classifier's cost, from the sweep's runs (and the real streams' where on disk)."""
    from dygsched.paper.sweep import run_sweep

    runs = run_rows(results / NODE_TASKS_DIR)
    on_disk = real_streams_on_disk() if real_streams else []
    if on_disk:
        runs = pd.concat([runs, run_rows(run_sweep(real_sweep(on_disk), results, smoke=False))], ignore_index=True)
    write_table(runs, results / NODE_TASKS_DIR / "node_tasks_runs.csv")
    write_table(
        accuracy_table(runs),
        results / NODE_TASKS_CSV,
        "published: DyGLib's Table 15 (AUC) or TGB's leaderboard (NDCG@10), only for a real stream's rows"
        + ("" if on_disk else " (no labelled real stream is on disk here: fetch wikipedia or reddit to add them)"),
    )
    write_table(cost_table(runs), results / NODE_TASKS_COST_CSV)


def read_node_tasks(tables: Tables) -> str:
    table = table_named(tables, NODE_TASKS_CSV)
    learned = table[~table["model"].isin(FLOORS.split(","))]
    parts = []
    for (task, dataset), rows in learned.groupby(["task", "dataset"], sort=False):
        metric = METRIC[str(task)]
        shown = ", ".join(
            f"{r.model} {r['mean']:.3f}" + (f" ± {r['std']:.3f}" if r["seeds"] > 1 and pd.notna(r["std"]) else "")
            for _, r in rows.iterrows()
        )
        floor = rows.iloc[0]
        floors = f"persistent {floor['persistent']:.3f}, moving average {floor['moving_average']:.3f}"
        parts.append(f"{dataset} test {metric}: {shown} ({floors})")
    if "node_tasks_cost.csv" in " ".join(tables):
        cost = table_named(tables, NODE_TASKS_COST_CSV)
        parts.append(f"the classifier takes {cost['classifier_share'].median():.1%} of a node task's training epoch (median)")
    return "; ".join(parts)


NODE_TASKS = PaperTarget(
    name=NODE_TASKS_NAME,
    paper=ACCURACY_SECTION.key,
    title="Node property prediction on event streams: DyGLib's node classification (AUC) and TGB's node affinity "
    "(NDCG@10), TGN, JODIE and APAN beside the persistent forecast and the moving average",
    reproduces="(no paper table; DyGLib's and TGB's protocols)",
    outputs=(NODE_TASKS_CSV, NODE_TASKS_COST_CSV),
    repeats="one run per model and seed (a link-prediction run, then the classifier on its frozen model, early-stopped "
    "on validation AUC; the affinity runs early-stopped on validation NDCG@10); test at the best validation epoch; "
    "mean and standard deviation over 3 seeds; the floors once per seed (every epoch gives the same figure)",
    minutes=170,
    build=build_node_tasks,
    reading=read_node_tasks,
    regime=Regime(
        paper="",
        ours="DyGLib's protocol in one process (batch 200, split by time 70/15/15): the Wikipedia-sized labelled stream "
        f"({WIKIPEDIA_EPOCHS[0]} link-prediction epochs, then at most {WIKIPEDIA_EPOCHS[1]} classifier epochs, patience 2) and "
        f"the REDDIT-sized one ({REDDIT_EPOCHS[0]} and {REDDIT_EPOCHS[1]}), TGN, JODIE and APAN, seeds 0-2; the "
        f"tgbn-trade-like stream (255 nations, 32 years) trained end to end for at most {TRADE_EPOCHS} epochs",
        why="DyGLib trains link prediction and the classifier up to 100 epochs each (patience 20), TGB 50 epochs, on a "
        "GPU; on 2 CPU cores the epochs are fewer. No labelled real stream is on this machine (JODIE's files are fetched "
        "on request), so DyGLib's published AUC sits beside real-stream rows only where they are on disk",
    ),
    sweep=NODE_TASKS_SWEEP,
    settings=Settings(full={"real_streams": True}, smoke={"real_streams": False}),
)
