"""Sven's tables and figures (see the `make table-sven-*` targets).

    python scripts/sven_tables.py comm      --out results/sven            # figure 12: bytes per epoch, 2-64 virtual ranks
    python scripts/sven_tables.py balance   --out results/sven            # figure 14: per-step link balance per partition
    python scripts/sven_tables.py accuracy  results/sven/accuracy         # table 4: test AP / AUC, one process vs Sven
    python scripts/sven_tables.py breakdown results/sven/breakdown        # figure 15: epoch time as each mechanism is added

`comm` and `balance` count in this process: which vertices a step reads and writes depends only on
the stream, the batch and the rank count, so every rank pair's bytes are counted exactly for 2-64
virtual ranks (`dygsched.engine.node_memory.volumes`; a test checks the counts against what real
gloo ranks move). `comm` prints the paper's closed forms next to the counts. `accuracy` and
`breakdown` read a sweep's run folders (real ranks on this machine). Each table is printed and
written as CSV.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dygsched.errors import DygschedError
from dygsched.metrics.runs_table import completed_runs

PAPER_COMM = "paper, figure 12: Sven moves 1.25-5.26x less than DepComm and 1.16-2.01x less than DepCache across batch sizes"
PAPER_BALANCE = "paper, figure 14: Re-FlexBiCut's largest balance cost is 59.2% / 48.5% below range / interval"
PAPER_ACCURACY = "paper, table 4 (LASTFM, 4 GPUs, AP): TGL 80.19 / 77.69 / 88.42 vs Sven 80.93 / 78.12 / 88.37 (APAN / JODIE / TGN)"
PAPER_TABLE2 = "paper, table 2: all-to-all and all-reduce take most of DepCache's and DepComm's time on 16 x 4 V100s"
PAPER_BREAKDOWN = (
    "paper, figure 15: redundancy-free 1.14-1.78x, Re-FlexBiCut 1.35-1.41x, micro-batch 1.21-1.43x, async all-reduce 1.05-1.21x"
)


def show(table: pd.DataFrame, out: Path, name: str, *notes: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"sven_{name}.csv"
    table.to_csv(path, index=False)
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.float_format", "{:.4g}".format):
        print(table.to_string(index=False))
    for note in notes:
        print(note)
    print(f"written: {path}")


def stream_and_model(dataset: str, model_name: str):
    """The event stream and the model (its widths decide the row sizes) a config composes."""
    from omegaconf import OmegaConf

    from dygsched.data.loading import load_data
    from dygsched.engine.worker import build_model
    from dygsched.launch.hydra_app import compose_config

    cfg = OmegaConf.to_container(compose_config([f"dataset={dataset}", f"model={model_name}"]), resolve=True)
    stream = load_data(cfg["dataset"])
    return cfg, stream, build_model(cfg["model"], stream)


# ---- figure 12 ------------------------------------------------------------------------------------
def comm(args: argparse.Namespace) -> None:
    from dygsched.data.event_batches import RecentNeighbours, relative_times
    from dygsched.data.partition.vertices import interval_partition
    from dygsched.engine.node_memory.volumes import RowSizes, count_traffic, epoch_reads

    rows = []
    for dataset in args.datasets:
        cfg, stream, model = stream_and_model(dataset, args.model)
        sizes = RowSizes.of(model)
        train = stream.split(cfg["split"]["train"], cfg["split"]["val"]).train
        sampler = RecentNeighbours(stream, relative_times(stream))
        d_state = model.memory_dim + model.mail_dim  # the paper's unit: d_mem + d_msg values
        for batch in args.batches:
            for ranks in args.ranks:
                if batch * ranks > train[1] - train[0]:
                    continue
                reads = list(epoch_reads(stream, train, batch, ranks, cfg["seed"], 0, model.embedding_neighbours, model.mail_neighbours, sampler))
                counted = count_traffic(iter(reads), interval_partition(stream.num_nodes, ranks), ranks, sizes)
                n1 = sum(r.series.numel() for r in reads)
                u1 = sum(int(np.unique(r.series.numpy()).size) for r in reads)
                n2 = sum(r.written.numel() for r in reads)
                u2 = sum(int(np.unique(r.written.numpy()).size) for r in reads)
                share = 2 * (ranks - 1) / ranks
                closed = {  # the paper's equations, with this epoch's N1, N2 and redundancies, in float32 values
                    "depcache": u2 * d_state * 2 * (ranks - 1) ** 2 / ranks,
                    "depcomm": (n1 * model.memory_dim + u2 * d_state) * share,
                    "sven": (u1 + u2) * d_state * share,
                }
                totals = {name: 2 * sum(int(m.sum()) for m in kinds.values()) for name, kinds in counted.items()}  # sent + received
                for name, total in totals.items():
                    rows.append({
                        "dataset": dataset, "batch_per_rank": batch, "ranks": ranks, "strategy": name,
                        "bytes_per_epoch": total, "closed_form_bytes": 4 * closed[name],
                        "eta1": 1 - u1 / n1, "eta2": 1 - u2 / n2, "vs_sven": total / totals["sven"],
                    })  # fmt: skip
    show(
        pd.DataFrame(rows),
        args.out,
        "comm",
        PAPER_COMM,
        f"model={args.model}; interval partition; one training epoch; bytes sent plus received over all ranks, ids and keys "
        "included. Closed forms count state values only (d_mem + d_msg per row), as the paper does; DepCache's equation has "
        "(M - 1)^2 / M where an all-gather of each rank's distinct writes moves 2 (M - 1) N2 (1 - eta2) rows.",
    )


# ---- figure 14 ------------------------------------------------------------------------------------
BALANCE_PARTITIONS = ("range", "interval", "reflexbicut")


def balance(args: argparse.Namespace) -> None:
    """Section 5.4's balance cost: per training step, the trainer-pair matrix C of Sven's dispatch
    all-to-all and its residual against the slowest link (Equation 2), under each partition, over
    ``--epochs`` epochs (each draws its own negatives); owners from the pre-sampling of epoch 0."""
    import torch

    from dygsched.data.event_batches import RecentNeighbours, relative_times
    from dygsched.data.partition.vertices import link_balance, partition_vertices
    from dygsched.engine.node_memory.volumes import demand_matrix, dispatch_pairs, epoch_reads

    rows, per_step = [], []
    for dataset in args.datasets:
        cfg, stream, model = stream_and_model(dataset, args.model)
        train = stream.split(cfg["split"]["train"], cfg["split"]["val"]).train
        sampler = RecentNeighbours(stream, relative_times(stream))
        k = model.embedding_neighbours
        for batch in args.batches:
            for ranks in args.ranks:
                if batch * ranks > train[1] - train[0]:
                    print(f"skipped: batch {batch} x {ranks} ranks is more than the {train[1] - train[0]} training events of {dataset}")
                    continue
                # each step's distinct vertices once (what the demand and the dispatch count), not every occurrence per partition
                reads = [
                    [dataclasses.replace(read, series=torch.unique(read.series)) for read in epoch_reads(stream, train, batch, ranks, cfg["seed"], epoch, k, sampler=sampler)]
                    for epoch in range(args.epochs)
                ]  # fmt: skip
                demand = demand_matrix(iter(reads[0]), ranks, stream.num_nodes)
                found = {}
                for method in BALANCE_PARTITIONS:
                    start = time.perf_counter()
                    partition = partition_vertices(method, demand, capacity_slack=args.capacity_slack)
                    seconds = time.perf_counter() - start
                    pairs = np.concatenate([dispatch_pairs(iter(epoch), partition.owner, ranks) for epoch in reads])
                    costs = link_balance(pairs)
                    found[method] = costs
                    for step, value in enumerate(costs["balance_cost"]):
                        per_step.append({"dataset": dataset, "batch_per_rank": batch, "ranks": ranks, "partition": method, "step": step,
                                         "balance_cost": value, "slowest_link": costs["slowest_link"][step]})  # fmt: skip
                    cost = costs["balance_cost"]
                    rows.append({
                        "dataset": dataset, "batch_per_rank": batch, "ranks": ranks, "partition": method, "used": partition.used,
                        "steps": int(cost.size), "max_balance_cost": float(cost.max()),
                        "upper_quartile_balance_cost": float(np.percentile(cost, 75)), "median_balance_cost": float(np.median(cost)),
                        "max_slowest_link": float(costs["slowest_link"].max()), "mean_residual": float(costs["mean_residual"].mean()),
                        "dispatch_rows_per_step": float(pairs.sum(axis=(1, 2)).mean()),
                        "largest_receive_rows": partition.largest_receive_volume, "partition_s": seconds,
                    })  # fmt: skip
                for row in rows[-len(BALANCE_PARTITIONS) :]:
                    for baseline in ("range", "interval"):
                        row[f"vs_{baseline}_pct"] = 100 * (row["max_balance_cost"] / found[baseline]["balance_cost"].max() - 1)
    table = pd.DataFrame(rows)
    show(
        table,
        args.out,
        "balance",
        PAPER_BALANCE,
        f"model={args.model}; {args.epochs} epoch(s); per step, C[i, j] = N&M rows trainer i receives from trainer j in Sven's "
        "dispatch all-to-all (distinct vertices); balance cost = max(C) - min(C) over the links, the largest entry of the "
        "residual R = max(C) J - C (Equation 2); max_* over every step; owners from epoch 0's pre-sampling; "
        f"capacity slack {args.capacity_slack}.",
    )
    if per_step:
        plot_balance(pd.DataFrame(per_step), args.out / "sven_balance.png")
        print(f"written: {args.out / 'sven_balance.png'}")


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
    fig.savefig(out, dpi=120)


# ---- run folders ----------------------------------------------------------------------------------


def final(metrics: pd.DataFrame, phase: str, metric: str) -> float:
    rows = metrics[(metrics.phase == phase) & (metrics.metric == metric)]
    return float(rows.sort_values("epoch").value.iloc[-1]) if len(rows) else float("nan")


def epoch_time(metrics: pd.DataFrame) -> float:
    """The median training epoch time (the first epoch's warm-up included in the median only)."""
    rows = metrics[(metrics.iteration == -1) & (metrics.phase == "train") & (metrics.metric == "epoch_time_s")]
    return float(rows.groupby("epoch").value.max().median()) if len(rows) else float("nan")


def accuracy(args: argparse.Namespace) -> None:
    rows = []
    for summary, metrics, cfg in completed_runs(args.results, "sven_tables"):
        sched = cfg["sched"]
        rows.append({
            "model": cfg["model"]["name"], "sched": sched["name"], "ranks": summary["world_size"],
            "global_batch": sched["batch_size"] * summary["world_size"], "staleness": sched.get("staleness", 0),
            "test_ap": final(metrics, "test", "ap"), "test_auc": final(metrics, "test", "auc"),
            "val_ap": final(metrics, "val", "ap"), "epochs": summary["epochs_completed"], "seed": cfg["seed"],
        })  # fmt: skip
    runs = pd.DataFrame(rows)
    keys = ["model", "sched", "ranks", "global_batch", "staleness", "epochs"]
    table = runs.groupby(keys, as_index=False).agg(
        seeds=("seed", "nunique"), test_ap=("test_ap", "mean"), test_ap_std=("test_ap", "std"),
        test_auc=("test_auc", "mean"), val_ap=("val_ap", "mean"),
    ).sort_values(["model", "ranks", "staleness"])  # fmt: skip
    show(table, args.results, "accuracy", "mean over seeds (std: their spread; NaN with one seed)", PAPER_ACCURACY, "one process (sched=single, TGL's loop) vs Sven on 2 gloo ranks, same global batch")


BREAKDOWN_ORDER = ("depcache", "depcomm", "+redundancy-free", "+re-flexbicut", "+micro-batch", "+async all-reduce")


def breakdown_step(sched: dict) -> str:
    if sched["name"] in ("depcomm", "depcache"):
        return sched["name"]
    if sched.get("staleness", 0):
        return "+async all-reduce"
    if sched.get("micro_batches", 1) > 1 or sched.get("prefetch", False):
        return "+micro-batch"
    return "+re-flexbicut" if sched.get("partition") == "reflexbicut" else "+redundancy-free"


def epoch_share(metrics: pd.DataFrame, metric: str) -> float:
    """Seconds per epoch in ``metric``: the ranks' mean, the median over epochs."""
    rows = metrics[(metrics.iteration == -1) & (metrics.phase == "train") & (metrics.metric == metric)]
    return float(rows.groupby("epoch").value.mean().median()) if len(rows) else float("nan")


def breakdown(args: argparse.Namespace) -> None:
    rows = []
    for summary, metrics, cfg in completed_runs(args.results, "sven_tables"):
        comm, exchange = epoch_share(metrics, "comm_s"), epoch_share(metrics, "exchange_s")
        rows.append({
            "model": cfg["model"]["name"], "step": breakdown_step(cfg["sched"]), "ranks": summary["world_size"],
            "epoch_time_s": epoch_time(metrics), "compute_s": epoch_share(metrics, "busy_s"), "exchange_s": exchange,
            "allreduce_s": comm - exchange, "wait_s": epoch_share(metrics, "wait_s"),
            "comm_bytes_per_epoch": sum(v for v in summary.get("comm_bytes_per_epoch", {}).values() if isinstance(v, (int, float))),
        })  # fmt: skip
    table = pd.DataFrame(rows)
    table["order"] = table.step.map(BREAKDOWN_ORDER.index)
    table = table.sort_values(["model", "order"]).drop(columns="order")
    table["speedup_vs_previous"] = table.groupby("model").epoch_time_s.transform(lambda s: s.shift(1) / s)
    depcomm = table[table.step == "depcomm"].set_index("model").epoch_time_s
    table["speedup_vs_depcomm"] = table.model.map(depcomm) / table.epoch_time_s
    show(
        table, args.results, "breakdown", PAPER_BREAKDOWN, PAPER_TABLE2,
        "2 gloo ranks on this machine's 2 cores: times are CPU times, not a GPU cluster's. Per epoch (ranks' mean, median epoch): "
        "compute = busy_s, exchange = node-state all-to-alls, allreduce = the rest of comm_s (the gradient all-reduce), wait = "
        "waiting for the slowest rank before it",
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="table", required=True)
    for name in ("comm", "balance"):
        p = sub.add_parser(name)
        p.add_argument("--datasets", nargs="+", default=["events", "sfhh_events"])
        p.add_argument("--model", default="tgn")
        p.add_argument("--batches", type=int, nargs="+", default=[150, 300, 600])
        p.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8, 16, 32, 64] if name == "comm" else [4, 8, 16])
        p.add_argument("--out", type=Path, default=Path("results/sven"))
    sub.choices["balance"].add_argument("--capacity-slack", type=float, default=0.1)
    sub.choices["balance"].add_argument("--epochs", type=int, default=10, help="figure 14 plots 10 epochs")
    sub.choices["balance"].set_defaults(datasets=["reddit_like"], model="apan", batches=[400, 800, 1200, 1600, 2000, 2400], ranks=[8])
    for name in ("accuracy", "breakdown"):
        sub.add_parser(name).add_argument("results", type=Path)
    args = parser.parse_args(argv)
    try:
        {"comm": comm, "balance": balance, "accuracy": accuracy, "breakdown": breakdown}[args.table](args)
    except DygschedError as exc:
        print(f"sven_tables: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
