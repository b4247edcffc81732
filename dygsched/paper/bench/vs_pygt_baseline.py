"""The plain loop bench-vs-pygt times: PyTorch Geometric Temporal's cells as its examples use them
(PyG's convolutions and ``nn.LSTMCell`` where it has no cell), Adam, one group after another.

Imports torch and ``torch_geometric_temporal`` (``pip install 'dygsched[pgt]'``): only the
benchmark's builder imports this module, so listing the targets does without them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GATConv, GCNConv
from torch_geometric_temporal.nn.recurrent import GCLSTM, MPNNLSTM, EvolveGCNH, EvolveGCNO

from dygsched.paper.bench.gpu.plain import PlainTGCN  # PyTorch Geometric Temporal's TGCN cells, stacked: it is installed here

if TYPE_CHECKING:
    from dygsched.data.groups import SnapshotGroup
    from dygsched.data.temporal_graph import TemporalGraph

GCLSTM_K = 2  # conf/model/gclstm.yaml's filter size, which the dygsched side runs with


class PlainGCLSTM(nn.Module):
    """tgt's ``GCLSTM`` cells (Chebyshev filter size ``K``) stacked ``layers`` deep and a linear head;
    each cell carries its ``(H, C)`` from one snapshot to the next."""

    def __init__(self, in_channels: int, hidden: int, layers: int, K: int) -> None:
        super().__init__()
        widths = [in_channels] + [hidden] * layers
        self.cells = nn.ModuleList(GCLSTM(a, b, K) for a, b in zip(widths, widths[1:]))
        self.head = nn.Linear(hidden, 1)

    def forward(self, snapshots: list[Any]) -> torch.Tensor:
        states: list[Any] = [(None, None)] * len(self.cells)
        for snapshot in snapshots:
            h = snapshot.x
            for i, cell in enumerate(self.cells):
                states[i] = cell(h, snapshot.edge_index, snapshot.edge_weight, *states[i])
                h = states[i][0]
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
        cells: list[EvolveGCNO | EvolveGCNH] = list(self.cells)  # a ModuleList's items are typed as any Module
        for cell in cells:
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
        self.kind, self.hidden = kind, hidden
        if kind == "wdgcn":
            self.convs = nn.ModuleList(GCNConv(a, b) for a, b in zip(widths, widths[1:]))
        else:
            self.convs = nn.ModuleList(GATConv(a, b // heads, heads=heads) for a, b in zip(widths, widths[1:]))
        self.cells = nn.ModuleList(nn.LSTMCell(hidden, hidden) for _ in range(layers))
        self.head = nn.Linear(hidden, 1)

    def forward(self, snapshots: list[Any]) -> torch.Tensor:
        zeros = torch.zeros(snapshots[0].x.shape[0], self.hidden)  # every LSTMCell's hidden_size
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


def plain_model(model_name: str, in_channels: int, hidden: int, layers: int, num_nodes: int, window: int) -> nn.Module:
    """The plain counterpart of one of dygsched's snapshot models."""
    if model_name == "tgcn":
        return PlainTGCN(in_channels, hidden, layers)
    if model_name == "mpnn_lstm":
        return PlainMPNNLSTM(in_channels, hidden, num_nodes, window, dropout=0.5)
    if model_name == "gclstm":
        return PlainGCLSTM(in_channels, hidden, layers, K=GCLSTM_K)
    if model_name.startswith("evolvegcn"):
        return PlainEvolveGCN(model_name, in_channels, num_nodes, layers)
    return PlainConvLSTM(model_name, in_channels, hidden, layers)


def plain_epochs(
    graph: TemporalGraph,
    groups: Sequence[SnapshotGroup],
    model_name: str,
    lr: float,
    epochs: int,
    hidden: int,
    layers: int,
    window: int,
    seed: int,
) -> tuple[list[float], list[float]]:
    """The plain loop: per group, zero the gradients, the model over its snapshots from a zero state,
    MSE over the nodes that exist at its last snapshot, backward, Adam; seconds per group per epoch."""
    torch.manual_seed(seed)
    model = plain_model(model_name, graph.snapshots[0].x.shape[1], hidden, layers, graph.num_nodes, window)
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
