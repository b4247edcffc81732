"""The TGN bench-tgn-pyg compares with: the loop PyG documents for TGN, from its public modules.

Imports torch and PyTorch Geometric: only the benchmark's builder imports this module.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import TGNMemory, TransformerConv
from torch_geometric.nn.models.tgn import IdentityMessage, LastAggregator, LastNeighborLoader, TimeEncoder

if TYPE_CHECKING:
    from dygsched.data.events import EventStream


class Embedding(nn.Module):
    """One ``TransformerConv`` over the neighbours' relative time encodings and messages."""

    def __init__(self, dim: int, msg_dim: int, time_encoder: TimeEncoder, heads: int) -> None:
        super().__init__()
        self.time_encoder = time_encoder
        self.conv = TransformerConv(dim, dim // heads, heads=heads, dropout=0.1, edge_dim=msg_dim + time_encoder.out_channels)

    def forward(
        self, x: torch.Tensor, last_update: torch.Tensor, edge_index: torch.Tensor, t: torch.Tensor, msg: torch.Tensor
    ) -> torch.Tensor:
        relative = self.time_encoder((last_update[edge_index[0]] - t).to(x.dtype))
        return self.conv(x, edge_index, torch.cat([relative, msg], dim=-1))


class Predictor(nn.Module):
    """The two-layer link predictor: a score per (source, destination) pair."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.src, self.dst, self.out = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, 1)

    def forward(self, z_src: torch.Tensor, z_dst: torch.Tensor) -> torch.Tensor:
        return self.out((self.src(z_src) + self.dst(z_dst)).relu()).squeeze(-1)


def pyg_tgn_epochs(
    stream: EventStream,
    train: tuple[int, int],
    epochs: int,
    batch: int,
    memory_dim: int,
    neighbours: int,
    heads: int,
    lr: float,
    seed: int,
    device: str = "cpu",
    steps: list[int] | None = None,
) -> tuple[list[float], list[float]]:
    """The loop PyG documents for TGN, from its public modules: ``TGNMemory`` (GRU memory,
    ``IdentityMessage``, ``LastAggregator``), ``LastNeighborLoader``, one ``TransformerConv`` over
    relative time encodings, a two-layer link predictor, one random negative per event, Adam.
    ``device``: where it runs (the stream moved there once, as PyG's example does); an epoch's time
    ends once its work is done (the loop reads its loss every step, which waits for it anyway).
    ``steps``: where to append each epoch's count of optimizer steps."""
    torch.manual_seed(seed)
    on = torch.device(device)
    n, d = stream.num_nodes, memory_dim
    t = (stream.t - stream.t[0]).to(torch.long).to(on)
    msg = (stream.edge_matrix() if stream.edge_dim else torch.zeros(stream.num_events, 1)).to(on)
    sources, destinations = stream.src.to(on), stream.dst.to(on)
    memory = TGNMemory(
        n, msg.shape[1], d, d, message_module=IdentityMessage(msg.shape[1], d, d), aggregator_module=LastAggregator()
    ).to(on)
    gnn = Embedding(d, msg.shape[1], memory.time_enc, heads).to(on)
    predictor = Predictor(d).to(on)
    optimizer = torch.optim.Adam({*memory.parameters(), *gnn.parameters(), *predictor.parameters()}, lr=lr)
    loader = LastNeighborLoader(n, size=neighbours, device=on)
    assoc = torch.empty(n, dtype=torch.long, device=on)
    epoch_times, losses = [], []
    for _ in range(epochs):
        memory.train(), gnn.train(), predictor.train()
        memory.reset_state()
        loader.reset_state()
        if on.type == "cuda":
            torch.cuda.synchronize(on)
        start, total = time.perf_counter(), 0.0
        for a in range(train[0], train[1], batch):
            b = min(a + batch, train[1])
            src, dst, bt, bmsg = sources[a:b], destinations[a:b], t[a:b], msg[a:b]
            neg = torch.randint(0, n, (b - a,), device=on)
            optimizer.zero_grad()
            n_id, edge_index, e_id = loader(torch.cat([src, dst, neg]).unique())
            assoc[n_id] = torch.arange(n_id.numel(), device=on)
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
        if on.type == "cuda":
            torch.cuda.synchronize(on)
        epoch_times.append(time.perf_counter() - start)
        losses.append(total / (train[1] - train[0]))
        if steps is not None:
            steps.append(len(range(train[0], train[1], batch)))
    return epoch_times, losses
