"""Tables 9-11: epoch time, halo exchange and memory with shrinking and overlap."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dygsched.paper.common import speedup_of_reductions, table_named, times, write_table
from dygsched.paper.flare.common import (
    OUR_GRAPH,
    PAPER_DATASET,
    PAPER_GRAPHS,
    SECTION,
    TIME_CSV,
    TIME_SWEEP,
    headline,
    memory_measure,
    paper_layout,
    paper_ratio,
    ratio_over_models,
    relative,
    variant_table,
)
from dygsched.paper.flare.memory import by_variant
from dygsched.paper.target import Headline, PaperShape, PaperTarget, Regime, Tables

TIME_COLUMNS = ["model", "variant", "epoch_time_s", "halo_s", "halo_mb", "gpu_peak_allocated_mb", "train_memory_mb", "test_mse"]


def build_time(results: Path) -> None:
    """Epoch time, communication time not overlapped (``halo_s``) and memory per variant, against
    FlareDTDG's (shrinking on, no overlap)."""
    table = variant_table(results / TIME_SWEEP.folder)[TIME_COLUMNS].copy()
    if (table.variant == "Full-History").any():
        table["vs_full_history"] = relative(table, "epoch_time_s", "Full-History")
    table["vs_flare"] = relative(table, "epoch_time_s", "FlareDTDG")
    table["halo_s_vs_flare"] = relative(table, "halo_s", "FlareDTDG")
    write_table(
        table.sort_values(["model", "variant"]),
        results / TIME_CSV,
        "the paper's tables 9-10 are convergence time and memory, 11 communication time; here epoch time beside them",
    )


def read_time(tables: Tables) -> str:
    return "epoch time against FlareDTDG's, " + by_variant(table_named(tables), "vs_flare", times)


def shape_time(tables: Tables) -> PaperShape:
    """Table 11's layout: models as rows, w/o Async (FlareDTDG, exchanges wait) / w/ Async (Ours:
    exchanges posted ahead, ordered by the task-time MLP) as columns, seconds per epoch of
    communication not overlapped (``halo_s`` counts the posting and the waiting, not the overlap)."""
    frame = paper_layout(table_named(tables), "halo_s", {"FlareDTDG": "w/o Async", "overlap mlp": "w/ Async (Ours)"})
    return PaperShape(frame, paper_ref="Table 11", paper_dataset=PAPER_DATASET, rank_within="rows", unit="s/epoch")


def headlines_time(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """Section 4.3's ratios, each as the baseline's over FlareDTDG's: communication not overlapped
    without async over with it; time without shrinking over with it (table 9's
    convergence times; ours per epoch, the same ratio since shrinking only renumbers nodes and leaves
    the arithmetic, so the epochs to converge, as they were); memory without shrinking over with it
    (the measure ``memory_measure`` picks); the paper's ranges are read from its published rows."""
    table = table_named(tables)
    measure, _ = memory_measure(table)
    overlap = speedup_of_reductions(
        published, "w/ vs w/o Async", "communication time reduction min", "communication time reduction max"
    )
    shrink_memory = speedup_of_reductions(
        published, "w/ vs w/o Shrinking", "peak GPU memory reduction min", "peak GPU memory reduction max"
    )
    return (
        Headline(
            "communication not overlapped, without async over with it",
            overlap,
            ratio_over_models(table, "halo_s", "FlareDTDG", "overlap mlp"),
        ),
        headline(
            "time without shrinking over with it (paper: to converge; ours: per epoch)",
            paper_ratio(published, "Table 9", "w/o Shrinking", "w/ Shrinking (Ours)"),
            ratio_over_models(table, "epoch_time_s", "w/o shrinking", "FlareDTDG"),
        ),
        Headline(
            "memory per rank without shrinking over with it",
            shrink_memory,
            ratio_over_models(table, measure, "w/o shrinking", "FlareDTDG"),
        ),
    )


TIME = PaperTarget(
    name="table-flare-time",
    paper=SECTION.key,
    title="Epoch time; shrinking on and off; overlap none, rr, mlp",
    reproduces="FlareDTDG tables 9-11 (as epoch time; table 8's convergence time is table-flare-convergence)",
    outputs=(TIME_CSV,),
    repeats="median over epochs 2-4 of one run per cell",
    minutes=8.5,  # 8 runs, alone on 2 cores (2026-11-27)
    build=build_time,
    departures="Shrinking saves the renumbering of each step, while with it the remap is 3.5-6% of an epoch here "
    "(table-flare-breakdown): less than the spread of one run's epoch time on this machine, where T-GCN's variants, "
    "which train the same MSE to every digit, range from 0.89x to 1.05x of FlareDTDG's epoch (one run each, the "
    "median of epochs 2-4). Training memory does not depend on the node order, so it is equal with and without "
    "shrinking by construction (768 and 353 MB); the paper's 6% is the GPU allocator's, which a CPU run does not "
    "measure. Overlap's 23-30% less unhidden communication for T-GCN (0.29 s to 0.20-0.23 s) lies within the same "
    "spread (without shrinking, which overlaps nothing, 0.22 s), and MPNN-LSTM's halo is 2% of its epoch.",
    reading=read_time,
    sweep=TIME_SWEEP,
    shape=shape_time,
    headlines=headlines_time,
    regime=Regime(
        paper=f"Convergence time (table 9), peak GPU memory (table 10) and communication not overlapped per epoch "
        f"(table 11) of T-GCN, MPNN-LSTM and EvolveGCN on {PAPER_GRAPHS}.",
        ours=f"{OUR_GRAPH}; T-GCN and MPNN-LSTM under FlareDTDG, without shrinking, and with overlap rr and mlp: epoch "
        "time, communication not overlapped and memory, the median of epochs 2-4.",
        why="Graphs of millions of nodes on GPUs are beyond 2 CPU cores; epoch time stands for convergence time "
        "(shrinking leaves the arithmetic), and the ranks exchange through gloo on one machine.",
    ),
)
