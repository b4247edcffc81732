"""The plain TGCN loop bench-gpu times against the engine: the loop bench-vs-pygt times on CPU,
on a device.

Its cell is PyTorch Geometric Temporal's ``TGCN`` where that library is installed (as
bench-vs-pygt's loop); a GPU node without it (it needs torch-scatter and torch-sparse compiled for
the node's torch) runs the same T-GCN cell written from the paper's equations on PyG's ``GCNConv``
(``GCNGatedCell``), and the table says which (``plain_cell``). The graph is moved to the device
once, before the clock starts (the fastest plain loop: a user's would do no better), and each group
reads its loss on the host (``float(loss)``), as the plain loop does.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GCNConv

if TYPE_CHECKING:
    from dygsched.data.groups import SnapshotGroup
    from dygsched.data.temporal_graph import TemporalGraph


def plain_cell() -> str:
    """Which T-GCN cell the plain loop runs here: ``pgt`` (PyTorch Geometric Temporal's) or ``pyg-gcnconv``."""
    return "pgt" if importlib.util.find_spec("torch_geometric_temporal") is not None else "pyg-gcnconv"


class GCNGatedCell(nn.Module):
    """The T-GCN cell (Zhao et al., 2019): a GRU whose update, reset and candidate gates each read a
    graph convolution of the input beside the hidden state, built on PyG's ``GCNConv``."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.convs = nn.ModuleList(GCNConv(in_channels, out_channels) for _ in range(3))
        self.gates = nn.ModuleList(nn.Linear(2 * out_channels, out_channels) for _ in range(3))
        self.out_channels = out_channels

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor, h: torch.Tensor | None
    ) -> torch.Tensor:
        if h is None:
            h = x.new_zeros(x.shape[0], self.out_channels)
        (conv_z, conv_r, conv_h), (gate_z, gate_r, gate_h) = self.convs, self.gates
        z = torch.sigmoid(gate_z(torch.cat([conv_z(x, edge_index, edge_weight), h], dim=1)))
        r = torch.sigmoid(gate_r(torch.cat([conv_r(x, edge_index, edge_weight), h], dim=1)))
        candidate = torch.tanh(gate_h(torch.cat([conv_h(x, edge_index, edge_weight), h * r], dim=1)))
        return z * h + (1 - z) * candidate


class PlainTGCN(nn.Module):
    """T-GCN cells stacked ``layers`` deep and a linear head (PyTorch Geometric Temporal's cell where installed)."""

    def __init__(self, in_channels: int, hidden: int, layers: int) -> None:
        super().__init__()
        cell: Any = GCNGatedCell
        if plain_cell() == "pgt":
            from torch_geometric_temporal.nn.recurrent import TGCN

            cell = TGCN
        widths = [in_channels] + [hidden] * layers
        self.cells = nn.ModuleList(cell(a, b) for a, b in zip(widths, widths[1:]))
        self.head = nn.Linear(hidden, 1)

    def forward(self, snapshots: Sequence[Any]) -> torch.Tensor:
        states: list[Any] = [None] * len(self.cells)
        for snapshot in snapshots:
            h = snapshot.x
            for i, cell in enumerate(self.cells):
                h = states[i] = cell(h, snapshot.edge_index, snapshot.edge_weight, states[i])
        return self.head(h).squeeze(-1)


def plain_tgcn_epochs(
    graph: TemporalGraph,
    groups: Sequence[SnapshotGroup],
    lr: float,
    epochs: int,
    hidden: int,
    layers: int,
    seed: int,
    device: torch.device,
) -> tuple[list[float], list[float]]:
    """Per group: zero the gradients, the model over its snapshots from a zero state, MSE over the
    nodes that exist at its last snapshot, backward, Adam. Each epoch's seconds (once its work is
    done) and mean loss."""
    torch.manual_seed(seed)
    snapshots = [s.to(device) for s in graph.snapshots]
    model = PlainTGCN(graph.snapshots[0].x.shape[1], hidden, layers).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    epoch_times, losses = [], []
    for _ in range(epochs):
        model.train()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start, total = time.perf_counter(), 0.0
        for group in groups:
            window = snapshots[group.start : group.stop]
            last = window[-1]
            optimizer.zero_grad()
            loss = F.mse_loss(model(window)[last.node_mask], last.y[last.node_mask])
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        epoch_times.append(time.perf_counter() - start)
        losses.append(total / max(len(groups), 1))
    return epoch_times, losses
