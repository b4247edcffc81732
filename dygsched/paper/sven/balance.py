"""Figure 14: the links' balance under each vertex partition, counted per step."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dygsched.errors import DygschedError
from dygsched.paper.common import published_value, span, table_named, write_table
from dygsched.paper.sven.common import SECTION, SVEN_DIR, stream_and_model
from dygsched.paper.target import Headline, PaperTarget, Regime, Settings, Tables

BALANCE_CSV = f"{SVEN_DIR}/sven_balance.csv"
BALANCE_PNG = f"{SVEN_DIR}/sven_balance.png"
BALANCE_PARTITIONS = ("range", "interval", "reflexbicut")
BALANCE_BASELINES = {"range": "range-based", "interval": "interval-based"}  # our partition -> the paper's label


def build_balance(
    results: Path,
    datasets: tuple[str, ...],
    model: str,
    batches: tuple[int, ...],
    ranks: tuple[int, ...],
    epochs: int,
    capacity_slack: float,
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
        run, stream, built = stream_and_model(dataset, model)
        train = stream.split(run.split.train, run.split.val).train
        sampler = RecentNeighbours(stream, relative_times(stream))
        k = built.embedding_neighbours
        for batch in batches:
            for count in ranks:
                if batch * count > train[1] - train[0]:
                    print(
                        f"skipped: batch {batch} x {count} ranks is more than the "
                        f"{train[1] - train[0]} training events of {dataset}"
                    )
                    continue
                # each step's distinct vertices once (what the demand and the dispatch count), not every occurrence per partition
                reads = [
                    [
                        dataclasses.replace(read, series=torch.unique(read.series))
                        for read in epoch_reads(stream, train, batch, count, run.seed, epoch, k, sampler=sampler)
                    ]
                    for epoch in range(epochs)
                ]
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
                        per_step.append(
                            {
                                "dataset": dataset,
                                "batch_per_rank": batch,
                                "ranks": count,
                                "partition": method,
                                "step": step,
                                "balance_cost": value,
                                "slowest_link": costs["slowest_link"][step],
                            }
                        )
                    cost = costs["balance_cost"]
                    rows.append(
                        {
                            "dataset": dataset,
                            "batch_per_rank": batch,
                            "ranks": count,
                            "partition": method,
                            "used": partition.used,
                            "steps": int(cost.size),
                            "max_balance_cost": float(cost.max()),
                            "upper_quartile_balance_cost": float(np.percentile(cost, 75)),
                            "median_balance_cost": float(np.median(cost)),
                            "max_slowest_link": float(costs["slowest_link"].max()),
                            "mean_residual": float(costs["mean_residual"].mean()),
                            "dispatch_rows_per_step": float(pairs.sum(axis=(1, 2)).mean()),
                            "largest_receive_rows": partition.largest_receive_volume,
                            "partition_s": seconds,
                        }
                    )
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
    regime=Regime(
        paper="APAN on REDDIT, 8 trainers and batch 1,200 by default, batch 400-2,400 and 2-64 trainers varied, 10 epochs",
        ours="APAN on the REDDIT-sized stream (generated at REDDIT's published size), 8 virtual trainers, batch 400-2,400, "
        "10 epochs, rows counted exactly",
        why="",
    ),
    departures="Against range the cut is 63-70% cheaper (the paper: 59.2%); against interval it is within -9% to +4% "
    "(the paper: 48.5%): each trainer's slice of a batch reads nearly every hot vertex, so owning what a trainer needs "
    "removes 0.3% of the dispatch, and interval already spreads the hot items evenly (docs/measurements.md, "
    '"Figure 14 as section 5.4 measures it").',
    settings=Settings(
        full={
            "datasets": ("reddit_like",),
            "model": "apan",
            "batches": (400, 800, 1200, 1600, 2000, 2400),
            "ranks": (8,),
            "epochs": 10,
            "capacity_slack": 0.1,
        },
        smoke={"datasets": ("events",), "model": "apan", "batches": (600,), "ranks": (4,), "epochs": 1},
    ),
    headlines=headlines_balance,
)
