"""T-GCN (Zhao et al., 2019): a GRU whose input transforms are graph convolutions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch_geometric.nn import GCNConv

from dygsched.data.diffmap import DiffMap, EdgeSet
from dygsched.models.base import DGNNLayer, GCNStack, State
from dygsched.models.incremental import gcn_conv_chain


class TGCNLayer(DGNNLayer):
    """One T-GCN cell, with the equations of ``torch_geometric_temporal.nn.recurrent.TGCN``::

        Z = sigmoid(L_z [GCN_z(X), H])
        R = sigmoid(L_r [GCN_r(X), H])
        H~ = tanh(L_h [GCN_h(X), H * R])
        H' = Z * H + (1 - Z) * H~

    ``spatial`` runs the three gate convolutions as one ``GCNConv`` with ``3 * out_channels``
    outputs (the three weight matrices and biases stacked: the same numbers as three convs, one
    message-passing pass); it does not read the state, so its output can be cached and reused.
    ``temporal`` is the GRU-style update. State: ``(H,)`` with ``H`` of shape ``[N, out_channels]``.
    Reuse (``"gcn"``): the whole stacked conv (projection and aggregation).
    """

    reuse = "gcn"

    def __init__(self, in_channels: int, out_channels: int, improved: bool = False, add_self_loops: bool = True) -> None:
        super().__init__(in_channels, out_channels)
        self.conv = GCNConv(in_channels, 3 * out_channels, improved=improved, add_self_loops=add_self_loops)
        self.linear_z = nn.Linear(2 * out_channels, out_channels)
        self.linear_r = nn.Linear(2 * out_channels, out_channels)
        self.linear_h = nn.Linear(2 * out_channels, out_channels)

    def initial_state(self, num_nodes: int, device: torch.device, dtype: torch.dtype) -> State:
        return (torch.zeros(num_nodes, self.out_channels, device=device, dtype=dtype),)

    def spatial(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor, state: State, conv_out: Any = None
    ) -> torch.Tensor:
        """``[GCN_z(X), GCN_r(X), GCN_h(X)]`` side by side: ``[N, 3 * out_channels]``."""
        return self.conv(x, edge_index, edge_weight) if conv_out is None else conv_out

    def conv_chain(
        self, x: torch.Tensor, first: EdgeSet, diffs: Sequence[DiffMap], paths: Sequence[str] | None = None
    ) -> list[Any]:
        return gcn_conv_chain(self.conv, x, first, diffs, paths)

    def temporal(self, spatial_out: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        (h,) = state
        conv_z, conv_r, conv_h = spatial_out.chunk(3, dim=-1)
        z = torch.sigmoid(self.linear_z(torch.cat([conv_z, h], dim=-1)))
        r = torch.sigmoid(self.linear_r(torch.cat([conv_r, h], dim=-1)))
        h_tilde = torch.tanh(self.linear_h(torch.cat([conv_h, h * r], dim=-1)))
        h = z * h + (1 - z) * h_tilde
        return h, (h,)


class TGCN(GCNStack):
    """``num_layers`` stacked T-GCN cells of width ``hidden_channels`` and a linear head."""

    layer_type = TGCNLayer
