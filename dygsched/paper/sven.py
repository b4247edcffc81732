"""Sven: memory-based continuous-time models with distributed node memory.

``table-sven-comm`` and ``table-sven-balance`` count in this process: which vertices a step reads
and writes depends only on the stream, the batch and the rank count, so every rank pair's bytes are
counted exactly for 2-64 virtual ranks (``dygsched.engine.node_memory.volumes``; a test checks the
counts against what real gloo ranks move). ``table-sven-accuracy`` and ``table-sven-breakdown`` read
the run folders of their sweeps (real gloo ranks on this machine).
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dygsched.errors import DygschedError
from dygsched.paper.common import finished_runs, geometric_mean, published_value, span, table_named, times, write_table
from dygsched.paper.target import Headline, PaperShape, PaperTarget, Section, Settings, Sweep, Tables

SECTION = Section("sven", "Sven", "Memory-based continuous-time models (TGN, JODIE, APAN) with distributed node memory.")

SVEN_DIR = "sven"
SWEEP_ARGS = ("epochs=5", "optim.lr=0.001")  # every training run's length and learning rate at full size
SMOKE_EVENTS = "+smoke=events"  # conf/smoke/events.yaml: one epoch in global batches of 2,000 events

# our names -> the paper's labels
MODEL_LABELS = {"apan": "APAN", "jodie": "JODIE", "tgn": "TGN"}
STRATEGY_LABELS = {"depcomm": "DepComm", "depcache": "DepCache"}


def _stream_and_model(dataset: str, model_name: str) -> tuple[dict[str, Any], Any, Any]:
    """The event stream and the model (its widths decide the row sizes) a config composes."""
    from omegaconf import OmegaConf

    from dygsched.data.loading import load_data
    from dygsched.engine.build import build_model
    from dygsched.launch.compose import compose_config

    cfg = OmegaConf.to_container(compose_config([f"dataset={dataset}", f"model={model_name}"]), resolve=True)
    stream = load_data(cfg["dataset"])
    return cfg, stream, build_model(cfg["model"], stream)


# ---- figure 12: bytes per epoch --------------------------------------------------------------------
COMM_CSV = f"{SVEN_DIR}/sven_comm.csv"


def build_comm(results: Path, datasets: tuple[str, ...], model: str, batches: tuple[int, ...], ranks: tuple[int, ...]) -> None:
    """Bytes per training epoch of DepCache, DepComm and Sven for every batch and rank count, counted
    exactly, beside the paper's closed forms with this epoch's redundancies."""
    from dygsched.data.event_batches import RecentNeighbours, relative_times
    from dygsched.data.partition.vertices import interval_partition
    from dygsched.engine.node_memory.volumes import RowSizes, count_traffic, epoch_reads

    rows = []
    for dataset in datasets:
        cfg, stream, built = _stream_and_model(dataset, model)
        sizes = RowSizes.of(built)
        train = stream.split(cfg["split"]["train"], cfg["split"]["val"]).train
        sampler = RecentNeighbours(stream, relative_times(stream))
        d_state = built.memory_dim + built.mail_dim  # the paper's unit: d_mem + d_msg values
        for batch in batches:
            for count in ranks:
                if batch * count > train[1] - train[0]:
                    continue
                reads = list(epoch_reads(stream, train, batch, count, cfg["seed"], 0, built.embedding_neighbours, built.mail_neighbours, sampler))
                counted = count_traffic(iter(reads), interval_partition(stream.num_nodes, count), count, sizes)
                n1 = sum(r.series.numel() for r in reads)
                u1 = sum(int(np.unique(r.series.numpy()).size) for r in reads)
                n2 = sum(r.written.numel() for r in reads)
                u2 = sum(int(np.unique(r.written.numpy()).size) for r in reads)
                share = 2 * (count - 1) / count
                closed = {  # the paper's equations, with this epoch's N1, N2 and redundancies, in float32 values
                    "depcache": u2 * d_state * 2 * (count - 1) ** 2 / count,
                    "depcomm": (n1 * built.memory_dim + u2 * d_state) * share,
                    "sven": (u1 + u2) * d_state * share,
                }
                totals = {name: 2 * sum(int(m.sum()) for m in kinds.values()) for name, kinds in counted.items()}  # sent + received
                for name, total in totals.items():
                    rows.append({
                        "dataset": dataset, "batch_per_rank": batch, "ranks": count, "strategy": name,
                        "bytes_per_epoch": total, "closed_form_bytes": 4 * closed[name],
                        "eta1": 1 - u1 / n1, "eta2": 1 - u2 / n2, "vs_sven": total / totals["sven"],
                    })  # fmt: skip
    if not rows:
        raise DygschedError(f"table-sven-comm: no batch x rank count fits the training events of {', '.join(datasets)}")
    write_table(
        pd.DataFrame(rows),
        results / COMM_CSV,
        f"model={model}; interval partition; one training epoch; bytes sent plus received over all ranks, ids and keys "
        "included. Closed forms count state values only (d_mem + d_msg per row), as the paper does; DepCache's equation has "
        "(M - 1)^2 / M where an all-gather of each rank's distinct writes moves 2 (M - 1) N2 (1 - eta2) rows.",
    )


def read_comm(tables: Tables) -> str:
    table = table_named(tables)
    parts = []
    for ranks in sorted({table.ranks.min(), table.ranks.max()}):
        rows = table[(table.ranks == ranks) & (table.strategy != "sven")]
        spans = ", ".join(f"{strategy} {span(group.vs_sven, times)}" for strategy, group in rows.groupby("strategy"))
        parts.append(f"at {ranks} ranks {spans}")
    return "bytes per epoch against Sven's: " + "; ".join(parts)


def headlines_comm(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """Figure 12's stated communication efficiencies, each baseline's bytes over Sven's on the first
    dataset: (a) the range over batch sizes as the geometric mean of its ends, read at our smallest
    rank count above 2 (at 2 ranks an all-gather of the writes is cheaper than any dispatch by
    construction, unlike the multi-GPU clusters of the figure), each batch's ratio the geometric
    mean over that rank count's rows; (c) the average over trainer counts, each rank count's ratio
    the geometric mean over batch sizes."""
    table = table_named(tables)
    table = table[table.dataset == table.dataset.iloc[0]]
    above_two = sorted(r for r in table.ranks.unique() if r > 2)
    headlines = []
    for strategy, label in STRATEGY_LABELS.items():
        rows = table[table.strategy == strategy]
        at_ranks = rows[rows.ranks == above_two[0]] if above_two else rows.iloc[0:0]
        per_batch = [geometric_mean(group.vs_sven) for _, group in at_ranks.groupby("batch_per_rank")]
        per_batch = [value for value in per_batch if value is not None]
        paper = math.sqrt(
            published_value(published, f"Sven vs {label}", "comm efficiency (batch size) min")
            * published_value(published, f"Sven vs {label}", "comm efficiency (batch size) max")
        )
        ours = math.sqrt(min(per_batch) * max(per_batch)) if per_batch else None
        headlines.append(Headline(f"{label} over Sven, bytes per epoch, over batch sizes (figure 12a)", paper, ours))
    for strategy, label in STRATEGY_LABELS.items():
        rows = table[table.strategy == strategy]
        per_ranks = [geometric_mean(group.vs_sven) for _, group in rows.groupby("ranks")]
        per_ranks = [value for value in per_ranks if value is not None]
        paper = published_value(published, f"Sven vs {label}", "comm efficiency (trainers) avg")
        headlines.append(Headline(f"{label} over Sven, bytes per epoch, average over trainer counts (figure 12c)", paper, float(np.mean(per_ranks)) if per_ranks else None))
    return tuple(headlines)


COMM = PaperTarget(
    name="table-sven-comm",
    paper=SECTION.key,
    title="Bytes per epoch of DepCache, DepComm and Sven, 2-64 ranks",
    reproduces="Sven figure 12",
    outputs=(COMM_CSV,),
    repeats="bytes counted exactly over one epoch",
    minutes=0.1,
    build=build_comm,
    reading=read_comm,
    settings=Settings(
        full={"datasets": ("events", "sfhh_events"), "model": "tgn", "batches": (150, 300, 600), "ranks": (2, 4, 8, 16, 32, 64)},
        smoke={"datasets": ("events",), "batches": (600,), "ranks": (2, 4)},
    ),
    headlines=headlines_comm,
)


# ---- figure 14: link balance ----------------------------------------------------------------------
BALANCE_CSV = f"{SVEN_DIR}/sven_balance.csv"
BALANCE_PNG = f"{SVEN_DIR}/sven_balance.png"
BALANCE_PARTITIONS = ("range", "interval", "reflexbicut")
BALANCE_BASELINES = {"range": "range-based", "interval": "interval-based"}  # our partition -> the paper's label


def build_balance(
    results: Path, datasets: tuple[str, ...], model: str, batches: tuple[int, ...], ranks: tuple[int, ...], epochs: int, capacity_slack: float
) -> None:
    """Section 5.4's balance cost: per training step, the trainer-pair matrix C of Sven's dispatch
    all-to-all and its residual against the slowest link (Equation 2), under each partition, over
    ``epochs`` epochs (each draws its own negatives); owners from the pre-sampling of epoch 0."""
    import torch

    from dygsched.data.event_batches import RecentNeighbours, relative_times
    from dygsched.data.partition.vertices import link_balance, partition_vertices
    from dygsched.engine.node_memory.volumes import demand_matrix, dispatch_pairs, epoch_reads

    rows, per_step = [], []
    for dataset in datasets:
        cfg, stream, built = _stream_and_model(dataset, model)
        train = stream.split(cfg["split"]["train"], cfg["split"]["val"]).train
        sampler = RecentNeighbours(stream, relative_times(stream))
        k = built.embedding_neighbours
        for batch in batches:
            for count in ranks:
                if batch * count > train[1] - train[0]:
                    print(f"skipped: batch {batch} x {count} ranks is more than the {train[1] - train[0]} training events of {dataset}")
                    continue
                # each step's distinct vertices once (what the demand and the dispatch count), not every occurrence per partition
                reads = [
                    [dataclasses.replace(read, series=torch.unique(read.series)) for read in epoch_reads(stream, train, batch, count, cfg["seed"], epoch, k, sampler=sampler)]
                    for epoch in range(epochs)
                ]  # fmt: skip
                demand = demand_matrix(iter(reads[0]), count, stream.num_nodes)
                found = {}
                for method in BALANCE_PARTITIONS:
                    start = time.perf_counter()
                    partition = partition_vertices(method, demand, capacity_slack=capacity_slack)
                    seconds = time.perf_counter() - start
                    pairs = np.concatenate([dispatch_pairs(iter(epoch), partition.owner, count) for epoch in reads])
                    costs = link_balance(pairs)
                    found[method] = costs
                    for step, value in enumerate(costs["balance_cost"]):
                        per_step.append({"dataset": dataset, "batch_per_rank": batch, "ranks": count, "partition": method, "step": step,
                                         "balance_cost": value, "slowest_link": costs["slowest_link"][step]})  # fmt: skip
                    cost = costs["balance_cost"]
                    rows.append({
                        "dataset": dataset, "batch_per_rank": batch, "ranks": count, "partition": method, "used": partition.used,
                        "steps": int(cost.size), "max_balance_cost": float(cost.max()),
                        "upper_quartile_balance_cost": float(np.percentile(cost, 75)), "median_balance_cost": float(np.median(cost)),
                        "max_slowest_link": float(costs["slowest_link"].max()), "mean_residual": float(costs["mean_residual"].mean()),
                        "dispatch_rows_per_step": float(pairs.sum(axis=(1, 2)).mean()),
                        "largest_receive_rows": partition.largest_receive_volume, "partition_s": seconds,
                    })  # fmt: skip
                for row in rows[-len(BALANCE_PARTITIONS) :]:
                    for baseline in BALANCE_BASELINES:
                        row[f"vs_{baseline}_pct"] = 100 * (row["max_balance_cost"] / found[baseline]["balance_cost"].max() - 1)
    if not rows:
        raise DygschedError(f"table-sven-balance: no batch x rank count fits the training events of {', '.join(datasets)}")
    write_table(
        pd.DataFrame(rows),
        results / BALANCE_CSV,
        f"model={model}; {epochs} epoch(s); per step, C[i, j] = N&M rows trainer i receives from trainer j in Sven's "
        "dispatch all-to-all (distinct vertices); balance cost = max(C) - min(C) over the links, the largest entry of the "
        "residual R = max(C) J - C (Equation 2); max_* over every step; owners from epoch 0's pre-sampling; "
        f"capacity slack {capacity_slack}.",
    )
    plot_balance(pd.DataFrame(per_step), results / BALANCE_PNG)
    print(f"written: {results / BALANCE_PNG}")


def plot_balance(steps: pd.DataFrame, out: Path) -> None:
    """Figure 14's box plots: the per-step balance cost of each partition, per batch size and rank count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = steps.groupby(["dataset", "ranks"], sort=False)
    fig, axes = plt.subplots(1, settings.ngroups, figsize=(5 * settings.ngroups, 4), squeeze=False)
    for ax, ((dataset, ranks), rows) in zip(axes[0], settings, strict=True):
        batches = sorted(rows["batch_per_rank"].unique())
        width = 0.8 / len(BALANCE_PARTITIONS)
        for offset, method in enumerate(BALANCE_PARTITIONS):
            data = [rows[(rows.batch_per_rank == b) & (rows.partition == method)]["balance_cost"].to_numpy() for b in batches]
            positions = [i + (offset - 1) * width for i in range(len(batches))]
            box = ax.boxplot(data, positions=positions, widths=width * 0.9, patch_artist=True, showfliers=False)
            for patch in box["boxes"]:
                patch.set_facecolor(f"C{offset}")
            ax.plot([], [], color=f"C{offset}", linewidth=6, label=method)
        ax.set_xticks(range(len(batches)), [str(b) for b in batches])
        ax.set_xlabel("batch per trainer")
        ax.set_ylabel("balance cost (N&M rows, slowest link - fastest)")
        ax.set_title(f"{dataset}, {ranks} trainers")
        ax.legend()
        ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)


def read_balance(tables: Tables) -> str:
    table = table_named(tables, BALANCE_CSV)
    cut = table[table.partition == "reflexbicut"]
    return (
        f"Re-FlexBiCut's largest per-step balance cost (slowest link minus fastest, Equation 2) is "
        f"{span(cut.vs_range_pct, lambda v: f'{v:+.1f}%')} against range and "
        f"{span(cut.vs_interval_pct, lambda v: f'{v:+.1f}%')} against interval over {len(cut)} settings"
    )


def _largest_ratio_over_cut(table: pd.DataFrame, baseline: str, column: str) -> float | None:
    """The largest, over our settings, of ``baseline``'s ``column`` over Re-FlexBiCut's."""
    keys = ["dataset", "batch_per_rank", "ranks"]
    wide = table.pivot_table(index=keys, columns="partition", values=column, aggfunc="first")
    if not {baseline, "reflexbicut"} <= set(wide.columns):
        return None
    ratios = (wide[baseline] / wide["reflexbicut"]).replace([np.inf, -np.inf], np.nan).dropna()
    return float(ratios.max()) if len(ratios) else None


def headlines_balance(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """Figure 14's largest reductions by Re-FlexBiCut, each as the baseline's cost over
    Re-FlexBiCut's (a reduction r as the ratio 1 / (1 - r)): the maximum balance cost over the batch sizes,
    and the communication cost over the trainer counts (ours: the dispatch rows per step), each
    the largest over our settings."""
    table = table_named(tables, BALANCE_CSV)
    headlines = []
    for measure, column, ours_column in (
        ("maximum balance cost", "max balance cost reduction (batch size)", "max_balance_cost"),
        ("communication cost", "max comm cost reduction (trainers)", "dispatch_rows_per_step"),
    ):
        for baseline, label in BALANCE_BASELINES.items():
            reduction = published_value(published, f"Re-FlexBiCut vs {label}", column)
            paper = 1 / (1 - reduction / 100)
            ours = _largest_ratio_over_cut(table, baseline, ours_column)
            headlines.append(Headline(f"{label} partition over Re-FlexBiCut, {measure} (largest)", paper, ours))
    return tuple(headlines)


BALANCE = PaperTarget(
    name="table-sven-balance",
    paper=SECTION.key,
    title="Per-step link balance of Sven's dispatch under range, interval and Re-FlexBiCut owners",
    reproduces="Sven figure 14",
    outputs=(BALANCE_CSV, BALANCE_PNG),
    repeats="counted over 10 epochs' steps (every step of every epoch in the box plots)",
    minutes=4,
    build=build_balance,
    reading=read_balance,
    settings=Settings(
        full={
            "datasets": ("reddit_like",), "model": "apan", "batches": (400, 800, 1200, 1600, 2000, 2400), "ranks": (8,),
            "epochs": 10, "capacity_slack": 0.1,
        },  # fmt: skip
        smoke={"datasets": ("events",), "model": "apan", "batches": (600,), "ranks": (4,), "epochs": 1},
    ),
    headlines=headlines_balance,
)


# ---- the training sweeps' run folders -------------------------------------------------------------
def final(metrics: pd.DataFrame, phase: str, metric: str) -> float:
    """The last epoch's value of ``metric`` in ``phase``; NaN where the run has none."""
    rows = metrics[(metrics.phase == phase) & (metrics.metric == metric)]
    return float(rows.sort_values("epoch").value.iloc[-1]) if len(rows) else float("nan")


def epoch_time(metrics: pd.DataFrame) -> float:
    """The median training epoch time (the first epoch's warm-up included in the median only)."""
    rows = metrics[(metrics.iteration == -1) & (metrics.phase == "train") & (metrics.metric == "epoch_time_s")]
    return float(rows.groupby("epoch").value.max().median()) if len(rows) else float("nan")


def epoch_share(metrics: pd.DataFrame, metric: str) -> float:
    """Seconds per epoch in ``metric``: the ranks' mean, the median over epochs."""
    rows = metrics[(metrics.iteration == -1) & (metrics.phase == "train") & (metrics.metric == metric)]
    return float(rows.groupby("epoch").value.mean().median()) if len(rows) else float("nan")


# ---- table 4: accuracy ----------------------------------------------------------------------------
ACCURACY_SWEEP = Sweep(
    folder=f"{SVEN_DIR}/accuracy",
    runs=(
        ("dataset=events", "model=tgn,jodie,apan", "sched=single", "sched.batch_size=600", "world_size=1", "seed=0", "checkpoint=false", *SWEEP_ARGS),
        ("dataset=events", "model=tgn,jodie,apan", "sched=sven", "sched.batch_size=300", "sched.staleness=0,1", "world_size=2", "seed=0", "checkpoint=false", *SWEEP_ARGS),
    ),
    smoke=(
        ("dataset=events", "model=jodie", "sched=single", "sched.batch_size=600", "world_size=1", "seed=0", "checkpoint=false", SMOKE_EVENTS),
        ("dataset=events", "model=jodie", "sched=sven", "sched.batch_size=300", "sched.staleness=1", "world_size=2", "seed=0", "checkpoint=false", SMOKE_EVENTS),
    ),
)  # fmt: skip
ACCURACY_CSV = f"{ACCURACY_SWEEP.folder}/sven_accuracy.csv"
ACCURACY_ROWS = {"single": "TGL", "sven": "Sven"}  # sched=single runs TGL's one-process loop


def build_accuracy(results: Path) -> None:
    """Test AP and AUC per model: one process against Sven on 2 ranks, the mean over seeds."""
    rows = []
    for summary, metrics, cfg in finished_runs(results / ACCURACY_SWEEP.folder):
        sched = cfg["sched"]
        rows.append({
            "model": cfg["model"]["name"], "sched": sched["name"], "ranks": summary["world_size"],
            "global_batch": sched["batch_size"] * summary["world_size"], "staleness": sched.get("staleness", 0),
            "test_ap": final(metrics, "test", "ap"), "test_auc": final(metrics, "test", "auc"),
            "val_ap": final(metrics, "val", "ap"), "epochs": summary["epochs_completed"], "seed": cfg["seed"],
        })  # fmt: skip
    write_table(
        accuracy_table(pd.DataFrame(rows)),
        results / ACCURACY_CSV,
        "mean over seeds (std: their spread; NaN with one seed)",
        "one process (sched=single, TGL's loop) vs Sven on 2 gloo ranks, same global batch",
    )


def accuracy_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per model and setting from one row per run: the mean over seeds and their spread."""
    keys = ["model", "sched", "ranks", "global_batch", "staleness", "epochs"]
    return runs.groupby(keys, as_index=False).agg(
        seeds=("seed", "nunique"), test_ap=("test_ap", "mean"), test_ap_std=("test_ap", "std"),
        test_auc=("test_auc", "mean"), val_ap=("val_ap", "mean"),
    ).sort_values(["model", "ranks", "staleness"]).reset_index(drop=True)  # fmt: skip


def read_accuracy(tables: Tables) -> str:
    table = table_named(tables)

    def setting(row: Any) -> str:
        return "one process" if row.sched == "single" else f"{row.sched} on {int(row.ranks)} ranks, staleness {int(row.staleness)}"

    parts = [
        f"{model}: " + ", ".join(f"{setting(row)} {row.test_ap:.3f}" for row in group.itertuples())
        for model, group in table.groupby("model", sort=False)
    ]
    return f"test AP (mean over {int(table.seeds.max())} seed(s)), " + "; ".join(parts)


def _accuracy_frame(tables: Tables) -> pd.DataFrame:
    """Test AP in %, TGL (one process) and Sven (its highest staleness: every mechanism on) as rows,
    the paper's model names as columns."""
    table = table_named(tables)
    table = table[table.sched.isin(ACCURACY_ROWS) & table.model.isin(MODEL_LABELS)]
    sven = table[table.sched == "sven"]
    table = pd.concat([table[table.sched != "sven"], sven[sven.staleness == sven.staleness.max()]])
    frame = table.pivot_table(index="sched", columns="model", values="test_ap", aggfunc="mean") * 100
    frame = frame.rename(index=ACCURACY_ROWS, columns=MODEL_LABELS)
    frame.columns.name = None
    return frame.loc[[label for label in ACCURACY_ROWS.values() if label in frame.index]]


def shape_accuracy(tables: Tables) -> PaperShape:
    """Table 4's layout: TGL and Sven as rows, the models as columns, test AP in %. Each row ranks
    the models (the gap between TGL and Sven is a fraction of a point, below the order's reach)."""
    return PaperShape(_accuracy_frame(tables), paper_ref="Table 4", paper_dataset="LASTFM", rank_within="rows", unit="AP %")


def headlines_accuracy(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """Table 4's claim that Sven keeps TGL's accuracy: Sven's AP over TGL's, the geometric mean
    over the models (ours over the models we ran, the paper's over the same ones)."""
    frame = _accuracy_frame(tables)
    paper_table = published[published.ref == "Table 4"]
    ran = [label for label in frame.columns if label in set(paper_table.column)] or sorted(set(paper_table.column))
    paper = geometric_mean([published_value(paper_table, "Sven", m) / published_value(paper_table, "TGL", m) for m in ran])
    ours = geometric_mean(frame.loc["Sven"] / frame.loc["TGL"]) if {"Sven", "TGL"} <= set(frame.index) else None
    return (Headline("Sven's test AP over one process's (TGL)", paper, ours),) if paper is not None else ()


ACCURACY = PaperTarget(
    name="table-sven-accuracy",
    paper=SECTION.key,
    title="Test AP and AUC: one process against Sven on 2 ranks, staleness 0 and 1",
    reproduces="Sven table 4",
    outputs=(ACCURACY_CSV,),
    repeats="mean and spread over the seeds (one by default; --set seed=0,1,2 for three)",
    minutes=2,
    build=build_accuracy,
    reading=read_accuracy,
    sweep=ACCURACY_SWEEP,
    shape=shape_accuracy,
    headlines=headlines_accuracy,
)


# ---- figure 15 and table 2: breakdown -------------------------------------------------------------
# Figure 15's steps, each one run: the mechanisms added one at a time to DepComm (DepCache beside it)
BREAKDOWN_STEPS = {
    "depcache": ("sched=depcache",),
    "depcomm": ("sched=depcomm",),
    "redundancy_free": ("sched=sven", "sched.partition=interval", "sched.prefetch=false"),
    "reflexbicut": ("sched=sven", "sched.prefetch=false"),
    "micro_batch": ("sched=sven", "sched.micro_batches=2"),
    "async_allreduce": ("sched=sven", "sched.micro_batches=2", "sched.staleness=1"),
}
SMOKE_STEPS = ("depcomm", "async_allreduce")  # the table needs depcomm, its baseline


def _step_run(step: str, args: tuple[str, ...]) -> tuple[str, ...]:
    return ("dataset=events", "checkpoint=false", "model=tgn", *BREAKDOWN_STEPS[step], "world_size=2", *args)


BREAKDOWN_SWEEP = Sweep(
    folder=f"{SVEN_DIR}/breakdown",
    runs=tuple(_step_run(step, SWEEP_ARGS) for step in BREAKDOWN_STEPS),
    smoke=tuple(_step_run(step, (SMOKE_EVENTS,)) for step in SMOKE_STEPS),
)
BREAKDOWN_CSV = f"{BREAKDOWN_SWEEP.folder}/sven_breakdown.csv"
BREAKDOWN_ORDER = ("depcache", "depcomm", "+redundancy-free", "+re-flexbicut", "+micro-batch", "+async all-reduce")


def breakdown_step(sched: dict[str, Any]) -> str:
    """Which of figure 15's steps a run's scheduler settings are."""
    if sched["name"] in ("depcomm", "depcache"):
        return sched["name"]
    if sched.get("staleness", 0):
        return "+async all-reduce"
    if sched.get("micro_batches", 1) > 1 or sched.get("prefetch", False):
        return "+micro-batch"
    return "+re-flexbicut" if sched.get("partition") == "reflexbicut" else "+redundancy-free"


def build_breakdown(results: Path) -> None:
    """Epoch time per step and its parts (compute, node-state exchange, gradient all-reduce, wait),
    with each step's speedup over the one before it and over DepComm."""
    rows = []
    for summary, metrics, cfg in finished_runs(results / BREAKDOWN_SWEEP.folder):
        comm, exchange = epoch_share(metrics, "comm_s"), epoch_share(metrics, "exchange_s")
        rows.append({
            "model": cfg["model"]["name"], "step": breakdown_step(cfg["sched"]), "ranks": summary["world_size"],
            "epoch_time_s": epoch_time(metrics), "compute_s": epoch_share(metrics, "busy_s"), "exchange_s": exchange,
            "allreduce_s": comm - exchange, "wait_s": epoch_share(metrics, "wait_s"),
            "comm_bytes_per_epoch": sum(v for v in summary.get("comm_bytes_per_epoch", {}).values() if isinstance(v, (int, float))),
        })  # fmt: skip
    write_table(
        breakdown_table(pd.DataFrame(rows)),
        results / BREAKDOWN_CSV,
        "2 gloo ranks on this machine's cores: times are CPU times, not a GPU cluster's. Per epoch (ranks' mean, median epoch): "
        "compute = busy_s, exchange = node-state all-to-alls, allreduce = the rest of comm_s (the gradient all-reduce), wait = "
        "waiting for the slowest rank before it",
    )


def breakdown_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs in figure 15's order per model, each with its speedup over the step before it and
    over DepComm."""
    table = runs.assign(order=runs.step.map(BREAKDOWN_ORDER.index))
    table = table.sort_values(["model", "order"]).drop(columns="order").reset_index(drop=True)
    table["speedup_vs_previous"] = table.groupby("model").epoch_time_s.transform(lambda s: s.shift(1) / s)
    depcomm = table[table.step == "depcomm"].set_index("model").epoch_time_s
    table["speedup_vs_depcomm"] = table.model.map(depcomm) / table.epoch_time_s
    return table


def read_breakdown(tables: Tables) -> str:
    table = table_named(tables)
    steps = ", ".join(f"{row.step} {row.epoch_time_s:.2f} s" for row in table.itertuples())
    sven = table.iloc[-1]
    return f"epoch time {steps}: the full Sven {times(sven.speedup_vs_depcomm)} DepComm's speed"


TABLE2_PARTS = {"exchange_s": "A2A/AG Comm. (%)", "allreduce_s": "AR Comm. (%)", "compute_s": "Comp. (%)"}


def shape_breakdown(tables: Tables) -> PaperShape:
    """Table 2's layout: DepCache and DepComm per model as rows ("DepComm TGN"), each part's share of
    the epoch in % as columns (node-state all-to-all or all-gather, gradient all-reduce, compute;
    the shares of their sum, as the paper's add to 100). Its milliseconds are a GPU cluster's, ours
    a CPU's: the shares are compared, each row ranking its parts."""
    table = table_named(tables)
    table = table[table.step.isin(STRATEGY_LABELS) & table.model.isin(MODEL_LABELS)]
    parts = table[list(TABLE2_PARTS)]
    shares = 100 * parts.div(parts.sum(axis=1), axis=0)
    shares.index = [f"{STRATEGY_LABELS[s]} {MODEL_LABELS[m]}" for s, m in zip(table.step, table.model)]
    frame = shares.rename(columns=TABLE2_PARTS)
    return PaperShape(frame, paper_ref="Table 2", paper_dataset="LASTFM", rank_within="rows", unit="%")


# figure 15's mechanisms: (the paper's rows it states for the step, our step before it, our step)
FIGURE15_STEPS = {
    "+redundancy-free": (("+redundancy-free",), "depcomm", "+redundancy-free"),
    "+Re-FlexBiCut": (("+Re-FlexBiCut",), "+redundancy-free", "+re-flexbicut"),
    "+prefetching and micro-batch pipelining": (("+prefetching", "+micro-batch pipelining"), "+re-flexbicut", "+micro-batch"),
}


def _paper_step_speedup(published: pd.DataFrame, rows: tuple[str, ...], model: str) -> float:
    """The paper's speedup of one step for one model: its stated speedups multiplied, a stated
    percentage (prefetching's) read as a reduction of the epoch time."""
    speedup = 1.0
    for row in rows:
        value = published_value(published, row, model)
        in_percent = (published[(published.row == row) & (published.column == model)].unit == "%").all()
        speedup *= 1 / (1 - value / 100) if in_percent else value
    return speedup


def headlines_breakdown(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """Figure 15's speedups as each mechanism is added, per model, the geometric mean over the
    models we ran (the paper's over the same models); ours only where the step before it ran too.
    Our micro-batch step turns prefetching on with the micro-batches, so it sits beside both of the
    paper's steps. Last, the whole of Sven over DepComm (the paper's "naive", the base the
    mechanisms are added to): its stated range as the geometric mean of the ends."""
    table = table_named(tables)
    table = table[table.model.isin(MODEL_LABELS)]
    wide = table.pivot_table(index="model", columns="step", values="epoch_time_s", aggfunc="median")
    ran = [MODEL_LABELS[m] for m in wide.index] or list(MODEL_LABELS.values())
    figure = published[published.ref == "Figure 15 (text)"]

    def ours_over(before: str, after: str) -> float | None:
        return geometric_mean(wide[before] / wide[after]) if {before, after} <= set(wide.columns) else None

    headlines = []
    for label, (paper_rows, before, step) in FIGURE15_STEPS.items():
        paper = math.prod(_paper_step_speedup(figure, paper_rows, model) for model in ran) ** (1 / len(ran))
        headlines.append(Headline(f"{label}: epoch time before over after", paper, ours_over(before, step)))
    overall = math.sqrt(
        published_value(figure, "Sven vs naive", "overall speedup min (over)") * published_value(figure, "Sven vs naive", "overall speedup max")
    )
    headlines.append(Headline("DepComm over the full Sven, epoch time", overall, ours_over("depcomm", BREAKDOWN_ORDER[-1])))
    return tuple(headlines)


BREAKDOWN = PaperTarget(
    name="table-sven-breakdown",
    paper=SECTION.key,
    title="Epoch time of DepCache, DepComm and Sven as each mechanism is added",
    reproduces="Sven figure 15 and table 2",
    outputs=(BREAKDOWN_CSV,),
    repeats="median over epochs 2-5 of one run per step",
    minutes=2,
    build=build_breakdown,
    reading=read_breakdown,
    sweep=BREAKDOWN_SWEEP,
    shape=shape_breakdown,
    headlines=headlines_breakdown,
)

TARGETS: tuple[PaperTarget, ...] = (COMM, BALANCE, ACCURACY, BREAKDOWN)
