"""Figure 7: epoch time and memory per rank count, with the speedup over one rank."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from dygsched.paper.common import published_value, table_named, times, write_table
from dygsched.paper.flare.common import SCALING_CSV, SCALING_SWEEP, SECTION, headline, memory_measure, variant_table
from dygsched.paper.target import Headline, PaperTarget, Regime, Tables

FIGURE7_GPUS = 4  # the paper's text states figure 7's speedup and memory from 1 to 4 GPUs


def build_scaling(results: Path) -> None:
    """Epoch time and memory per rank count, with the speedup over one rank."""
    table = variant_table(results / SCALING_SWEEP.folder)[
        ["model", "variant", "world_size", "epoch_time_s", "gpu_peak_allocated_mb", "train_memory_mb", "halo_mb"]
    ]
    table = table.sort_values(["model", "world_size"]).reset_index(drop=True)
    one = table[table.world_size == 1].set_index("model")["epoch_time_s"]
    table["speedup_vs_1_rank"] = table["model"].map(one) / table["epoch_time_s"]
    write_table(table, results / SCALING_CSV, "the ranks share this machine's cores")


def read_scaling(tables: Tables) -> str:
    table = table_named(tables).sort_values("world_size")
    one, most = table.iloc[0], table.iloc[-1]
    return (
        f"{int(one.world_size)} to {int(most.world_size)} ranks: {times(most.speedup_vs_1_rank)} the speed, "
        f"training memory per rank {times(most.train_memory_mb / one.train_memory_mb)}"
    )


def per_doubling(ratio: float, ranks_from: float, ranks_to: float) -> float | None:
    """A ratio between two rank counts as the ratio per doubling of the ranks (its log2-th root)."""
    doublings = math.log2(ranks_to / ranks_from)
    if doublings <= 0 or not ratio == ratio or ratio <= 0:
        return None
    return ratio ** (1 / doublings)


def headlines_scaling(tables: Tables, published: pd.DataFrame) -> tuple[Headline, ...]:
    """Figure 7's text: about 2.6x the speed from 1 to 4 GPUs, and memory per GPU from 7.5 GB to
    2.3 GB; we run 1 and 2 ranks, so both sides are per doubling of the ranks. Figure 7's comparison
    with DynaHB is a system we do not run."""
    table = table_named(tables).sort_values("world_size")
    speedup = per_doubling(published_value(published, "FlareDTDG 1 to 4 GPUs", "speedup (approx.)"), 1, FIGURE7_GPUS)
    memory = per_doubling(
        published_value(published, "FlareDTDG per-GPU memory", "4 GPUs")
        / published_value(published, "FlareDTDG per-GPU memory", "1 GPU"),
        1,
        FIGURE7_GPUS,
    )
    measure, _ = memory_measure(table)
    one, most = table.iloc[0], table.iloc[-1]
    ours_speedup = per_doubling(float(most.speedup_vs_1_rank), one.world_size, most.world_size)
    ours_memory = per_doubling(float(most[measure] / one[measure]), one.world_size, most.world_size)
    return (
        headline("speedup per doubling of the ranks", speedup, ours_speedup),
        headline("memory per rank per doubling of the ranks", memory, ours_memory),
    )


SCALING = PaperTarget(
    name="fig-flare-scaling",
    paper=SECTION.key,
    title="Epoch time and memory on 1 and 2 ranks",
    reproduces="FlareDTDG figure 7",
    outputs=(SCALING_CSV,),
    repeats="median over epochs 2-4 of one run per rank count",
    minutes=3,
    build=build_scaling,
    reading=read_scaling,
    sweep=SCALING_SWEEP,
    headlines=headlines_scaling,
    regime=Regime(
        paper="MPNN-LSTM on 1 to 16 A40 GPUs; the text states the speedup and soc-flickr's memory per GPU from 1 to 4 GPUs.",
        ours="FlareDTDG's MPNN-LSTM, the paper's model, on +experiment=flare (100,000 nodes, 20 snapshots, windows of 8, "
        "4 epochs) on 1 and 2 ranks.",
        why="This machine has 2 cores, so 2 ranks at most, sharing them; both sides are compared per doubling of the ranks.",
    ),
)
