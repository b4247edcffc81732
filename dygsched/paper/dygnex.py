"""DyGNeX: snapshot-group schedules across GPUs: epoch time, imbalance, convergence, solve time."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dygsched.paper.common import completed_runs, geometric_mean, holds, speedup_of_reductions, table_named, times, write_table
from dygsched.paper.target import Headline, PaperShape, PaperTarget, Section, Sweep, Tables

SECTION = Section("dygnex", "DyGNeX", "Snapshot-group schedules across GPUs: epoch time, imbalance, convergence, solve time.")

# our names -> the paper's row and column labels
STRATEGY_LABELS = {"psg": "PSG", "esdg": "ESDG", "blad": "BLAD", "dygnex_g": "DYGNEX-G", "dygnex_l": "DYGNEX-L"}
MODEL_LABELS = {"evolvegcn_o": "EvolveGCN", "wdgcn": "WD-GCN", "tgcn": "TGCN", "gat_lstm": "GAT-LSTM"}
SCHED_ORDER = ["psg", "esdg", "blad", "dygnex_g", "dygnex_l", "real_g_paper", "greedy", "ilp", "real"]


# ---- table 4: epoch time and imbalance -------------------------------------------------------------
EPOCH_TIME_CSV = "table_epoch_time/table_epoch_time.csv"


def build_epoch_time(results: Path) -> None:
    """Epoch time and imbalance per strategy, model and dataset, with each one's speedup over PSG."""
    runs = completed_runs(results / "table_epoch_time")
    columns = ["dataset", "model", "sched", "world_size", "epoch_time_s", "imbalance_ratio", "final_train_loss", "eval.metric", "eval.value"]
    table = runs[columns].copy()
    psg = table[table["sched"] == "psg"].set_index(["dataset", "model", "world_size"])["epoch_time_s"]
    table["speedup_vs_psg"] = [
        psg.get((d, m, w), float("nan")) / t for d, m, w, t in zip(table["dataset"], table["model"], table["world_size"], table["epoch_time_s"])
    ]
    present = set(table["sched"])
    table["sched"] = pd.Categorical(table["sched"], [s for s in SCHED_ORDER if s in present] + sorted(present - set(SCHED_ORDER)))
    table = table.sort_values(["dataset", "model", "sched"]).reset_index(drop=True)
    write_table(table, results / EPOCH_TIME_CSV)


def read_epoch_time(tables: Tables) -> str:
    table = table_named(tables).dropna(subset=["epoch_time_s"])
    parts = []
    for (dataset, model), group in table.groupby(["dataset", "model"]):
        best = group.loc[group.epoch_time_s.idxmin()]
        parts.append(f"{model} on {dataset}: {best.sched} fastest ({times(best.speedup_vs_psg)} PSG)")
    low, high = table.imbalance_ratio.min(), table.imbalance_ratio.max()
    text = "; ".join(parts) + f"; busy-time imbalance {low:.3g} to {high:.3g}"
    pairs = table.pivot_table(index=["dataset", "model"], columns="sched", values="epoch_time_s", observed=True)
    if {"greedy", "dygnex_g"} <= set(pairs.columns):
        text += f"; greedy ≤ DyGNeX-G {holds(int((pairs.greedy <= pairs.dygnex_g * 1.02).sum()), len(pairs))} (2% noise)"
    return text


def shape_epoch_time(tables: Tables) -> PaperShape:
    """Table 4's layout: the paper's strategies as rows, its models as columns, seconds per epoch."""
    table = table_named(tables)
    table = table[table.sched.isin(STRATEGY_LABELS) & table.model.isin(MODEL_LABELS)]
    frame = table.pivot_table(index="sched", columns="model", values="epoch_time_s", aggfunc="median", observed=True)
    frame = frame.rename(index=STRATEGY_LABELS, columns=MODEL_LABELS)
    order = [label for label in STRATEGY_LABELS.values() if label in frame.index]
    return PaperShape(frame.loc[order], paper_ref="Table 4", paper_dataset="Arxiv", rank_within="columns", unit="s")


def headlines_epoch_time(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """Section 5.2's ranges of DyGNeX-L's epoch-time reduction against each baseline, as speedups
    (the geometric mean of the range's ends), beside ours over the models we ran."""
    table = table_named(tables)
    wide = table.pivot_table(index=["dataset", "model"], columns="sched", values="epoch_time_s", aggfunc="median", observed=True)
    headlines = []
    for baseline in ("psg", "esdg", "blad", "dygnex_g"):
        label = STRATEGY_LABELS[baseline]
        paper = speedup_of_reductions(published, f"DYGNEX-L vs {label}", "epoch time reduction min", "epoch time reduction max")
        ours = geometric_mean(wide[baseline] / wide["dygnex_l"]) if {baseline, "dygnex_l"} <= set(wide.columns) else None
        headlines.append(Headline(f"{label} over DyGNeX-L, epoch time", paper, ours))
    return tuple(headlines)


EPOCH_TIME = PaperTarget(
    name="table-epoch-time",
    paper="dygnex",
    title="Epoch time and imbalance per strategy and model",
    reproduces="DyGNeX table 4",
    outputs=(EPOCH_TIME_CSV,),
    repeats="median over epochs 2-10 of one run per cell",
    minutes=10,
    build=build_epoch_time,
    reading=read_epoch_time,
    sweep=Sweep(
        folder="table_epoch_time",
        runs=(("+experiment=epoch_time", "sched=psg,esdg,blad,dygnex_g,dygnex_l,greedy,ilp", "model=tgcn,wdgcn"),),
        smoke=(("+experiment=epoch_time", "sched=psg,dygnex_l", "model=tgcn", "+smoke=snapshots"),),
    ),
    shape=shape_epoch_time,
    headlines=headlines_epoch_time,
)

TARGETS: tuple[PaperTarget, ...] = (EPOCH_TIME,)
