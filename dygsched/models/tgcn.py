"""T-GCN (Zhao et al., 2019): a GRU whose input transforms are graph convolutions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GCNConv

from dygsched.data.diffmap import DiffMap, EdgeSet
from dygsched.models import flops
from dygsched.models.dgnn import DGNNLayer, State, ZeroState
from dygsched.models.gcn_stack import GCNStack
from dygsched.models.incremental_kernels import GCNSpec, gcn_step_sizes, projected_gcn_chain
from dygsched.models.ops import gcn_aggregate


class TGCNLayer(DGNNLayer):
    """One T-GCN cell, with the equations of ``torch_geometric_temporal.nn.recurrent.TGCN``::

        Z = sigmoid(L_z [GCN_z(X), H])
        R = sigmoid(L_r [GCN_r(X), H])
        H~ = tanh(L_h [GCN_h(X), H * R])
        H' = Z * H + (1 - Z) * H~

    The parameters are tgt's: the three gate convolutions as one ``GCNConv`` with
    ``3 * out_channels`` outputs (``conv``: their weights and biases stacked) and the three gate
    linears. The computation is reassociated, the same numbers up to float rounding: each linear
    ``L_g = [L_g^x | L_g^h]`` splits into its input half and its state half, and the input half is
    folded into the convolution, ``L_g^x GCN_g(X) = A X (W_g^T L_g^x^T) + L_g^x b_g``, so a
    snapshot costs one aggregation over ``min(in, 3 out)`` channels and one projection of
    ``in -> 3 out``, instead of a projection ``in -> 3 out``, an aggregation over ``3 out`` channels
    and three ``out x out`` products of the convolution's output.

    ``spatial`` returns the input's share of the three gates' pre-activations,
    ``[L_z^x GCN_z(X) | L_r^x GCN_r(X) | L_h^x GCN_h(X)]`` plus the linears' biases (``[N, 3 out]``);
    it does not read the state, so it can be cached and reused. ``temporal`` adds the state's
    share and runs the GRU-style update. State: ``(H,)`` with ``H`` of shape ``[N, out_channels]``.
    Reuse (``"gcn"``): all of ``spatial``, transformation and aggregation, in either order.
    Parameters are frozen within an iteration (REAL 4.2), so ``conv_chain`` folds the weight and
    bias once per chain:

    * project first (REAL 4.1.2, case 1, pre-aggregation transformation): the chain's first input
      is projected once, then only the rows whose features change, and the projection is
      aggregated incrementally (``projected_gcn_chain``);
    * aggregate first (case 2, post-aggregation transformation): ``A X`` is aggregated
      incrementally and projected only on the rows whose aggregation changed, the "selective
      MatMul" (``projected_gcn_chain(..., project_first=False)``).

    ``project_first`` (``None``, the default; or ``True``/``False`` to fix it) picks the order.
    With ``None`` a whole snapshot (training without reuse) aggregates the narrower side (project
    first where ``in > 3 out``), and a reused chain runs in the order the reuse engine predicts
    faster on this device (``projection_widths``): it times the aggregation at both widths and
    the projection, and sums them over the epoch's chains (``planner.aggregation_cost``). Case 1
    aggregates the wider side where ``in < 3 out`` but projects only changed feature rows; case 2
    re-projects every row whose aggregation changed, and with GCN's normalisation a changed edge
    rewrites the rows of all its endpoints' neighbours.
    """

    reuse = "gcn"

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        improved: bool = False,
        add_self_loops: bool = True,
        project_first: bool | None = None,
    ) -> None:
        super().__init__(in_channels, out_channels)
        self.project_first = in_channels > 3 * out_channels if project_first is None else bool(project_first)
        self.order_configured = project_first is not None
        self.conv = GCNConv(in_channels, 3 * out_channels, improved=improved, add_self_loops=add_self_loops)
        self.linear_z = nn.Linear(2 * out_channels, out_channels)
        self.linear_r = nn.Linear(2 * out_channels, out_channels)
        self.linear_h = nn.Linear(2 * out_channels, out_channels)

    def initial_state(self, num_nodes: int, device: torch.device, dtype: torch.dtype) -> State:
        return ZeroState((torch.zeros(num_nodes, self.out_channels, device=device, dtype=dtype),))

    def _input_halves(self) -> torch.Tensor:
        """``[L_z^x, L_r^x, L_h^x]`` stacked: ``[3, out, out]``."""
        out = self.out_channels
        return torch.stack([self.linear_z.weight[:, :out], self.linear_r.weight[:, :out], self.linear_h.weight[:, :out]])

    def _linear_biases(self) -> torch.Tensor:
        return torch.cat([self.linear_z.bias, self.linear_r.bias, self.linear_h.bias])

    def _folded(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The gate linears' input halves folded into the convolution: weight ``[3 out, in]`` and bias ``[3 out]``."""
        out, halves, conv = self.out_channels, self._input_halves(), self.conv
        weight = torch.bmm(halves, conv.lin.weight.view(3, out, -1)).reshape(3 * out, -1)
        bias = torch.bmm(halves, conv.bias.view(3, out, 1)).reshape(3 * out) + self._linear_biases()
        if flops.counting():
            flops.add_flops("transform", 2 * 3 * out * out * (self.in_channels + 1))
        return weight, bias

    def spatial(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor, state: State | None, conv_out: Any = None
    ) -> torch.Tensor:
        """The input's share of the gates' pre-activations, ``[N, 3 * out_channels]`` (see the class);
        ``conv_out`` (from ``conv_chain``) is that share, computed ahead."""
        if conv_out is not None:
            return conv_out
        weight, bias = self._folded()
        conv, out = self.conv, self.out_channels
        if flops.counting():
            flops.add_flops("transform", 2 * x.size(0) * self.in_channels * 3 * out)
            flops.add_flops("elementwise", x.size(0) * 3 * out)
        if self.project_first:
            return (
                gcn_aggregate(
                    F.linear(x, weight), edge_index, edge_weight, improved=conv.improved, add_self_loops=conv.add_self_loops
                )
                + bias
            )
        aggregated = gcn_aggregate(x, edge_index, edge_weight, improved=conv.improved, add_self_loops=conv.add_self_loops)
        return F.linear(aggregated, weight, bias)

    def projection_widths(self) -> tuple[int, int] | None:
        return None if self.order_configured else (self.in_channels, 3 * self.out_channels)

    def step_sizes(self, before: EdgeSet, after: EdgeSet, diff: DiffMap) -> object | None:
        return gcn_step_sizes(before, after, diff, GCNSpec.of(self.conv.improved, self.conv.add_self_loops))

    def conv_chain(
        self,
        x: torch.Tensor,
        first: EdgeSet,
        diffs: Sequence[DiffMap],
        paths: Sequence[str] | None = None,
        project_first: bool | None = None,
    ) -> list[Any]:
        conv = self.conv
        weight, bias = self._folded()  # once per chain: the parameters do not change within an iteration
        order = self.project_first if project_first is None else project_first
        return projected_gcn_chain(
            x, weight, bias, first, diffs, paths, improved=conv.improved, add_self_loops=conv.add_self_loops, project_first=order
        )

    def temporal(self, spatial_out: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        (h,) = state
        out = self.out_channels
        x_z, x_r, x_h = spatial_out.chunk(3, dim=-1)
        if isinstance(state, ZeroState):  # H = 0: the state's shares vanish, R is not needed
            z, h_tilde = torch.sigmoid(x_z), torch.tanh(x_h)
            h = h_tilde - z * h_tilde  # (1 - Z) * H~
            return h, (h,)
        h_z, h_r = F.linear(h, torch.cat([self.linear_z.weight[:, out:], self.linear_r.weight[:, out:]])).chunk(2, dim=-1)
        z = torch.sigmoid(x_z + h_z)
        r = torch.sigmoid(x_r + h_r)
        h_tilde = torch.tanh(x_h + F.linear(h * r, self.linear_h.weight[:, out:]))
        h = torch.lerp(h_tilde, h, z)  # Z * H + (1 - Z) * H~
        return h, (h,)


class TGCN(GCNStack):
    """``num_layers`` stacked T-GCN cells of width ``hidden_channels`` and a linear head; the option
    ``project_first`` sets every cell's order (see ``TGCNLayer``)."""

    layer_type = TGCNLayer
