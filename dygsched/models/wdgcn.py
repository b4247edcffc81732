"""WD-GCN (Manessi et al., 2020): a graph convolution on each snapshot, then an LSTM per node."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GCNConv

from dygsched.data.diffmap import DiffMap, EdgeSet
from dygsched.models.dgnn import DGNNLayer, State, ZeroState
from dygsched.models.gcn_stack import GCNStack
from dygsched.models.incremental_kernels import GCNSpec, gcn_conv_chain, gcn_step_sizes, projected_gcn_chain
from dygsched.models.ops import gcn_conv, lstm_cell


class WDGCNLayer(DGNNLayer):
    """A waterfall-dense GC layer followed by a vertex-wise LSTM::

        S_t = ReLU(GCN(X_t))              (weights shared over time)
        H_t, C_t = LSTMCell(S_t, (H_{t-1}, C_{t-1}))   (weights shared over nodes)

    ``spatial`` is the ReLU'd ``GCNConv`` (independent of the state); ``temporal`` is one
    ``nn.LSTMCell`` step (at a group's start, zero state, without the state's products). State:
    ``(H, C)``, each ``[N, out_channels]``. Reuse (``"gcn"``): the conv before the ReLU, in either
    of REAL 4.1.2's orders (``projection_widths``).
    """

    reuse = "gcn"

    def __init__(self, in_channels: int, out_channels: int, improved: bool = False, add_self_loops: bool = True) -> None:
        super().__init__(in_channels, out_channels)
        self.conv = GCNConv(in_channels, out_channels, improved=improved, add_self_loops=add_self_loops)
        self.lstm = nn.LSTMCell(out_channels, out_channels)

    def initial_state(self, num_nodes: int, device: torch.device, dtype: torch.dtype) -> State:
        zeros = torch.zeros(num_nodes, self.out_channels, device=device, dtype=dtype)
        return ZeroState((zeros, zeros.clone()))

    def spatial(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor, state: State | None, conv_out: Any = None
    ) -> torch.Tensor:
        return F.relu(gcn_conv(self.conv, x, edge_index, edge_weight) if conv_out is None else conv_out)

    def projection_widths(self) -> tuple[int, int] | None:
        return (self.in_channels, self.out_channels) if self.conv.normalize else None

    def step_sizes(self, before: EdgeSet, after: EdgeSet, diff: DiffMap) -> object | None:
        """Both orders aggregate with the same normalisation (case 2 only where the conv normalises)."""
        return gcn_step_sizes(before, after, diff, GCNSpec.of(self.conv.improved, self.conv.add_self_loops, self.conv.normalize))

    def conv_chain(
        self,
        x: torch.Tensor,
        first: EdgeSet,
        diffs: Sequence[DiffMap],
        paths: Sequence[str] | None = None,
        project_first: bool | None = None,
    ) -> list[Any]:
        """Projecting first (``GCNConv``'s own order, REAL's case 1) unless ``project_first=False``
        (case 2: aggregate ``A X``, then project the rewritten rows)."""
        if project_first is False:
            conv = self.conv
            return projected_gcn_chain(
                x, conv.lin.weight, conv.bias, first, diffs, paths, conv.improved, conv.add_self_loops, project_first=False
            )
        return gcn_conv_chain(self.conv, x, first, diffs, paths)

    def temporal(self, spatial_out: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        hc = cast("tuple[torch.Tensor, torch.Tensor]", state)  # this layer's states are (h, c) (initial_state)
        h, c = lstm_cell(self.lstm, spatial_out, hc, zero_state=isinstance(state, ZeroState))
        return h, (h, c)


class WDGCN(GCNStack):
    """``num_layers`` stacked (GCN, LSTM) blocks of width ``hidden_channels`` and a linear head."""

    layer_type = WDGCNLayer
