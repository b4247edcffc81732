"""The link decoder: a pair of node embeddings to the logit that they link.

A two-layer MLP on the pair, the link predictor of TGB's and UTG's examples (``LinkPredictor``:
``lin_src(z_u) + lin_dst(z_v)``, ReLU, a linear layer to one logit). Adding the two projections is
one linear layer on the concatenation ``[z_u, z_v]``, so this is the MLP on the concatenated pair;
it is not symmetric, so ``u -> v`` and ``v -> u`` score apart, as directed events do.
"""

from __future__ import annotations

import torch
from torch import nn


class LinkDecoder(nn.Module):
    """``forward(z_src, z_dst)``: one logit per row pair (``[P, d]`` each -> ``[P]``)."""

    def __init__(self, embedding_dim: int, hidden_channels: int | None = None) -> None:
        super().__init__()
        hidden = hidden_channels or embedding_dim
        self.lin_src = nn.Linear(embedding_dim, hidden)
        self.lin_dst = nn.Linear(embedding_dim, hidden, bias=False)  # one bias for the pair's first layer
        self.lin_out = nn.Linear(hidden, 1)

    def forward(self, z_src: torch.Tensor, z_dst: torch.Tensor) -> torch.Tensor:
        return self.lin_out(torch.relu(self.lin_src(z_src) + self.lin_dst(z_dst))).squeeze(-1)
