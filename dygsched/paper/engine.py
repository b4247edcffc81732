"""The engine's own benchmarks: speed against hand-written loops, what counting FLOPs costs, how time
and memory grow with the graph and the stream, and the accuracy of the memory-based models.

None of these reproduces a paper's table, so none has published rows, a shape or headlines. Where a
benchmark compares dygsched with a loop written here (PyTorch Geometric Temporal's cells, PyG's TGN
modules), alternates runs, or needs each run in a process of its own (its peak memory, a time
limit), the builder runs ``dygsched run`` itself; plain sweeps are the targets' ``Sweep``.
Nothing here imports torch until a builder runs.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dygsched.errors import ConfigError, DygschedError
from dygsched.paper.common import completed_runs, table_named, times, write_table
from dygsched.paper.target import PaperTarget, Section, Settings, Sweep, Tables

SECTION = Section(
    "engine",
    "Engine speed",
    "One rank against the loops users write by hand, what instrumentation costs, and how time and memory grow with the graph.",
)

EPOCH_LEVEL = -1  # the iteration of epoch-level rows in a run's metrics.parquet (dygsched.metrics.recorder)


# ---- running dygsched in a process of its own ------------------------------------------------------
class BenchmarkRunFailed(DygschedError):
    """A ``dygsched run`` a benchmark needs did not finish."""


def run_in_process_of_its_own(overrides: Sequence[str], timeout_s: float | None = None) -> str:
    """``dygsched run`` with ``overrides`` in a child process; ``""`` when it finished, else why not
    (its last line of output, or the time limit it passed)."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "dygsched", "run", *overrides], capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        return f"over the time limit of {timeout_s:g} s"
    if done.returncode == 0:
        return ""
    last = (done.stderr or done.stdout).strip().splitlines()[-1:]
    return last[0] if last else f"exit {done.returncode}"


def run_or_fail(overrides: Sequence[str], what: str) -> None:
    reason = run_in_process_of_its_own(overrides)
    if reason:
        raise BenchmarkRunFailed(f"{what} failed: {reason}")


def epoch_rows(metrics: pd.DataFrame, phase: str, metric: str) -> pd.DataFrame:
    """One run's epoch-level rows of ``metric`` in ``phase`` (``train``, ``val``, ``test``)."""
    rows = metrics[(metrics["iteration"] == EPOCH_LEVEL) & (metrics["phase"] == phase) & (metrics["metric"] == metric)]
    return rows.sort_values("epoch")


def training_curve(metrics: pd.DataFrame, groups: int = 1) -> tuple[list[float], list[float]]:
    """Each training epoch's time (over ``groups``: per training group) and its mean training loss."""
    epoch_times = (epoch_rows(metrics, "train", "epoch_time_s")["value"] / groups).tolist()
    losses = metrics[(metrics["phase"] == "train") & (metrics["metric"] == "loss") & (metrics["iteration"] >= 0)]
    return epoch_times, losses.groupby("epoch")["value"].mean().tolist()


def growth_exponent(frame: pd.DataFrame, x: str, column: str) -> float:
    """The slope of log(column) against log(x) by least squares: 1.0 is linear growth."""
    ok = frame[column].notna() & (frame[column] > 0)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(frame.loc[ok, x].astype(float)), np.log(frame.loc[ok, column].astype(float)), 1)[0])


def _rounded(values: list[float], digits: int) -> list[float]:
    return [round(value, digits) for value in values]


# ---- bench-flop-counting: what counting graph-convolution FLOPs costs ------------------------------
FLOP_COUNTING_CSV = "bench_flop_counting.csv"


def build_flop_counting(
    results: Path, dataset: str, model: str, epochs: int, world_size: int, pairs: int, extra: tuple[str, ...] = ()
) -> None:
    """The same run with ``metrics.count_flops`` on and off, alternated ``pairs`` times (so drifts of
    the machine hit both alike): the median steady epoch time of each and what counting adds."""
    epoch_times: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as scratch:
        for pair in range(pairs):
            for count in (True, False):
                run_id = f"{'on' if count else 'off'}-{pair}"
                overrides = [
                    f"dataset={dataset}", f"model={model}", f"epochs={epochs}", f"world_size={world_size}",
                    f"metrics.count_flops={str(count).lower()}", f"results_dir={scratch}", f"run_id={run_id}", "progress=false",
                    "checkpoint=false", *extra,
                ]  # fmt: skip
                run_or_fail(overrides, f"bench-flop-counting: the run with count_flops={str(count).lower()}")
                epoch_times[count].append(
                    float(json.loads((Path(scratch) / run_id / "summary.json").read_text())["epoch_time_s"])
                )
    on, off = statistics.median(epoch_times[True]), statistics.median(epoch_times[False])
    overhead = 100 * (on / off - 1)
    table = pd.DataFrame({
        "count_flops": [True, False], "median_epoch_s": [on, off], "runs": [len(epoch_times[True]), len(epoch_times[False])],
        "overhead_pct": [overhead, float("nan")],  # the baseline has no overhead to report
    })  # fmt: skip
    write_table(
        table, results / FLOP_COUNTING_CSV,
        f"epoch time with counting    {on:.4f} s  (runs: {', '.join(f'{t:.4f}' for t in epoch_times[True])})",
        f"epoch time without counting {off:.4f} s  (runs: {', '.join(f'{t:.4f}' for t in epoch_times[False])})",
        f"counting costs {overhead:+.1f}% of the epoch time",
    )  # fmt: skip


def read_flop_counting(tables: Tables) -> str:
    table = table_named(tables).set_index("count_flops")
    return f"counting graph-convolution FLOPs costs {table.overhead_pct[True]:+.1f}% of the epoch time"


FLOP_COUNTING = PaperTarget(
    name="bench-flop-counting",
    paper=SECTION.key,
    title="What counting graph-convolution FLOPs costs",
    reproduces="(no paper table)",
    outputs=(FLOP_COUNTING_CSV,),
    repeats="median of 3 alternating pairs of runs",
    minutes=1.6,
    build=build_flop_counting,
    reading=read_flop_counting,
    settings=Settings(
        full={"dataset": "twitter_tennis", "model": "tgcn", "epochs": 6, "world_size": 1, "pairs": 3},
        smoke={"pairs": 1, "epochs": 2, "dataset": "synthetic"},
    ),
)


# ---- bench-vs-pygt: one rank against a plain PyTorch Geometric Temporal loop -----------------------
VS_PYGT_CSV = "bench_vs_pygt.csv"
VS_PYGT_DATASETS = {  # name -> dataset overrides (the synthetic graph: 20,000 nodes, the scale the comparison asks for)
    "twitter_tennis": ("dataset=twitter_tennis",),
    "synthetic20k": ("dataset=synthetic", "dataset.num_nodes=20000", "dataset.avg_degree=8", "dataset.num_snapshots=16"),
}
VS_PYGT_MODELS = ("tgcn", "mpnn_lstm", "evolvegcn_o", "evolvegcn_h", "wdgcn", "gat_lstm")


def _snapshot_graph(dataset: str, window: int) -> tuple[Any, list[Any], float]:
    """The dataset's snapshots, its training groups (sliding windows, the time split's training part)
    and the configured learning rate, as ``dygsched run`` would make them."""
    from omegaconf import OmegaConf

    from dygsched.data.groups import sliding_groups, split_by_time
    from dygsched.data.loading import load_data
    from dygsched.launch.compose import compose_config

    cfg: dict[str, Any] = OmegaConf.to_container(compose_config([*VS_PYGT_DATASETS[dataset], f"window={window}"]), resolve=True)  # type: ignore[assignment]
    graph = load_data(cfg["dataset"])
    split = split_by_time(sliding_groups(graph.num_snapshots, window), cfg["split"]["train"], cfg["split"]["val"])
    return graph, split.train, float(cfg["optim"]["lr"])


@cache
def _plain_snapshot_models() -> dict[str, type]:
    """The hand-written models of the plain loop, defined on first use (torch is imported here)."""
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch_geometric.nn import GATConv, GCNConv
    from torch_geometric_temporal.nn.recurrent import MPNNLSTM, TGCN, EvolveGCNH, EvolveGCNO

    class PlainTGCN(nn.Module):
        """tgt's ``TGCN`` cells stacked ``layers`` deep and a linear head."""

        def __init__(self, in_channels: int, hidden: int, layers: int) -> None:
            super().__init__()
            widths = [in_channels] + [hidden] * layers
            self.cells = nn.ModuleList(TGCN(a, b) for a, b in zip(widths, widths[1:]))
            self.head = nn.Linear(hidden, 1)

        def forward(self, snapshots: list[Any]) -> torch.Tensor:
            states: list[Any] = [None] * len(self.cells)
            for snapshot in snapshots:
                h = snapshot.x
                for i, cell in enumerate(self.cells):
                    h = states[i] = cell(h, snapshot.edge_index, snapshot.edge_weight, states[i])
            return self.head(h).squeeze(-1)

    class PlainMPNNLSTM(nn.Module):
        """tgt's ``MPNNLSTM`` over the window as one block-diagonal batch, and a linear head."""

        def __init__(self, in_channels: int, hidden: int, num_nodes: int, window: int, dropout: float) -> None:
            super().__init__()
            self.num_nodes, self.window = num_nodes, window
            self.cell = MPNNLSTM(in_channels, hidden, num_nodes, window, dropout)
            self.head = nn.Linear(2 * hidden + in_channels + window - 1, 1)

        def forward(self, snapshots: list[Any]) -> torch.Tensor:
            x = torch.cat([s.x for s in snapshots])
            edge_index = torch.cat([s.edge_index + t * self.num_nodes for t, s in enumerate(snapshots)], dim=1)
            edge_weight = torch.cat([s.edge_weight for s in snapshots])
            return self.head(self.cell(x, edge_index, edge_weight)).squeeze(-1)

    class PlainEvolveGCN(nn.Module):
        """tgt's ``EvolveGCNO`` or ``EvolveGCNH`` stacked ``layers`` deep (width ``in_channels``), a
        ReLU after each, and a linear head; each group starts from the initial weights."""

        def __init__(self, kind: str, in_channels: int, num_nodes: int, layers: int) -> None:
            super().__init__()
            make = (lambda: EvolveGCNO(in_channels)) if kind == "evolvegcn_o" else (lambda: EvolveGCNH(num_nodes, in_channels))
            self.cells = nn.ModuleList(make() for _ in range(layers))
            self.head = nn.Linear(in_channels, 1)

        def forward(self, snapshots: list[Any]) -> torch.Tensor:
            for cell in self.cells:
                cell.reinitialize_weight()
            for snapshot in snapshots:
                h = snapshot.x
                for cell in self.cells:
                    h = F.relu(cell(h, snapshot.edge_index, snapshot.edge_weight))
            return self.head(h).squeeze(-1)

    class PlainConvLSTM(nn.Module):
        """A graph convolution and an ``nn.LSTMCell`` per layer, ``layers`` deep, and a linear head:
        WD-GCN (``GCNConv``, ReLU) or GAT-LSTM (``GATConv`` with ``heads`` concatenated heads, ELU)."""

        def __init__(self, kind: str, in_channels: int, hidden: int, layers: int, heads: int = 4) -> None:
            super().__init__()
            widths = [in_channels] + [hidden] * layers
            self.kind = kind
            if kind == "wdgcn":
                self.convs = nn.ModuleList(GCNConv(a, b) for a, b in zip(widths, widths[1:]))
            else:
                self.convs = nn.ModuleList(GATConv(a, b // heads, heads=heads) for a, b in zip(widths, widths[1:]))
            self.cells = nn.ModuleList(nn.LSTMCell(hidden, hidden) for _ in range(layers))
            self.head = nn.Linear(hidden, 1)

        def forward(self, snapshots: list[Any]) -> torch.Tensor:
            zeros = torch.zeros(snapshots[0].x.shape[0], self.cells[0].hidden_size)
            states = [(zeros, zeros)] * len(self.cells)
            for snapshot in snapshots:
                h = snapshot.x
                for i, (conv, cell) in enumerate(zip(self.convs, self.cells)):
                    if self.kind == "wdgcn":
                        s = F.relu(conv(h, snapshot.edge_index, snapshot.edge_weight))
                    else:
                        s = F.elu(conv(h, snapshot.edge_index))
                    h, _ = states[i] = cell(s, states[i])
            return self.head(h).squeeze(-1)

    return {"tgcn": PlainTGCN, "mpnn_lstm": PlainMPNNLSTM, "evolvegcn": PlainEvolveGCN, "conv_lstm": PlainConvLSTM}


def model_width(model_name: str, in_channels: int, hidden: int) -> int:
    """tgt's EvolveGCN keeps the input's width; every other model runs at ``hidden``."""
    return in_channels if model_name.startswith("evolvegcn") else hidden


def _plain_epochs(
    graph: Any, groups: list[Any], model_name: str, lr: float, epochs: int, hidden: int, layers: int, window: int, seed: int
) -> tuple[list[float], list[float]]:
    """The plain loop: per group, zero the gradients, the model over its snapshots from a zero state,
    MSE over the nodes that exist at its last snapshot, backward, Adam; seconds per group per epoch."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(seed)
    models = _plain_snapshot_models()
    in_channels = graph.snapshots[0].x.shape[1]
    if model_name == "tgcn":
        model = models["tgcn"](in_channels, hidden, layers)
    elif model_name == "mpnn_lstm":
        model = models["mpnn_lstm"](in_channels, hidden, graph.num_nodes, window, dropout=0.5)
    elif model_name.startswith("evolvegcn"):
        model = models["evolvegcn"](model_name, in_channels, graph.num_nodes, layers)
    else:
        model = models["conv_lstm"](model_name, in_channels, hidden, layers)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    epoch_times, losses = [], []
    for _ in range(epochs):
        model.train()
        start, total = time.perf_counter(), 0.0
        for group in groups:
            snapshots = graph.snapshots[group.start : group.stop]
            last = snapshots[-1]
            optimizer.zero_grad()
            loss = F.mse_loss(model(snapshots)[last.node_mask], last.y[last.node_mask])
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
        epoch_times.append((time.perf_counter() - start) / len(groups))
        losses.append(total / len(groups))
    return epoch_times, losses


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
            *VS_PYGT_DATASETS[dataset], f"model={model_name}", f"model.hidden_channels={width}",
            f"model.num_layers={1 if model_name == 'mpnn_lstm' else layers}",
            "sched=psg", "world_size=1", f"window={window}", f"epochs={epochs}", f"seed={seed}",
            "progress=false", "checkpoint=false", "metrics.count_flops=false", f"results_dir={scratch}", "run_id=bench", *extra,
        ]  # fmt: skip
        run_or_fail(overrides, f"bench-vs-pygt: the dygsched run of {model_name} on {dataset}")
        return training_curve(pd.read_parquet(Path(scratch) / "bench" / "metrics.parquet"), groups)


def build_vs_pygt(
    results: Path, datasets: tuple[str, ...], models: tuple[str, ...], epochs: int, hidden: int, layers: int, window: int, seed: int,
    extra: tuple[str, ...] = (),
) -> None:  # fmt: skip
    """Per dataset and model, the median training time per group of the plain PyTorch Geometric
    Temporal loop (what tgt's examples do: the same snapshots, groups, optimizer and learning rate)
    and of dygsched on one rank, their ratio and both final losses (they must go down alike).

    The plain model is tgt's cell where tgt has one: ``TGCN`` stacked ``layers`` deep; ``MPNNLSTM``
    over the window as one block-diagonal batch, as tgt builds it; ``EvolveGCNO``/``EvolveGCNH``
    stacked with a ReLU after each, restarting from the initial weight at each group, at the input's
    width (tgt's EvolveGCN keeps it, so both sides run it there). tgt has no WD-GCN or GAT-LSTM: their
    plain loop is PyG's ``GCNConv``/``GATConv`` and ``nn.LSTMCell``. TGCN's semantics are the same
    on both sides; tgt's MPNN-LSTM normalises a window with one batch norm and appends a different
    skip block, so its losses are for orientation. ``extra``: overrides for the dygsched runs."""
    for name in datasets:
        if name not in VS_PYGT_DATASETS:
            raise ConfigError(f"bench-vs-pygt: unknown dataset {name!r} (known: {', '.join(sorted(VS_PYGT_DATASETS))})")
    for model_name in models:
        if model_name not in VS_PYGT_MODELS:
            raise ConfigError(f"bench-vs-pygt: unknown model {model_name!r} (known: {', '.join(VS_PYGT_MODELS)})")
    if importlib.util.find_spec("torch_geometric_temporal") is None:
        raise ConfigError("bench-vs-pygt times PyTorch Geometric Temporal's loop: pip install 'dygsched[pgt]' first")
    rows = []
    print(f"{'dataset':<16}{'model':<11}{'plain ms/group':>15}{'dygsched ms/group':>19}{'ratio':>8}   losses (plain | dygsched)")
    for name in datasets:
        graph, groups, lr = _snapshot_graph(name, window)
        for model_name in models:
            plain_times, plain_losses = _plain_epochs(graph, groups, model_name, lr, epochs, hidden, layers, window, seed)
            width = model_width(model_name, graph.snapshots[0].x.shape[1], hidden)
            ours_times, ours_losses = _dygsched_snapshot_epochs(
                name, model_name, len(groups), width, epochs, layers, window, seed, extra
            )
            plain, ours = statistics.median(plain_times) * 1e3, statistics.median(ours_times) * 1e3
            losses = f"{_rounded(plain_losses, 4)} | {_rounded(ours_losses, 4)}"
            print(f"{name:<16}{model_name:<11}{plain:>15.2f}{ours:>19.2f}{ours / plain:>7.2f}x   {losses}", flush=True)
            rows.append({
                "dataset": name, "model": model_name, "plain_ms_per_group": plain, "dygsched_ms_per_group": ours,
                "ratio": ours / plain, "plain_final_loss": plain_losses[-1], "dygsched_final_loss": ours_losses[-1], "epochs": epochs,
            })  # fmt: skip
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
    build=build_vs_pygt,
    reading=read_vs_pygt,
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


# ---- bench-tgn-pyg: the reference TGN against a TGN of PyG's temporal modules ----------------------
TGN_PYG_CSV = "bench_tgn_pyg.csv"


def _event_stream(dataset: str) -> tuple[Any, tuple[int, int]]:
    """The dataset's event stream and its training events' range, as ``dygsched run`` splits it."""
    from omegaconf import OmegaConf

    from dygsched.data.loading import load_data
    from dygsched.launch.compose import compose_config

    cfg: dict[str, Any] = OmegaConf.to_container(compose_config([f"dataset={dataset}"]), resolve=True)  # type: ignore[assignment]
    stream = load_data(cfg["dataset"])
    return stream, stream.split(cfg["split"]["train"], cfg["split"]["val"]).train


def _pyg_tgn_epochs(
    stream: Any,
    train: tuple[int, int],
    epochs: int,
    batch: int,
    memory_dim: int,
    neighbours: int,
    heads: int,
    lr: float,
    seed: int,
) -> tuple[list[float], list[float]]:
    """The loop PyG documents for TGN, from its public modules: ``TGNMemory`` (GRU memory,
    ``IdentityMessage``, ``LastAggregator``), ``LastNeighborLoader``, one ``TransformerConv`` over
    relative time encodings, a two-layer link predictor, one random negative per event, Adam."""
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch_geometric.nn import TGNMemory, TransformerConv
    from torch_geometric.nn.models.tgn import IdentityMessage, LastAggregator, LastNeighborLoader

    class Embedding(nn.Module):
        def __init__(self, dim: int, msg_dim: int, time_encoder: nn.Module) -> None:
            super().__init__()
            self.time_encoder = time_encoder
            self.conv = TransformerConv(dim, dim // heads, heads=heads, dropout=0.1, edge_dim=msg_dim + time_encoder.out_channels)

        def forward(
            self, x: torch.Tensor, last_update: torch.Tensor, edge_index: torch.Tensor, t: torch.Tensor, msg: torch.Tensor
        ) -> torch.Tensor:
            relative = self.time_encoder((last_update[edge_index[0]] - t).to(x.dtype))
            return self.conv(x, edge_index, torch.cat([relative, msg], dim=-1))

    class Predictor(nn.Module):
        def __init__(self, dim: int) -> None:
            super().__init__()
            self.src, self.dst, self.out = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, 1)

        def forward(self, z_src: torch.Tensor, z_dst: torch.Tensor) -> torch.Tensor:
            return self.out((self.src(z_src) + self.dst(z_dst)).relu()).squeeze(-1)

    torch.manual_seed(seed)
    n, d = stream.num_nodes, memory_dim
    t = (stream.t - stream.t[0]).to(torch.long)
    msg = stream.edge_matrix() if stream.edge_dim else torch.zeros(stream.num_events, 1)
    memory = TGNMemory(
        n, msg.shape[1], d, d, message_module=IdentityMessage(msg.shape[1], d, d), aggregator_module=LastAggregator()
    )
    gnn = Embedding(d, msg.shape[1], memory.time_enc)
    predictor = Predictor(d)
    optimizer = torch.optim.Adam({*memory.parameters(), *gnn.parameters(), *predictor.parameters()}, lr=lr)
    loader = LastNeighborLoader(n, size=neighbours)
    assoc = torch.empty(n, dtype=torch.long)
    epoch_times, losses = [], []
    for _ in range(epochs):
        memory.train(), gnn.train(), predictor.train()
        memory.reset_state()
        loader.reset_state()
        start, total = time.perf_counter(), 0.0
        for a in range(train[0], train[1], batch):
            b = min(a + batch, train[1])
            src, dst, bt, bmsg = stream.src[a:b], stream.dst[a:b], t[a:b], msg[a:b]
            neg = torch.randint(0, n, (b - a,))
            optimizer.zero_grad()
            n_id, edge_index, e_id = loader(torch.cat([src, dst, neg]).unique())
            assoc[n_id] = torch.arange(n_id.numel())
            z, last_update = memory(n_id)
            z = gnn(z, last_update, edge_index, t[e_id], msg[e_id])
            positive = predictor(z[assoc[src]], z[assoc[dst]])
            negative = predictor(z[assoc[src]], z[assoc[neg]])
            loss = F.binary_cross_entropy_with_logits(positive, torch.ones_like(positive)) + F.binary_cross_entropy_with_logits(
                negative, torch.zeros_like(negative)
            )
            memory.update_state(src, dst, bt, bmsg)
            loader.insert(src, dst)
            loss.backward()
            optimizer.step()
            memory.detach()
            total += float(loss.detach()) * (b - a)
        epoch_times.append(time.perf_counter() - start)
        losses.append(total / (train[1] - train[0]))
    return epoch_times, losses


def build_tgn_pyg(
    results: Path, dataset: str, epochs: int, batch: int, memory_dim: int, neighbours: int, heads: int, lr: float, seed: int
) -> None:
    """The median training epoch time (evaluation excluded) of a TGN of PyG's modules and of
    ``dygsched run sched=single model=tgn`` with the same widths (memory and time ``memory_dim``,
    ``neighbours`` most recent neighbours, ``heads`` heads, ``batch``), on the same training events,
    and the ratio dygsched / PyG. The two are not the same model to the last detail (PyG's memory
    reads the aggregated raw messages, dygsched's TGL's mails), so the losses are for orientation."""
    stream, train = _event_stream(dataset)
    pyg_times, pyg_losses = _pyg_tgn_epochs(stream, train, epochs, batch, memory_dim, neighbours, heads, lr, seed)
    with tempfile.TemporaryDirectory() as scratch:
        overrides = [
            f"dataset={dataset}", "model=tgn", f"model.memory_dim={memory_dim}", f"model.time_dim={memory_dim}",
            f"model.neighbours={neighbours}", f"model.heads={heads}", "sched=single", f"sched.batch_size={batch}",
            "world_size=1", f"epochs={epochs}", f"optim.lr={lr}", f"seed={seed}", "progress=false",
            "checkpoint=false", "metrics.count_flops=false", f"results_dir={scratch}", "run_id=bench",
        ]  # fmt: skip
        run_or_fail(overrides, "bench-tgn-pyg: the dygsched run")
        ours_times, ours_losses = training_curve(pd.read_parquet(Path(scratch) / "bench" / "metrics.parquet"))
    pyg, ours = statistics.median(pyg_times), statistics.median(ours_times)
    print(f"{dataset}: {train[1] - train[0]} training events, batch {batch}, TGN d={memory_dim}, {neighbours} neighbours")
    print(f"  PyG modules   epoch times {_rounded(pyg_times, 2)} s, median {pyg:.2f} s; train loss {_rounded(pyg_losses, 3)}")
    print(f"  dygsched      epoch times {_rounded(ours_times, 2)} s, median {ours:.2f} s; train loss {_rounded(ours_losses, 3)}")
    table = pd.DataFrame([
        {"implementation": "pyg_modules", "epoch_s": pyg, "final_train_loss": pyg_losses[-1]},
        {"implementation": "dygsched", "epoch_s": ours, "final_train_loss": ours_losses[-1]},
    ]).assign(dataset=dataset, batch=batch, epochs=epochs, ratio=ours / pyg)  # fmt: skip
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


# ---- bench-stream-scaling: memory-based models as the stream grows to REDDIT's size ----------------
STREAM_SCALING_DIR = "stream_scaling"
STREAM_SCALING_CSV = f"{STREAM_SCALING_DIR}/stream_scaling.csv"
STREAM_SCALING_PNG = f"{STREAM_SCALING_DIR}/stream_scaling.png"
REDDIT_SHAPE = ("dataset=bipartite", "dataset.edge_dim=172", "dataset.repeat_probability=0.5")  # with REDDIT's users and items


def _stream_size(events: int, users: int, items: int, epochs: int) -> tuple[str, ...]:
    """Every model at one stream size, in one process each (TGL's loop)."""
    return (
        *REDDIT_SHAPE, f"dataset.num_users={users}", f"dataset.num_items={items}", f"dataset.num_events={events}",
        "model=tgn,jodie,apan", "sched=single", "world_size=1", f"epochs={epochs}", "seed=0",
    )  # fmt: skip


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
    table = pd.DataFrame({
        "model": runs["model"],
        "events": [int(_run_config(folder, run_id).dataset.num_events) for run_id in runs["run_id"]],
        "epoch_time_s": runs["epoch_time_s"].astype(float),
        "peak_rss_mb": pd.to_numeric(runs["peak_rss_bytes"], errors="coerce") / 2**20,
        "test_ap": pd.to_numeric(runs["eval.value"], errors="coerce") if "eval.value" in runs else float("nan"),
    }).sort_values("events", kind="stable").reset_index(drop=True)  # fmt: skip
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
            f"{model} {first.epoch_time_s:.2f} s at {int(first.events):,} events to {last.epoch_time_s:.2f} s at {int(last.events):,} (time ~ events^{slope:.2f})"
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
    sweep=STREAM_SCALING_SWEEP,
)


# ---- bench-scaling: snapshot strategies as the graph grows in nodes and in snapshots ---------------
SCALING_DIR = "scaling"
SCALING_CSV = f"{SCALING_DIR}/scaling.csv"
SCALING_EXPONENTS_CSV = f"{SCALING_DIR}/scaling_exponents.csv"
SCALING_PNG = f"{SCALING_DIR}/scaling.png"
SCALING_MODEL = {"distdy": "sage_temporal"}  # DistDy trains only a sampled GraphSAGE encoder; every other strategy TGCN
# Greedy profiles 4 PSG epochs before it plans (conf/sched/dygnex_g.yaml); here one, so the measured
# last epoch runs its plan (the table's `plan_from_epoch` says from which epoch each run did).
SCALING_OVERRIDES = {"greedy": ("sched.timeline.profile_epochs=1",)}


def last_epoch(metrics: pd.DataFrame) -> dict[str, Any]:
    """The last training epoch's time (the slowest rank's) and each rank's peak resident set in it (MB)."""
    frame = metrics[metrics["iteration"] == EPOCH_LEVEL]
    train = frame[frame["phase"] == "train"]
    last = train[train["epoch"] == train["epoch"].max()]
    epoch_times = last[last["metric"] == "epoch_time_s"]["value"]
    rss = last[last["metric"] == "peak_rss_bytes"].dropna(subset=["value"]).sort_values("rank")
    switch = frame[frame["metric"] == "switch_epoch"]["value"]
    return {
        "epoch": int(last["epoch"].max()),
        "plan_from_epoch": int(switch.iloc[0]) if not switch.empty else 0,
        "epoch_time_s": float(epoch_times.max()) if not epoch_times.empty else float("nan"),
        "peak_rss_mb": float(rss["value"].max() / 2**20) if not rss.empty else float("nan"),  # the largest rank's
        "peak_rss_mb_per_rank": "/".join(f"{v / 2**20:.0f}" for v in rss["value"]),
        "error": "",
    }


def _scaling_run(
    results: Path,
    sched: str,
    nodes: int,
    snapshots: int,
    avg_degree: float,
    epochs: int,
    seed: int,
    extra: tuple[str, ...],
    timeout_s: float | None,
) -> dict[str, Any]:
    """One strategy at one size on 2 ranks, in a process of its own: its row (the reason, without
    numbers, when it failed or passed ``timeout_s``: missing, never 0)."""
    run_id = f"scaling-{sched}-{nodes}n-{snapshots}t"
    model = SCALING_MODEL.get(sched, "tgcn")
    overrides = [
        "dataset=synthetic", "dataset.growth=none", f"dataset.num_nodes={nodes}", f"dataset.num_snapshots={snapshots}",
        f"dataset.avg_degree={avg_degree}", f"model={model}", f"sched={sched}", *SCALING_OVERRIDES.get(sched, ()),
        f"epochs={epochs}", f"seed={seed}", "checkpoint=false", f"results_dir={results / SCALING_DIR}", f"run_id={run_id}",
        "overwrite=true",  # a rebuild replaces the earlier run (moved aside)
        "progress=false", *extra,
    ]  # fmt: skip
    row: dict[str, Any] = {
        "sched": sched,
        "model": model,
        "nodes": nodes,
        "snapshots": snapshots,
        "edge_rows": int(round(avg_degree * nodes)) * snapshots,
    }
    start = time.perf_counter()
    reason = run_in_process_of_its_own(overrides, timeout_s)
    row["wall_s"] = time.perf_counter() - start
    if reason:
        print(f"bench-scaling: {sched} at {nodes} nodes x {snapshots} snapshots failed: {reason}", file=sys.stderr)
        return {**row, "error": reason}
    return {**row, **last_epoch(pd.read_parquet(results / SCALING_DIR / run_id / "metrics.parquet"))}


def axis_rows(table: pd.DataFrame, axis: str, base_nodes: int, base_snapshots: int) -> pd.DataFrame:
    """The rows of one axis: the nodes at the fixed snapshot count, or the snapshots at the fixed node count."""
    fixed = ("snapshots", base_snapshots) if axis == "nodes" else ("nodes", base_nodes)
    return table[table[fixed[0]] == fixed[1]].sort_values(axis)


def scaling_exponents(table: pd.DataFrame, base_nodes: int, base_snapshots: int) -> pd.DataFrame:
    """Per strategy and axis, the exponents over every size and over the two largest (where the data
    outweighs the libraries' fixed memory)."""
    rows = []
    for axis in ("nodes", "snapshots"):
        for sched, group in axis_rows(table, axis, base_nodes, base_snapshots).groupby("sched", sort=False):
            top = group.dropna(subset=["epoch_time_s"]).tail(2)
            rows.append({
                "sched": sched, "axis": axis, "points": int(group["epoch_time_s"].notna().sum()),
                "time_exponent": growth_exponent(group, axis, "epoch_time_s"),
                "memory_exponent": growth_exponent(group, axis, "peak_rss_mb"),
                "time_exponent_top": growth_exponent(top, axis, "epoch_time_s"),
                "memory_exponent_top": growth_exponent(top, axis, "peak_rss_mb"),
            })  # fmt: skip
    return pd.DataFrame(rows)


def _plot_scaling(table: pd.DataFrame, base_nodes: int, base_snapshots: int, avg_degree: float, epochs: int, out: Path) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    fixed = {"nodes": f"{base_snapshots} snapshots", "snapshots": f"{base_nodes:,} nodes"}
    for row, axis in enumerate(("nodes", "snapshots")):
        rows = axis_rows(table, axis, base_nodes, base_snapshots)
        for ax, column, label in (
            (axes[row, 0], "epoch_time_s", "seconds per epoch"),
            (axes[row, 1], "peak_rss_mb", "peak resident set per rank (MB)"),
        ):
            for sched, group in rows.groupby("sched", sort=False):
                group = group.dropna(subset=[column])
                if not group.empty:
                    ax.loglog(
                        group[axis], group[column], "o-", label=f"{sched} (slope {growth_exponent(group, axis, column):.2f})"
                    )
            sizes = sorted(rows[axis].unique())
            ax.set_xticks(sizes, [f"{s / 1000:g}k" if axis == "nodes" else str(s) for s in sizes])
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_xlabel(f"{axis} (at {fixed[axis]})")
            ax.set_ylabel(label)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    fig.suptitle(f"2 CPU ranks, synthetic graph at average degree {avg_degree:g}, epoch {epochs} of {epochs}")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def build_scaling(
    results: Path, scheds: tuple[str, ...], nodes: tuple[int, ...], snapshots: tuple[int, ...], base_nodes: int, base_snapshots: int,
    avg_degree: float, epochs: int, seed: int, extra: tuple[str, ...] = (), timeout_s: float | None = None,
) -> None:  # fmt: skip
    """Each strategy on 2 ranks (the local launcher) on the synthetic graph at ``avg_degree`` with
    ``growth=none`` (every snapshot has all its nodes and ``avg_degree x nodes`` edges, so the sizes
    are exact), along two axes: ``nodes`` at ``base_snapshots`` snapshots and ``snapshots`` at
    ``base_nodes`` nodes (the point both share runs once). Each run trains ``epochs`` epochs and the
    table keeps the last (the first pays for warm-up and, for greedy, its profiling epoch): its time
    (the slowest rank's) and each rank's peak resident set. Then the fitted growth exponents per
    strategy and axis (1.0 is linear) and a log-log plot. Runs go smallest graph first, the
    strategies alternated at each size; each in a process of its own, so one that fails or passes
    ``timeout_s`` keeps its row with the reason and no numbers."""
    sizes = {(n, base_snapshots) for n in nodes} | {(base_nodes, t) for t in snapshots}
    order = sorted(sizes, key=lambda size: (size[0] * size[1], size))
    rows = []
    for node_count, snapshot_count in order:
        for sched in scheds:
            rows.append(_scaling_run(results, sched, node_count, snapshot_count, avg_degree, epochs, seed, extra, timeout_s))
            print(f"  {sched} at {node_count} nodes x {snapshot_count} snapshots: {rows[-1].get('error') or 'done'}", flush=True)
    table = pd.DataFrame(rows)
    write_table(table, results / SCALING_CSV)
    fits = scaling_exponents(table, base_nodes, base_snapshots)
    write_table(fits, results / SCALING_EXPONENTS_CSV)
    _plot_scaling(table, base_nodes, base_snapshots, avg_degree, epochs, results / SCALING_PNG)
    print(f"written: {results / SCALING_PNG}")


def read_scaling(tables: Tables) -> str:
    """The fitted exponents per strategy, nodes then snapshots, and which grow faster than linear (above
    1.1) over every size or over the two largest (where the libraries' fixed memory no longer hides it)."""
    fits = table_named(tables, "scaling_exponents.csv")
    parts, faster = [], []
    for sched, rows in fits.groupby("sched", sort=False):
        shown = []
        for fit in rows.itertuples():
            shown.append(f"{fit.axis}^{fit.time_exponent:.2f} (memory ^{fit.memory_exponent:.2f})")
            for what in ("time", "memory"):
                over = {
                    span: getattr(fit, f"{what}_exponent{suffix}", float("nan"))
                    for span, suffix in (("all sizes", ""), ("the two largest", "_top"))
                }
                over = {span: value for span, value in over.items() if value > 1.1}
                if over:
                    faster.append(
                        f"{sched}'s {what} in {fit.axis} (" + ", ".join(f"{v:.2f} over {span}" for span, v in over.items()) + ")"
                    )
        parts.append(f"{sched} time ~ " + ", ".join(shown))
    verdict = (
        "faster than linear (exponent above 1.1): " + "; ".join(faster)
        if faster
        else "none grows faster than linear (every exponent at most 1.1)"
    )
    return "epoch time and peak memory per rank against the graph's size: " + "; ".join(parts) + f"; {verdict}"


SCALING = PaperTarget(
    name="bench-scaling",
    paper=SECTION.key,
    title="PSG, greedy, FlareDTDG and DistDy as the snapshot graph grows in nodes and in snapshots",
    reproduces="(no paper table)",
    outputs=(SCALING_CSV, SCALING_EXPONENTS_CSV, SCALING_PNG),
    repeats="one run per strategy and size, its last (2nd) epoch",
    minutes=39,
    build=build_scaling,
    reading=read_scaling,
    settings=Settings(
        full={
            "scheds": ("psg", "greedy", "flare", "distdy"),
            "nodes": (1000, 3000, 10000, 30000, 100000),
            "snapshots": (24, 48, 120, 240),
            "base_nodes": 3000,
            "base_snapshots": 24,
            "avg_degree": 6.0,
            "epochs": 2,
            "seed": 0,
        },
        smoke={"scheds": ("psg", "greedy"), "nodes": (300, 600), "snapshots": (10, 20), "base_nodes": 300, "base_snapshots": 10},
    ),  # fmt: skip
)


# ---- table-stream-accuracy: TGN, JODIE and APAN, AP and AUC, transductive and inductive ------------
STREAM_ACCURACY_DIR = "stream_accuracy"
STREAM_ACCURACY_CSV = f"{STREAM_ACCURACY_DIR}/stream_accuracy.csv"
STREAM_ACCURACY_RUNS_CSV = f"{STREAM_ACCURACY_DIR}/stream_accuracy_runs.csv"  # each run's selected numbers, beside the table
ACCURACY_METRICS = {  # (measure, setting) -> the test metric's name in metrics.parquet
    ("ap", "transductive"): "ap", ("auc", "transductive"): "auc", ("ap", "inductive"): "ap_inductive", ("auc", "inductive"): "auc_inductive",
}  # fmt: skip


def _accuracy_runs(dataset: str, epochs: int, seeds: str, *sizes: str) -> tuple[str, ...]:
    """Every model and seed on one dataset, one process each, with DyGLib's inductive split (10% of
    the later nodes hidden from training) and one uniform negative per event (TGL's rule)."""
    return (f"dataset={dataset}", "model=tgn,jodie,apan", "sched=single", "world_size=1", f"epochs={epochs}", f"seed={seeds}",
            "split.new_nodes=0.1", "checkpoint=false", *sizes)  # fmt: skip


STREAM_ACCURACY_SWEEP = Sweep(
    folder=STREAM_ACCURACY_DIR,
    runs=(_accuracy_runs("collegemsg", 10, "0,1,2"), _accuracy_runs("reddit_like", 1, "0,1,2")),
    smoke=(_accuracy_runs("bipartite", 1, "0", "dataset.num_users=200", "dataset.num_items=40", "dataset.num_events=3000"),),
)


def selected_epoch(metrics: pd.DataFrame) -> dict[str, float]:
    """One run's test metrics at the epoch of its best validation AP (the first such epoch: model
    selection on validation, as DyGLib does), that epoch, and its median training epoch time."""
    epochs = metrics[metrics["iteration"] == EPOCH_LEVEL]
    val_ap = epochs[(epochs["phase"] == "val") & (epochs["metric"] == "ap")].groupby("epoch")["value"].first()
    if val_ap.empty:
        raise DygschedError("table-stream-accuracy: a run recorded no validation AP to select its epoch by")
    best = int(val_ap.idxmax())
    test = epochs[(epochs["phase"] == "test") & (epochs["epoch"] == best)].groupby("metric")["value"].first()
    train_time = epochs[(epochs["phase"] == "train") & (epochs["metric"] == "epoch_time_s")]["value"].median()
    return {
        **{f"{measure}_{setting}": float(test.get(column, np.nan)) for (measure, setting), column in ACCURACY_METRICS.items()},
        "epoch": best, "epoch_time_s": float(train_time), "inductive_share": float(test.get("inductive_share", np.nan)),
    }  # fmt: skip


def accuracy_table(runs: pd.DataFrame, epochs_of: dict[str, int]) -> pd.DataFrame:
    """Each (dataset, model, setting, measure): the mean and standard deviation over the seeds."""
    named = {f"{measure}_{setting}": (measure, setting) for measure, setting in ACCURACY_METRICS}
    long = runs.melt(id_vars=["dataset", "model", "seed"], value_vars=list(named), var_name="key")
    long["metric"] = long["key"].map(lambda key: named[key][0])
    long["setting"] = long["key"].map(lambda key: named[key][1])
    table = (
        long.groupby(["dataset", "model", "setting", "metric"], sort=False)["value"]
        .agg(mean="mean", std="std", seeds="count")
        .reset_index()
    )
    table["epochs"] = table["dataset"].map(epochs_of)
    return table


def build_stream_accuracy(results: Path) -> None:
    """AP and AUC, transductive and inductive, of each model on each dataset: each run read at its
    best validation epoch, then the mean and standard deviation over its seeds."""
    folder = results / STREAM_ACCURACY_DIR
    runs = completed_runs(folder)
    rows = [
        {
            "dataset": run.dataset,
            "model": run.model,
            "seed": int(run.seed),
            **selected_epoch(pd.read_parquet(folder / run.run_id / "metrics.parquet")),
        }
        for run in runs.itertuples()
    ]
    per_run = pd.DataFrame(rows)
    write_table(per_run, results / STREAM_ACCURACY_RUNS_CSV)
    epochs_of = {str(dataset): int(epochs) for dataset, epochs in runs.groupby("dataset")["epochs"].first().items()}
    write_table(accuracy_table(per_run, epochs_of), results / STREAM_ACCURACY_CSV)


def read_stream_accuracy(tables: Tables) -> str:
    table = table_named(tables)
    parts = []
    for (dataset, setting), rows in table[table["metric"] == "ap"].groupby(["dataset", "setting"], sort=False):
        shown = ", ".join(
            f"{r.model} {r['mean']:.3f}" + (f" ± {r['std']:.3f}" if r["seeds"] > 1 else "") for _, r in rows.iterrows()
        )
        parts.append(f"{dataset} {setting}: {shown}")
    return "test AP at the best validation epoch, mean ± std over seeds: " + "; ".join(parts)


STREAM_ACCURACY = PaperTarget(
    name="table-stream-accuracy",
    paper=SECTION.key,
    title="TGN, JODIE and APAN: test AP and AUC, transductive and inductive, over seeds",
    reproduces="(no paper table; DyGLib's protocol)",
    outputs=(STREAM_ACCURACY_CSV,),
    repeats="one run per model and seed; test at the best validation epoch; mean and standard deviation over 3 seeds",
    minutes=45,
    build=build_stream_accuracy,
    reading=read_stream_accuracy,
    sweep=STREAM_ACCURACY_SWEEP,
)

TARGETS: tuple[PaperTarget, ...] = (FLOP_COUNTING, VS_PYGT, TGN_PYG, STREAM_SCALING, SCALING, STREAM_ACCURACY)
