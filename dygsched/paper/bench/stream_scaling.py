"""bench-stream-scaling: TGN, JODIE and APAN in one process as the stream grows to REDDIT's size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from dygsched.paper.bench.common import SECTION, growth_exponent
from dygsched.paper.common import completed_runs, table_named, write_table
from dygsched.paper.target import PaperTarget, Regime, Sweep, Tables

STREAM_SCALING_DIR = "stream_scaling"
STREAM_SCALING_CSV = f"{STREAM_SCALING_DIR}/stream_scaling.csv"
STREAM_SCALING_PNG = f"{STREAM_SCALING_DIR}/stream_scaling.png"
REDDIT_SHAPE = ("dataset=bipartite", "dataset.edge_dim=172", "dataset.repeat_probability=0.5")  # with REDDIT's users and items


def _stream_size(events: int, users: int, items: int, epochs: int) -> tuple[str, ...]:
    """Every model at one stream size, in one process each (TGL's loop)."""
    return (
        *REDDIT_SHAPE,
        f"dataset.num_users={users}",
        f"dataset.num_items={items}",
        f"dataset.num_events={events}",
        "model=tgn,jodie,apan",
        "sched=single",
        "world_size=1",
        f"epochs={epochs}",
        "seed=0",
    )


# smallest first, the models alternated at each size: a larger size starts after all finished the smaller
STREAM_SCALING_SWEEP = Sweep(
    folder=STREAM_SCALING_DIR,
    runs=tuple(_stream_size(events, users=10_000, items=984, epochs=2) for events in (20_000, 80_000, 157_474, 672_447)),
    smoke=tuple(_stream_size(events, users=200, items=40, epochs=1) for events in (2_000, 4_000)),
)


def _run_config(folder: Path, run_id: str) -> Any:
    """A run's configuration as it ran (its folder's ``config.yaml``)."""
    from omegaconf import OmegaConf

    return OmegaConf.load(folder / run_id / "config.yaml")


def _plot_stream_scaling(table: pd.DataFrame, out: Path) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, column, label in (
        (axes[0], "epoch_time_s", "seconds per training epoch"),
        (axes[1], "peak_rss_mb", "peak resident set (MB)"),
    ):
        for model, rows in table.groupby("model", sort=False):
            ax.loglog(rows["events"], rows[column], "o-", label=f"{model} (slope {growth_exponent(rows, 'events', column):.2f})")
        sizes = sorted(table["events"].unique())
        ax.set_xticks(sizes, [f"{e / 1000:g}k" for e in sizes])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("events in the stream")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle("One process, REDDIT-shaped generated stream (172 edge features)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def build_stream_scaling(results: Path) -> None:
    """TGN, JODIE and APAN (``sched=single``) on the generated REDDIT-shaped stream cut to each size:
    the training epoch time and the peak resident set of each run's process against the events, a
    table and a log-log plot with the fitted growth exponent per model (1.0 is linear)."""
    folder = results / STREAM_SCALING_DIR
    runs = completed_runs(folder)
    table = (
        pd.DataFrame(
            {
                "model": runs["model"],
                "events": [int(_run_config(folder, run_id).dataset.num_events) for run_id in runs["run_id"]],
                "epoch_time_s": runs["epoch_time_s"].astype(float),
                "peak_rss_mb": pd.to_numeric(runs["peak_rss_bytes"], errors="coerce") / 2**20,
                "test_ap": pd.to_numeric(runs["eval.value"], errors="coerce") if "eval.value" in runs else float("nan"),
            }
        )
        .sort_values("events", kind="stable")
        .reset_index(drop=True)
    )
    growth = [
        f"{model}: epoch time grows as events^{growth_exponent(rows, 'events', 'epoch_time_s'):.2f}, "
        f"peak memory as events^{growth_exponent(rows, 'events', 'peak_rss_mb'):.2f}"
        for model, rows in table.groupby("model", sort=False)
    ]
    write_table(table, results / STREAM_SCALING_CSV, *growth)
    _plot_stream_scaling(table, results / STREAM_SCALING_PNG)
    print(f"written: {results / STREAM_SCALING_PNG}")


def read_stream_scaling(tables: Tables) -> str:
    table = table_named(tables)
    parts = []
    for model, rows in table.groupby("model", sort=False):
        rows = rows.sort_values("events")
        first, last = rows.iloc[0], rows.iloc[-1]
        slope = growth_exponent(rows, "events", "epoch_time_s")
        parts.append(
            f"{model} {first.epoch_time_s:.2f} s at {int(first.events):,} events to "
            f"{last.epoch_time_s:.2f} s at {int(last.events):,} (time ~ events^{slope:.2f})"
        )
    return "seconds per epoch in one process: " + "; ".join(parts)


STREAM_SCALING = PaperTarget(
    name="bench-stream-scaling",
    paper=SECTION.key,
    title="TGN, JODIE and APAN in one process as the stream grows to REDDIT's size",
    reproduces="(no paper table)",
    outputs=(STREAM_SCALING_CSV, STREAM_SCALING_PNG),
    repeats="one run per model and size, median over its epochs",
    minutes=19,
    build=build_stream_scaling,
    reading=read_stream_scaling,
    regime=Regime(
        paper="",
        ours="TGN, JODIE and APAN in one process on generated streams of 10,984 vertices and 20,000 to 672,447 events "
        "(REDDIT's size), 2 epochs each",
    ),
    sweep=STREAM_SCALING_SWEEP,
)
