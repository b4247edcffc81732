"""DistDy's model (section 3.1): a GraphSAGE encoder per snapshot and a temporal model over the window.

The structural encoder is ``num_layers`` (2 or 3) mean-aggregating ``SAGEConv`` layers run on the
sampled blocks of the target nodes (``encode``): block ``l`` computes its destination nodes (the
first rows of its sources) from their own sampled neighbours, as DGL's message-flow graphs do, so
a node's embedding does not depend on which other nodes share its batch.
The temporal model reads a target's ``window`` structural embeddings, oldest first, with zeros
where the node was absent (``predict``): ``linear`` (one linear map of the concatenated embeddings,
the paper's "linear model"), ``gru`` (a GRU over them) or ``attention`` (attention of the latest
embedding over all of them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import SAGEConv

TEMPORAL = ("linear", "gru", "attention")


class SampledModel(Protocol):
    """What DistDy trains (``DistDyStrategy.check_model``), a ``SAGETemporal``: a structural encoder
    over sampled blocks and a temporal model over a window of embeddings."""

    convs: nn.ModuleList
    window: int
    hidden_channels: int

    def encode(self, x: torch.Tensor, blocks: Sequence[tuple[torch.Tensor, int]]) -> torch.Tensor: ...

    def predict(self, embeddings: torch.Tensor) -> torch.Tensor: ...

    def zero_grad(self, set_to_none: bool = True) -> None: ...


class SAGETemporal(nn.Module):
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        hidden_channels: int = 128,
        num_layers: int = 2,
        window: int = 4,
        temporal: str = "linear",
    ) -> None:
        super().__init__()
        if not 1 <= num_layers <= 3:
            raise ValueError(f"num_layers must be 1, 2 or 3, got {num_layers}")
        if temporal not in TEMPORAL:
            raise ValueError(f"unknown temporal model {temporal!r} (choose from {', '.join(TEMPORAL)})")
        if window < 1 or hidden_channels < 1:
            raise ValueError("window and hidden_channels must be positive")
        self.window, self.hidden_channels, self.temporal_kind = window, hidden_channels, temporal
        widths = [in_channels] + [hidden_channels] * num_layers
        self.temporal: nn.Module
        self.convs = nn.ModuleList(SAGEConv(a, b, aggr="mean") for a, b in zip(widths[:-1], widths[1:]))
        if temporal == "linear":
            self.temporal = nn.Linear(window * hidden_channels, hidden_channels)
        elif temporal == "gru":
            self.temporal = nn.GRU(hidden_channels, hidden_channels, batch_first=True)
        else:
            self.temporal = nn.MultiheadAttention(hidden_channels, num_heads=1, batch_first=True)
        self.head = nn.Linear(hidden_channels, out_channels)

    def encode(self, x: torch.Tensor, blocks: Sequence[tuple[torch.Tensor, int]]) -> torch.Tensor:
        """The targets' structural embeddings. ``x``: the input features of the first block's source
        nodes; ``blocks``: per layer, outermost first, ``(edge_index, num_dst)`` (sources to
        destinations, the destinations being the first ``num_dst`` sources)."""
        if len(blocks) != len(self.convs):
            raise ValueError(f"{len(blocks)} blocks for {len(self.convs)} layers")
        h = x
        for depth, (conv, (edge_index, num_dst)) in enumerate(zip(self.convs, blocks)):
            h = conv((h, h[:num_dst]), edge_index, size=(h.shape[0], num_dst))
            if depth < len(self.convs) - 1:
                h = F.relu(h)
        return h

    def predict(self, embeddings: torch.Tensor) -> torch.Tensor:
        """Predictions from ``[targets, window, hidden]`` structural embeddings (oldest first)."""
        if self.temporal_kind == "linear":
            h = F.relu(self.temporal(embeddings.flatten(1)))
        elif self.temporal_kind == "gru":
            h = self.temporal(embeddings)[0][:, -1]
        else:
            h = self.temporal(embeddings[:, -1:], embeddings, embeddings, need_weights=False)[0][:, 0]
        out = self.head(h)
        return out.squeeze(-1) if out.shape[-1] == 1 else out
