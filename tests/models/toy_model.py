"""A toy model that exists only in the tests: what adding a model takes.

This module and one config file (``tests/conf/model/toy_gru.yaml``) are all: a ``DGNNLayer`` with a
spatial part (the mean of a node's in-neighbours, then a linear map) and a temporal part (a GRU cell
per node), stacked by ``stack_layers`` under a ``DGNN``. ``tests/models/test_toy_model.py`` trains it
with the snapshot-group strategies through the real configs and the worker.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from dygsched.models.dgnn import DGNN, DGNNLayer, State, ZeroState, stack_layers


class MeanGRULayer(DGNNLayer):
    """``S_t = W mean_{u -> v} x_u``; ``H_t = GRUCell(S_t, H_{t-1})``."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(in_channels, out_channels)
        self.lin = nn.Linear(in_channels, out_channels)
        self.gru = nn.GRUCell(out_channels, out_channels)

    def initial_state(self, num_nodes: int, device: torch.device, dtype: torch.dtype) -> State:
        return ZeroState((torch.zeros(num_nodes, self.out_channels, device=device, dtype=dtype),))

    def spatial(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor, state: State, conv_out: Any = None
    ) -> torch.Tensor:
        source, target = edge_index
        total = torch.zeros_like(x).index_add_(0, target, x[source])
        count = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device).index_add_(
            0, target, torch.ones_like(target, dtype=x.dtype)
        )
        return self.lin(total / count.clamp(min=1).unsqueeze(1))

    def temporal(self, spatial_out: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        h = self.gru(spatial_out, state[0])
        return h, (h,)


class MeanGRU(DGNN):
    """``num_layers`` mean-aggregation GRU layers of width ``hidden_channels`` and a linear head."""

    def __init__(self, in_channels: int, out_channels: int, hidden_channels: int = 16, num_layers: int = 1) -> None:
        make_layer = lambda width: MeanGRULayer(width, hidden_channels)  # noqa: E731
        super().__init__(stack_layers(make_layer, in_channels, out_channels, hidden_channels, num_layers), out_channels)
