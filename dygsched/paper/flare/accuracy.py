"""Table 6: test MSE per variant (Full-History, Recent-Only, FlareDTDG) and model."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dygsched.paper.common import table_named, write_table
from dygsched.paper.flare.common import (
    ACCURACY_CSV,
    OUR_GRAPH,
    PAPER_DATASET,
    PAPER_GRAPHS,
    SECTION,
    SMALLER_GRAPH,
    VARIANTS_SWEEP,
    headline,
    paper_layout,
    paper_ratio,
    ratio_over_models,
    variant_table,
)
from dygsched.paper.target import Headline, PaperShape, PaperTarget, Regime, Tables

ACCURACY_COLUMNS = {"Full-History": "Full-History", "Recent-Only": "Recent-Only", "FlareDTDG": "Ours"}


def build_accuracy(results: Path) -> None:
    """Test MSE per model (rows) and variant (columns)."""
    table = variant_table(results / VARIANTS_SWEEP.folder).pivot_table(index="model", columns="variant", values="test_mse")
    table.columns.name = None
    write_table(table.reset_index(), results / ACCURACY_CSV)


def read_accuracy(tables: Tables) -> str:
    table = table_named(tables).set_index("model")
    parts = []
    for model, row in table.iterrows():
        text = f"{model}: " + ", ".join(f"{variant} {mse:.4f}" for variant, mse in row.dropna().items())
        if {"FlareDTDG", "Full-History"} <= set(row.dropna().index):
            text += f" (FlareDTDG {row['FlareDTDG'] / row['Full-History'] - 1:+.1%} against Full-History)"
        parts.append(text)
    return "test MSE, " + "; ".join(parts)


def _accuracy_long(tables: Tables) -> pd.DataFrame:
    wide = table_named(tables)
    return wide.melt(id_vars="model", var_name="variant", value_name="test_mse")


def shape_accuracy(tables: Tables) -> PaperShape:
    """Table 6's layout: models as rows, Full-History / Recent-Only / Ours as columns, test MSE;
    each model ranks its variants."""
    frame = paper_layout(_accuracy_long(tables), "test_mse", ACCURACY_COLUMNS)
    return PaperShape(frame, paper_ref="Table 6", paper_dataset=PAPER_DATASET, rank_within="rows", unit="MSE")


def headlines_accuracy(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """FlareDTDG's test MSE over Recent-Only's (the paper's "Improv.") and over Full-History's, the
    paper's over every model and dataset of table 6, ours over our models."""
    long = _accuracy_long(tables)
    return tuple(
        headline(
            f"FlareDTDG's test MSE over {baseline}'s",
            paper_ratio(published, "Table 6", "Ours", baseline),
            ratio_over_models(long, "test_mse", "FlareDTDG", baseline),
        )
        for baseline in ("Recent-Only", "Full-History")
    )


ACCURACY = PaperTarget(
    name="table-flare-accuracy",
    paper=SECTION.key,
    title="Test MSE: Full-History, Recent-Only, FlareDTDG per model",
    reproduces="FlareDTDG table 6",
    outputs=(ACCURACY_CSV,),
    repeats="one run per cell (4 epochs)",
    minutes=11,  # the variants sweep, 12 runs, alone on 2 cores (2026-11-27)
    build=build_accuracy,
    reading=read_accuracy,
    departures="On this synthetic graph the older snapshots carry little that the two most recent do not: Recent-Only's "
    "test MSE is 1.8% (T-GCN), 10% (MPNN-LSTM) and 14% (EvolveGCN-O) above Full-History's, against 1.15x to 12.8x on "
    "the paper's graphs, so FlareDTDG's gain over Recent-Only is bounded by that gap (0.91 against the paper's 0.35). "
    "FlareDTDG matches Full-History (0.99; EvolveGCN-O equal, its last prediction seeing older snapshots only through "
    'the number of weight-evolution steps, docs/measurements.md, "FlareDTDG"), where the paper\'s is 15% above it.',
    sweep=VARIANTS_SWEEP,
    shape=shape_accuracy,
    headlines=headlines_accuracy,
    regime=Regime(
        paper=f"Test MSE of T-GCN, MPNN-LSTM and EvolveGCN on {PAPER_GRAPHS}; Recent-Only keeps the 2 most recent snapshots.",
        ours=f"{OUR_GRAPH}; T-GCN, MPNN-LSTM and EvolveGCN-O under Full-History, Recent-Only, FlareDTDG and the authors' "
        "schedule, one run each.",
        why=SMALLER_GRAPH,
    ),
)
