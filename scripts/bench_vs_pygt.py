"""dygsched on one rank against the loop a user writes by hand with PyTorch Geometric Temporal.

    python scripts/bench_vs_pygt.py                                   # all six models, twitter_tennis and a 20,000-node graph
    python scripts/bench_vs_pygt.py --models tgcn --datasets twitter_tennis --epochs 5

The plain loop is what tgt's examples do, on the same snapshots and the same training groups
(sliding windows of ``--window`` snapshots, the time split's training part, in time order): for
each group, zero the gradients, run the model over the group's snapshots from a zero state, a
linear head on the last snapshot's output, MSE over the nodes that exist at the last snapshot,
backward, Adam step. The model is tgt's cell where tgt has one: ``TGCN`` stacked ``--layers``
deep; ``MPNNLSTM`` over the window as one block-diagonal batch, as tgt builds it;
``EvolveGCNO``/``EvolveGCNH`` stacked ``--layers`` deep with a ReLU after each (tgt's layer has
none; its weight restarts from the initial weight at each group, ``reinitialize_weight``), whose
width is the input's (tgt's EvolveGCN keeps it), so both sides run them at ``in_channels``. tgt has
no WD-GCN or GAT-LSTM: their plain loop is PyG's ``GCNConv``/``GATConv`` and ``nn.LSTMCell``,
stacked the same way. dygsched is ``dygsched run sched=psg world_size=1`` with the same model
width, layers, windows, optimizer and learning rate.

Printed per (dataset, model): the median training epoch time per group of both, their ratio
(dygsched / plain: below 1 is faster), and both training losses per epoch (they must go down
alike). TGCN's semantics are the same on both sides (tgt parity is tested in tests/models);
tgt's MPNN-LSTM normalises a window's snapshots with one batch norm and appends a different skip
block, so its losses are for orientation.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

DATASETS = {  # name -> dataset overrides (the synthetic graph: >= 20,000 nodes, the scale)
    "twitter_tennis": ["dataset=twitter_tennis"],
    "synthetic20k": ["dataset=synthetic", "dataset.num_nodes=20000", "dataset.avg_degree=8", "dataset.num_snapshots=16"],
}


def load(dataset: str, window: int):
    from omegaconf import OmegaConf

    from dygsched.data.groups import sliding_groups, split_by_time
    from dygsched.data.loading import load_data
    from dygsched.launch.hydra_app import compose_config

    cfg = OmegaConf.to_container(compose_config(DATASETS[dataset] + [f"window={window}"]), resolve=True)
    graph = load_data(cfg["dataset"])
    split = split_by_time(sliding_groups(graph.num_snapshots, window), cfg["split"]["train"], cfg["split"]["val"])
    return graph, split.train, cfg["optim"]["lr"]


class PlainTGCN(nn.Module):
    """tgt's ``TGCN`` cells stacked ``layers`` deep and a linear head."""

    def __init__(self, in_channels: int, hidden: int, layers: int) -> None:
        from torch_geometric_temporal.nn.recurrent import TGCN

        super().__init__()
        widths = [in_channels] + [hidden] * layers
        self.cells = nn.ModuleList(TGCN(a, b) for a, b in zip(widths, widths[1:]))
        self.head = nn.Linear(hidden, 1)

    def forward(self, snapshots) -> torch.Tensor:
        states = [None] * len(self.cells)
        for snapshot in snapshots:
            h = snapshot.x
            for i, cell in enumerate(self.cells):
                h = states[i] = cell(h, snapshot.edge_index, snapshot.edge_weight, states[i])
        return self.head(h).squeeze(-1)


class PlainMPNNLSTM(nn.Module):
    """tgt's ``MPNNLSTM`` over the window as one block-diagonal batch, and a linear head."""

    def __init__(self, in_channels: int, hidden: int, num_nodes: int, window: int, dropout: float) -> None:
        from torch_geometric_temporal.nn.recurrent import MPNNLSTM

        super().__init__()
        self.num_nodes, self.window = num_nodes, window
        self.cell = MPNNLSTM(in_channels, hidden, num_nodes, window, dropout)
        self.head = nn.Linear(2 * hidden + in_channels + window - 1, 1)

    def forward(self, snapshots) -> torch.Tensor:
        x = torch.cat([s.x for s in snapshots])
        edge_index = torch.cat([s.edge_index + t * self.num_nodes for t, s in enumerate(snapshots)], dim=1)
        edge_weight = torch.cat([s.edge_weight for s in snapshots])
        return self.head(self.cell(x, edge_index, edge_weight)).squeeze(-1)


class PlainEvolveGCN(nn.Module):
    """tgt's ``EvolveGCNO`` or ``EvolveGCNH`` stacked ``layers`` deep (width ``in_channels``), a ReLU
    after each, and a linear head; each group starts from the initial weights."""

    def __init__(self, kind: str, in_channels: int, num_nodes: int, layers: int) -> None:
        from torch_geometric_temporal.nn.recurrent import EvolveGCNH, EvolveGCNO

        super().__init__()
        make = (lambda: EvolveGCNO(in_channels)) if kind == "evolvegcn_o" else (lambda: EvolveGCNH(num_nodes, in_channels))
        self.cells = nn.ModuleList(make() for _ in range(layers))
        self.head = nn.Linear(in_channels, 1)

    def forward(self, snapshots) -> torch.Tensor:
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
        from torch_geometric.nn import GATConv, GCNConv

        super().__init__()
        widths = [in_channels] + [hidden] * layers
        self.kind = kind
        if kind == "wdgcn":
            self.convs = nn.ModuleList(GCNConv(a, b) for a, b in zip(widths, widths[1:]))
        else:
            self.convs = nn.ModuleList(GATConv(a, b // heads, heads=heads) for a, b in zip(widths, widths[1:]))
        self.cells = nn.ModuleList(nn.LSTMCell(hidden, hidden) for _ in range(layers))
        self.head = nn.Linear(hidden, 1)

    def forward(self, snapshots) -> torch.Tensor:
        zeros = torch.zeros(snapshots[0].x.shape[0], self.cells[0].hidden_size)
        states = [(zeros, zeros)] * len(self.cells)
        for snapshot in snapshots:
            h = snapshot.x
            for i, (conv, cell) in enumerate(zip(self.convs, self.cells)):
                if self.kind == "wdgcn":
                    s = F.relu(conv(h, snapshot.edge_index, snapshot.edge_weight))
                else:
                    s = F.elu(conv(h, snapshot.edge_index))
                h, c = states[i] = cell(s, states[i])
        return self.head(h).squeeze(-1)


MODELS = ("tgcn", "mpnn_lstm", "evolvegcn_o", "evolvegcn_h", "wdgcn", "gat_lstm")


def model_width(model_name: str, in_channels: int, hidden: int) -> int:
    """tgt's EvolveGCN keeps the input's width; every other model runs at ``--hidden``."""
    return in_channels if model_name.startswith("evolvegcn") else hidden


def plain_epochs(graph, groups, model_name: str, args: argparse.Namespace, lr: float) -> tuple[list[float], list[float]]:
    torch.manual_seed(args.seed)
    in_channels = graph.snapshots[0].x.shape[1]
    if model_name == "tgcn":
        model: nn.Module = PlainTGCN(in_channels, args.hidden, args.layers)
    elif model_name == "mpnn_lstm":
        model = PlainMPNNLSTM(in_channels, args.hidden, graph.num_nodes, args.window, dropout=0.5)
    elif model_name.startswith("evolvegcn"):
        model = PlainEvolveGCN(model_name, in_channels, graph.num_nodes, args.layers)
    else:
        model = PlainConvLSTM(model_name, in_channels, args.hidden, args.layers)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    times, losses = [], []
    for _ in range(args.epochs):
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
        times.append((time.perf_counter() - start) / len(groups))
        losses.append(total / len(groups))
    return times, losses


def dygsched_epochs(dataset: str, model_name: str, groups: int, width: int, args: argparse.Namespace) -> tuple[list[float], list[float]]:

    with tempfile.TemporaryDirectory() as results:
        overrides = [
            *DATASETS[dataset], f"model={model_name}", f"model.hidden_channels={width}",
            f"model.num_layers={1 if model_name == 'mpnn_lstm' else args.layers}",
            "sched=psg", "world_size=1", f"window={args.window}", f"epochs={args.epochs}", f"seed={args.seed}",
            "progress=false", "checkpoint=false", "metrics.count_flops=false", f"results_dir={results}", "run_id=bench",
            *args.dygsched_args,
        ]  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "dygsched", "run", *overrides], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"bench_vs_pygt: the dygsched run failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
        metrics = pd.read_parquet(Path(results) / "bench" / "metrics.parquet")
    epoch = metrics[(metrics.iteration == -1) & (metrics.phase == "train")]
    times = (epoch[epoch.metric == "epoch_time_s"].sort_values("epoch").value / groups).tolist()
    train = metrics[(metrics.phase == "train") & (metrics.metric == "loss") & (metrics.iteration >= 0)]
    return times, train.groupby("epoch").value.mean().tolist()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", default="twitter_tennis,synthetic20k", help=f"comma-separated, of {sorted(DATASETS)}")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=1, help="layers (MPNN-LSTM is one block)")
    parser.add_argument("--window", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="also write the table as CSV here")
    parser.add_argument("dygsched_args", nargs="*", help="more overrides for the dygsched run (e.g. sched=real)")
    args = parser.parse_args(argv)
    for name in args.datasets.split(","):
        if name not in DATASETS:
            raise SystemExit(f"bench_vs_pygt: unknown dataset {name!r} (known: {', '.join(sorted(DATASETS))})")
    for model_name in args.models.split(","):
        if model_name not in MODELS:
            raise SystemExit(f"bench_vs_pygt: unknown model {model_name!r} (known: {', '.join(MODELS)})")
    rows = []
    print(f"{'dataset':<16}{'model':<11}{'plain ms/group':>15}{'dygsched ms/group':>19}{'ratio':>8}   losses (plain | dygsched)")
    for name in args.datasets.split(","):
        graph, groups, lr = load(name, args.window)
        for model_name in args.models.split(","):
            plain_times, plain_losses = plain_epochs(graph, groups, model_name, args, lr)
            width = model_width(model_name, graph.snapshots[0].x.shape[1], args.hidden)
            ours_times, ours_losses = dygsched_epochs(name, model_name, len(groups), width, args)
            plain, ours = statistics.median(plain_times) * 1e3, statistics.median(ours_times) * 1e3
            losses = f"{[round(x, 4) for x in plain_losses]} | {[round(x, 4) for x in ours_losses]}"
            print(f"{name:<16}{model_name:<11}{plain:>15.2f}{ours:>19.2f}{ours / plain:>7.2f}x   {losses}", flush=True)
            rows.append({
                "dataset": name, "model": model_name, "plain_ms_per_group": plain, "dygsched_ms_per_group": ours,
                "ratio": ours / plain, "plain_final_loss": plain_losses[-1], "dygsched_final_loss": ours_losses[-1],
                "epochs": args.epochs,
            })  # fmt: skip
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(args.out, index=False)
        print(f"written: {args.out}")


if __name__ == "__main__":
    main()
