"""GAT-LSTM (Wu et al., 2018): graph attention on each snapshot, then an LSTM per node."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GATConv

from dygsched.data.diffmap import DiffMap, EdgeSet
from dygsched.models.dgnn import DGNN, DGNNLayer, State, ZeroState, stack_layers
from dygsched.models.incremental_kernels import gat_conv_chain
from dygsched.models.ops import lstm_cell


class GATLSTMLayer(DGNNLayer):
    """Multi-head graph attention followed by a vertex-wise LSTM::

        S_t = ELU(GAT(X_t))               (heads concatenated: heads x out_channels/heads)
        H_t, C_t = LSTMCell(S_t, (H_{t-1}, C_{t-1}))

    ``spatial`` is the ELU'd ``GATConv`` (independent of the state); ``temporal`` is one
    ``nn.LSTMCell`` step (at a group's start, zero state, without the state's products). State:
    ``(H, C)``, each ``[N, out_channels]``. Like GAT itself, the attention ignores edge weights:
    the edge set alone decides who attends to whom. Reuse (``"gat"``): the conv before the ELU
    (needs attention dropout off while training).
    """

    reuse = "gat"

    def __init__(self, in_channels: int, out_channels: int, heads: int = 4, attention_dropout: float = 0.0) -> None:
        super().__init__(in_channels, out_channels)
        if heads < 1 or out_channels % heads:
            raise ValueError(f"hidden_channels ({out_channels}) must be a positive multiple of heads ({heads})")
        self.heads = heads
        self.conv = GATConv(in_channels, out_channels // heads, heads=heads, concat=True, dropout=attention_dropout)
        self.lstm = nn.LSTMCell(out_channels, out_channels)

    def initial_state(self, num_nodes: int, device: torch.device, dtype: torch.dtype) -> State:
        zeros = torch.zeros(num_nodes, self.out_channels, device=device, dtype=dtype)
        return ZeroState((zeros, zeros.clone()))

    def spatial(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor, state: State | None, conv_out: Any = None
    ) -> torch.Tensor:
        return F.elu(self.conv(x, edge_index) if conv_out is None else conv_out)

    def conv_chain(
        self, x: torch.Tensor, first: EdgeSet, diffs: Sequence[DiffMap], paths: Sequence[str] | None = None
    ) -> list[Any]:
        return gat_conv_chain(self.conv, x, first, diffs, paths)

    def temporal(self, spatial_out: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        hc = cast("tuple[torch.Tensor, torch.Tensor]", state)  # this layer's states are (h, c) (initial_state)
        h, c = lstm_cell(self.lstm, spatial_out, hc, zero_state=isinstance(state, ZeroState))
        return h, (h, c)


class GATLSTM(DGNN):
    """``num_layers`` stacked (GAT, LSTM) blocks of width ``hidden_channels`` and a linear head."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        hidden_channels: int = 64,
        num_layers: int = 2,
        heads: int = 4,
        attention_dropout: float = 0.0,
    ) -> None:
        make_layer = lambda width: GATLSTMLayer(width, hidden_channels, heads, attention_dropout)  # noqa: E731
        super().__init__(stack_layers(make_layer, in_channels, out_channels, hidden_channels, num_layers), out_channels)
