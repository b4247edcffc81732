"""JODIE (Kumar et al., 2019) as TGL configures it: an RNN memory and a time-projection embedding."""

from __future__ import annotations

import math

import torch
from torch import nn

from dygsched.models.memory_base import RecurrentMemoryModel


class TimeProjection(nn.Module):
    """TGL's ``JODIETimeEmbedding``: ``z = h * (1 + w dt + b)`` with ``dt = (t_query - tau) / (t_query + 1)``.

    ``w`` and ``b`` (a ``Linear(1, d)``) are initialised from ``N(0, 1/sqrt(1))`` as JODIE's
    ``NormalLinear`` does.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.lin = nn.Linear(1, dim)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        std = 1.0 / math.sqrt(self.lin.in_features)
        with torch.no_grad():
            self.lin.weight.normal_(0.0, std)
            self.lin.bias.normal_(0.0, std)

    def forward(self, h: torch.Tensor, memory_time: torch.Tensor, query_time: torch.Tensor) -> torch.Tensor:
        dt = (query_time - memory_time) / (query_time + 1)
        return h * (1 + self.lin(dt[:, None]))


class JODIE(RecurrentMemoryModel):
    """JODIE with TGL semantics (TGL's ``JODIE.yml``: RNN memory, mailbox of 1, identity embedding
    with JODIE's time projection).

    Memory (TGL's ``RNNMemeoryUpdater``, an ``nn.RNNCell`` with tanh), with the one (latest) mail ``m``::

        s' = tanh(W_i [m || phi(t_query - tau)] + b_i + W_h s + b_h)

    ``mail_time`` is not read. Embedding (TGL's ``IdentityNormLayer`` then ``JODIETimeEmbedding``)::

        z = LayerNorm(s') * (1 + w (t_query - tau) / (t_query + 1) + b)

    with ``tau`` the memory time before this batch. No neighbours are read and there is no dropout
    layer (TGL's JODIE has none); ``dropout`` is accepted so every memory model takes the same
    settings, and only validated.
    """

    def __init__(self, num_nodes: int, edge_dim: int, memory_dim: int = 100, time_dim: int = 100, dropout: float = 0.1) -> None:
        super().__init__(
            num_nodes, edge_dim, memory_dim, time_dim, dropout, mailbox_size=1, embedding_neighbours=0, mail_neighbours=0
        )
        self.updater = nn.RNNCell(self.mail_dim + self.time_dim, self.memory_dim, nonlinearity="tanh")
        self.norm = nn.LayerNorm(self.memory_dim)
        self.time_projection = TimeProjection(self.memory_dim)

    def embed(
        self,
        memory: torch.Tensor,
        memory_time: torch.Tensor,
        query_time: torch.Tensor,
        neighbour_memory: torch.Tensor,
        neighbour_time: torch.Tensor,
        neighbour_edge: torch.Tensor,
        neighbour_mask: torch.Tensor,
        neighbour_edge_index: torch.Tensor | None = None,
    ) -> torch.Tensor:
        return self.time_projection(self.norm(memory), memory_time, query_time)
