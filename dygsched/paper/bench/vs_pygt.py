"""bench-vs-pygt: one rank of dygsched against the plain PyTorch Geometric Temporal loop a user writes
(that loop is ``vs_pygt_baseline``, imported when the builder runs)."""

from __future__ import annotations

import importlib.util
import statistics
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from dygsched.errors import ConfigError
from dygsched.paper.bench.common import SECTION, rounded, training_curve
from dygsched.paper.common import table_named, times, write_table
from dygsched.paper.runner import run_or_fail
from dygsched.paper.target import Needed, PaperTarget, Regime, Settings, Tables

if TYPE_CHECKING:
    from dygsched.data.groups import SnapshotGroup
    from dygsched.data.temporal_graph import TemporalGraph

VS_PYGT_CSV = "bench_vs_pygt.csv"
VS_PYGT_DATASETS = {  # name -> dataset overrides (the synthetic graph: 20,000 nodes, the scale the comparison asks for)
    "twitter_tennis": ("dataset=twitter_tennis",),
    "synthetic20k": ("dataset=synthetic", "dataset.num_nodes=20000", "dataset.avg_degree=8", "dataset.num_snapshots=16"),
}
VS_PYGT_MODELS = ("tgcn", "mpnn_lstm", "evolvegcn_o", "evolvegcn_h", "wdgcn", "gat_lstm", "gclstm")


def _snapshot_graph(dataset: str, window: int) -> tuple[TemporalGraph, tuple[SnapshotGroup, ...], float]:
    """The dataset's snapshots, its training groups (sliding windows, the time split's training part)
    and the configured learning rate, as ``dygsched run`` would make them."""
    from dygsched.data.groups import sliding_groups, split_by_time
    from dygsched.data.loading import load_graph
    from dygsched.launch.compose import compose_run

    run = compose_run([*VS_PYGT_DATASETS[dataset], f"window={window}"])
    graph = load_graph(run.dataset)
    split = split_by_time(sliding_groups(graph.num_snapshots, window), run.split.train, run.split.val)
    return graph, split.train, run.optim.learning_rate


def model_width(model_name: str, in_channels: int, hidden: int) -> int:
    """tgt's EvolveGCN keeps the input's width; every other model runs at ``hidden``."""
    return in_channels if model_name.startswith("evolvegcn") else hidden


def _dygsched_snapshot_epochs(
    dataset: str,
    model_name: str,
    groups: int,
    width: int,
    epochs: int,
    layers: int,
    window: int,
    seed: int,
    extra: tuple[str, ...],
) -> tuple[list[float], list[float]]:
    """``dygsched run sched=psg world_size=1`` with the plain loop's width, layers, windows and seed."""
    with tempfile.TemporaryDirectory() as scratch:
        overrides = [
            *VS_PYGT_DATASETS[dataset],
            f"model={model_name}",
            f"model.hidden_channels={width}",
            f"model.num_layers={1 if model_name == 'mpnn_lstm' else layers}",
            "sched=psg",
            "world_size=1",
            f"window={window}",
            f"epochs={epochs}",
            f"seed={seed}",
            "progress=false",
            "checkpoint=false",
            "metrics.count_flops=false",
            f"results_dir={scratch}",
            "run_id=bench",
            *extra,
        ]
        run_or_fail(overrides, f"bench-vs-pygt: the dygsched run of {model_name} on {dataset}")
        return training_curve(pd.read_parquet(Path(scratch) / "bench" / "metrics.parquet"), groups)


def build_vs_pygt(
    results: Path,
    datasets: tuple[str, ...],
    models: tuple[str, ...],
    epochs: int,
    hidden: int,
    layers: int,
    window: int,
    seed: int,
    extra: tuple[str, ...] = (),
) -> None:
    """Per dataset and model, the median training time per group of the plain PyTorch Geometric
    Temporal loop (what tgt's examples do: the same snapshots, groups, optimizer and learning rate)
    and of dygsched on one rank, their ratio and both final losses (they must go down alike).

    The plain model is tgt's cell where tgt has one: ``TGCN`` and ``GCLSTM`` stacked ``layers`` deep; ``MPNNLSTM``
    over the window as one block-diagonal batch, as tgt builds it; ``EvolveGCNO``/``EvolveGCNH``
    stacked with a ReLU after each, restarting from the initial weight at each group, at the input's
    width (tgt's EvolveGCN keeps it, so both sides run it there). tgt has no WD-GCN or GAT-LSTM: their
    plain loop is PyG's ``GCNConv``/``GATConv`` and ``nn.LSTMCell``. TGCN's semantics are the same
    on both sides; tgt's MPNN-LSTM normalises a window with one batch norm and appends a different
    skip block, so its losses are for orientation. GC-LSTM's semantics are the same on both sides
    (``K = 2``, the config's). ``extra``: overrides for the dygsched runs."""
    for name in datasets:
        if name not in VS_PYGT_DATASETS:
            raise ConfigError(f"bench-vs-pygt: unknown dataset {name!r} (known: {', '.join(sorted(VS_PYGT_DATASETS))})")
    for model_name in models:
        if model_name not in VS_PYGT_MODELS:
            raise ConfigError(f"bench-vs-pygt: unknown model {model_name!r} (known: {', '.join(VS_PYGT_MODELS)})")
    if importlib.util.find_spec("torch_geometric_temporal") is None:
        raise ConfigError("bench-vs-pygt times PyTorch Geometric Temporal's loop: pip install 'dygsched[pgt]' first")
    from dygsched.paper.bench.vs_pygt_baseline import plain_epochs  # imports torch and PyTorch Geometric Temporal

    rows = []
    print(f"{'dataset':<16}{'model':<11}{'plain ms/group':>15}{'dygsched ms/group':>19}{'ratio':>8}   losses (plain | dygsched)")
    for name in datasets:
        graph, groups, lr = _snapshot_graph(name, window)
        for model_name in models:
            plain_times, plain_losses = plain_epochs(graph, groups, model_name, lr, epochs, hidden, layers, window, seed)
            width = model_width(model_name, graph.snapshots[0].x.shape[1], hidden)
            ours_times, ours_losses = _dygsched_snapshot_epochs(
                name, model_name, len(groups), width, epochs, layers, window, seed, extra
            )
            plain, ours = statistics.median(plain_times) * 1e3, statistics.median(ours_times) * 1e3
            losses = f"{rounded(plain_losses, 4)} | {rounded(ours_losses, 4)}"
            print(f"{name:<16}{model_name:<11}{plain:>15.2f}{ours:>19.2f}{ours / plain:>7.2f}x   {losses}", flush=True)
            rows.append(
                {
                    "dataset": name,
                    "model": model_name,
                    "plain_ms_per_group": plain,
                    "dygsched_ms_per_group": ours,
                    "ratio": ours / plain,
                    "plain_final_loss": plain_losses[-1],
                    "dygsched_final_loss": ours_losses[-1],
                    "epochs": epochs,
                }
            )
    write_table(pd.DataFrame(rows), results / VS_PYGT_CSV)


def read_vs_pygt(tables: Tables) -> str:
    table = table_named(tables)
    rows = ", ".join(f"{row.model} on {row.dataset} {times(row.ratio)}" for row in table.itertuples())
    return f"dygsched's time per training group against the plain PyG-Temporal loop: {rows} (below 1x: dygsched faster)"


VS_PYGT = PaperTarget(
    name="bench-vs-pygt",
    paper=SECTION.key,
    title="One rank against a plain PyTorch Geometric Temporal loop",
    reproduces="(no paper table)",
    outputs=(VS_PYGT_CSV,),
    repeats="median over 3 epochs of each loop",
    minutes=2,
    needs=(Needed("torch_geometric_temporal", "PyTorch Geometric Temporal", "make bench-vs-pygt"),),
    build=build_vs_pygt,
    reading=read_vs_pygt,
    regime=Regime(
        paper="",
        ours="the seven snapshot models on Twitter-Tennis and a 20,000-node synthetic graph (16 snapshots), one rank against "
        "PyTorch Geometric Temporal's plain loop, hidden 64, window 4, 3 epochs",
    ),
    settings=Settings(
        full={
            "datasets": tuple(VS_PYGT_DATASETS),
            "models": VS_PYGT_MODELS,
            "epochs": 3,
            "hidden": 64,
            "layers": 1,
            "window": 4,
            "seed": 0,
        },
        smoke={"datasets": ("twitter_tennis",), "models": ("tgcn",), "epochs": 1},
    ),
)
