"""Tables 5 and 7: memory per rank, per variant and model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from dygsched.paper.common import span, speedup_of_reductions, table_named, times, write_table
from dygsched.paper.flare.common import (
    MEMORY_CSV,
    MEMORY_MEASURES,
    OUR_RUNS,
    PAPER_DATASET,
    PAPER_GRAPHS,
    SECTION,
    SMALLER_GRAPH,
    VARIANTS_REPEATS,
    VARIANTS_SWEEP,
    memory_measure,
    paper_layout,
    ratio_over_models,
    relative,
    variant_table,
)
from dygsched.paper.target import Headline, PaperShape, PaperTarget, Regime, Tables


def build_memory(results: Path) -> None:
    """Each measure under its own name, and each against Full-History's same measure (never one
    measure against another): a CPU run has no GPU figure, so its GPU columns are missing."""
    table = variant_table(results / VARIANTS_SWEEP.folder)[["model", "variant", "device", *MEMORY_MEASURES]].copy()
    for column in MEMORY_MEASURES:
        table[column.removesuffix("_mb") + "_vs_full_history"] = relative(table, column, "Full-History")
    note = (
        "the paper's measure is gpu_peak_allocated_mb; on a CPU it is missing and "
        "peak_rss_mb, saved_for_backward_mb, train_memory_mb are other measures"
    )
    write_table(table.sort_values(["model", "variant"]), results / MEMORY_CSV, note)


def by_variant(table: pd.DataFrame, value: str, form: Callable[[float], str]) -> str:
    return "; ".join(
        f"{model}: " + ", ".join(f"{row.variant} {form(getattr(row, value))}" for row in group.itertuples())
        for model, group in table.groupby("model", sort=False)
    )


def read_memory(tables: Tables) -> str:
    """Each measure against Full-History's same measure; the paper's tables 5/7 are the GPU allocator's peak."""
    table = table_named(tables)
    if table["gpu_peak_allocated_mb"].notna().any():
        text = "GPU allocator peak per rank (the paper's measure) against Full-History's, " + by_variant(
            table, "gpu_peak_allocated_vs_full_history", times
        )
    else:
        text = "no GPU in these runs, so no figure of the paper's measure (the GPU allocator's peak)"
    return (
        text
        + "; bytes saved for the backward plus parameters and states against Full-History's, "
        + by_variant(table, "train_memory_vs_full_history", times)
        + f"; the process's peak resident set {span(table.peak_rss_mb, lambda v: f'{v:.0f}')} MB"
    )


def shape_memory(tables: Tables) -> PaperShape:
    """Table 7's layout: models as rows, Full-History / Ours as columns, MB per rank (the GPU
    allocator's peak; the training memory where the runs had no GPU, as the unit says). Table 5
    compares systems we do not run (ESDG, DynaGraph, DynaHB)."""
    table = table_named(tables)
    measure, unit = memory_measure(table)
    frame = paper_layout(table, measure, {"Full-History": "Full-History", "FlareDTDG": "Ours"})
    return PaperShape(frame, paper_ref="Table 7", paper_dataset=PAPER_DATASET, rank_within="rows", unit=unit)


def headlines_memory(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """Section 4.3's stated range of memory reduction against Full-History, as Full-History's memory over
    FlareDTDG's, beside ours (the measure ``memory_measure`` picks)."""
    table = table_named(tables)
    measure, _ = memory_measure(table)
    paper = speedup_of_reductions(published, "Ours vs Full-History", "GPU memory reduction min", "GPU memory reduction max")
    return (
        Headline(
            "Full-History's memory per rank over FlareDTDG's",
            paper,
            ratio_over_models(table, measure, "Full-History", "FlareDTDG"),
        ),
    )


MEMORY = PaperTarget(
    name="table-flare-memory",
    paper=SECTION.key,
    title=(
        "Memory per rank, each measure under its own name: GPU allocator peak (GPU runs only), peak resident set, "
        "bytes saved for the backward, training memory; Full-History against FlareDTDG"
    ),
    reproduces="FlareDTDG tables 5 and 7 (the paper's figures are the GPU allocator's peak per GPU)",
    outputs=(MEMORY_CSV,),
    repeats=f"{VARIANTS_REPEATS}; per-epoch peaks, median over epochs 2-4",
    minutes=11,  # the variants sweep (table-flare-accuracy's runs)
    build=build_memory,
    reading=read_memory,
    sweep=VARIANTS_SWEEP,
    shape=shape_memory,
    headlines=headlines_memory,
    regime=Regime(
        paper=f"Peak GPU allocation per GPU of T-GCN, MPNN-LSTM and EvolveGCN on {PAPER_GRAPHS}.",
        ours=f"{OUR_RUNS[0].upper()}{OUR_RUNS[1:]}: training memory per rank (saved for the backward, "
        "parameters, states) and the peak resident set; the GPU allocator's peak only where the runs had a GPU.",
        why=SMALLER_GRAPH + " Without a GPU the paper's measure is missing and training memory stands in for it.",
    ),
)
