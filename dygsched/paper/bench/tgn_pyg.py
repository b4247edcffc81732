"""bench-tgn-pyg: the reference TGN against a TGN built from PyG's temporal modules (that one is
``tgn_pyg_baseline``, imported when the builder runs)."""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from dygsched.errors import ConfigError
from dygsched.paper.bench.common import SECTION, rounded, training_curve
from dygsched.paper.common import table_named, times, write_table
from dygsched.paper.runner import run_or_fail
from dygsched.paper.target import PaperTarget, Regime, Settings, Tables

if TYPE_CHECKING:
    from dygsched.data.events import EventStream

TGN_PYG_CSV = "bench_tgn_pyg.csv"


def _event_stream(dataset: str) -> tuple[EventStream, tuple[int, int]]:
    """The dataset's event stream and its training events' range, as ``dygsched run`` splits it."""
    from dygsched.data.events import EventStream
    from dygsched.data.loading import load_data
    from dygsched.launch.compose import compose_run

    run = compose_run([f"dataset={dataset}"])
    stream = load_data(run.dataset)
    if not isinstance(stream, EventStream):
        raise ConfigError(f"dataset '{dataset}' gives snapshots, not an event stream: TGN trains on events")
    return stream, stream.split(run.split.train, run.split.val).train


def build_tgn_pyg(
    results: Path, dataset: str, epochs: int, batch: int, memory_dim: int, neighbours: int, heads: int, lr: float, seed: int
) -> None:
    """The median training epoch time (evaluation excluded) of a TGN of PyG's modules and of
    ``dygsched run sched=single model=tgn`` with the same widths (memory and time ``memory_dim``,
    ``neighbours`` most recent neighbours, ``heads`` heads, ``batch``), on the same training events,
    and the ratio dygsched / PyG. The two are not the same model to the last detail (PyG's memory
    reads the aggregated raw messages, dygsched's TGL's mails), so the losses are for orientation."""
    from dygsched.paper.bench.tgn_pyg_baseline import pyg_tgn_epochs  # imports torch and PyG's TGN modules

    stream, train = _event_stream(dataset)
    pyg_times, pyg_losses = pyg_tgn_epochs(stream, train, epochs, batch, memory_dim, neighbours, heads, lr, seed)
    with tempfile.TemporaryDirectory() as scratch:
        overrides = [
            f"dataset={dataset}",
            "model=tgn",
            f"model.memory_dim={memory_dim}",
            f"model.time_dim={memory_dim}",
            f"model.neighbours={neighbours}",
            f"model.heads={heads}",
            "sched=single",
            f"sched.batch_size={batch}",
            "world_size=1",
            f"epochs={epochs}",
            f"optim.lr={lr}",
            f"seed={seed}",
            "progress=false",
            "checkpoint=false",
            "metrics.count_flops=false",
            f"results_dir={scratch}",
            "run_id=bench",
        ]
        run_or_fail(overrides, "bench-tgn-pyg: the dygsched run")
        ours_times, ours_losses = training_curve(pd.read_parquet(Path(scratch) / "bench" / "metrics.parquet"))
    pyg, ours = statistics.median(pyg_times), statistics.median(ours_times)
    print(f"{dataset}: {train[1] - train[0]} training events, batch {batch}, TGN d={memory_dim}, {neighbours} neighbours")
    print(f"  PyG modules   epoch times {rounded(pyg_times, 2)} s, median {pyg:.2f} s; train loss {rounded(pyg_losses, 3)}")
    print(f"  dygsched      epoch times {rounded(ours_times, 2)} s, median {ours:.2f} s; train loss {rounded(ours_losses, 3)}")
    table = pd.DataFrame(
        [
            {"implementation": "pyg_modules", "epoch_s": pyg, "final_train_loss": pyg_losses[-1]},
            {"implementation": "dygsched", "epoch_s": ours, "final_train_loss": ours_losses[-1]},
        ]
    ).assign(dataset=dataset, batch=batch, epochs=epochs, ratio=ours / pyg)
    write_table(table, results / TGN_PYG_CSV, f"ratio dygsched / PyG: {ours / pyg:.2f}x (below 1x: dygsched faster)")


def read_tgn_pyg(tables: Tables) -> str:
    table = table_named(tables)
    return f"the reference TGN takes {times(table.ratio.iloc[0])} the epoch time of a TGN of PyG's modules"


TGN_PYG = PaperTarget(
    name="bench-tgn-pyg",
    paper=SECTION.key,
    title="The reference TGN against a TGN of PyG's temporal modules",
    reproduces="(no paper table)",
    outputs=(TGN_PYG_CSV,),
    repeats="median over 3 epochs of each",
    minutes=0.3,
    build=build_tgn_pyg,
    reading=read_tgn_pyg,
    regime=Regime(
        paper="",
        ours="TGN on Enron (143 vertices, 22,784 e-mails), one process, batch 600, memory 100, 10 neighbours, 3 epochs, "
        "against a TGN of PyG's temporal modules",
    ),
    settings=Settings(
        full={
            "dataset": "events",
            "epochs": 3,
            "batch": 600,
            "memory_dim": 100,
            "neighbours": 10,
            "heads": 2,
            "lr": 0.0001,
            "seed": 0,
        },
        smoke={"epochs": 1, "batch": 2000},
    ),
)
