"""GC-LSTM (Chen et al., 2018): an LSTM whose gates read the hidden state through a Chebyshev graph convolution."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import ChebConv

from dygsched.models import flops
from dygsched.models.dgnn import DGNN, DGNNLayer, State, ZeroState, stack_layers
from dygsched.models.gcn_normalization import scaled_laplacian_edges
from dygsched.models.ops import propagate

NORMALIZATIONS = ("sym", "rw", None)
GATES = 4  # input, forget, cell candidate, output: the blocks of every stacked weight, in this order


@dataclass(frozen=True)
class GCLSTMInput:
    """What ``GCLSTMLayer.spatial`` gives a snapshot: the input's share of the four gates'
    pre-activations (``X W + b``, ``[N, 4 * out]``) and the snapshot's scaled Laplacian (edges and
    coefficients; ``None`` for ``K = 1``, whose filter does not propagate)."""

    gates: torch.Tensor
    laplacian: tuple[torch.Tensor, torch.Tensor] | None


class GCLSTMLayer(DGNNLayer):
    """One GC-LSTM cell, with the equations of ``torch_geometric_temporal.nn.recurrent.GCLSTM``::

        I = sigmoid(X W_i + Cheb_i(H) + b_i)
        F = sigmoid(X W_f + Cheb_f(H) + b_f)
        T = tanh(X W_c + Cheb_c(H) + b_c)
        C' = F * C + I * T
        O = sigmoid(X W_o + Cheb_o(H) + b_o)
        H' = O * tanh(C')

    ``Cheb_g`` is a ``ChebConv(out, out, K)`` with its own bias: ``sum_k T_k(L^) H Theta_g^k`` over the
    Chebyshev polynomials ``T_0 = I``, ``T_1 = L^``, ``T_k = 2 L^ T_{k-1} - T_{k-2}`` of the scaled
    Laplacian ``L^ = 2 L / lambda_max - I``; ``L`` is ``I - D^-1/2 A D^-1/2`` (``normalization="sym"``),
    ``I - D^-1 A`` (``"rw"``) or ``D - A`` (``None``), ``D`` the weighted out-degrees, and
    ``lambda_max`` is ``ChebConv``'s default, twice the largest entry of ``L`` (2 for ``sym`` and
    ``rw``). tgt's cell has no peephole weights (its ``GConvLSTM`` has them): the cell state enters
    only through ``F * C``. ``K = 1`` filters nothing: ``Cheb_g(H) = H Theta_g^0 + bias``.

    The parameters are tgt's, stacked gate by gate in the order ``i, f, c, o``: ``input`` holds
    ``[W_i | W_f | W_c | W_o]`` (transposed) and ``[b_i | b_f | b_c | b_o]``; ``conv`` is one
    ``ChebConv(out, 4 * out, K)`` whose ``k``-th linear and bias stack the four gates' (tgt's
    ``conv_g``), so a step runs the Chebyshev recursion on ``H`` once instead of four times, the same
    numbers up to float rounding. They are initialised as tgt's, draw for draw (``reset_parameters``):
    Glorot-uniform per gate block (``W_g`` over ``in x out``, each ``Theta_g^k`` over ``out x out``),
    zero biases.

    ``spatial`` returns the input's share of the gates and the snapshot's scaled Laplacian
    (``GCLSTMInput``; computed once per graph, ``scaled_laplacian_edges``); it does not read the
    state. ``temporal`` convolves ``H`` over that Laplacian and runs the LSTM update; from a zero
    state (a group's start) the convolution is its bias alone. State: ``(H, C)``, each
    ``[N, out_channels]``.

    Reuse: none (``reuse = None``). The graph convolution acts on the hidden state, which changes
    with every snapshot and every group, so there is no convolution of the input to compute once
    and share (REAL's type I and II reuse). Not ``partitionable``: the convolution runs in
    ``temporal`` on every node's hidden state, so a node-partitioned rank would need the halo rows
    of ``H`` at every step and the whole graph's degrees, which the partition layout gives GCN's
    normalisation only.
    """

    reuse = None
    partitionable = False
    not_partitionable_because = "its graph convolution reads every node's hidden state at every step"

    def __init__(
        self, in_channels: int, out_channels: int, K: int = 2, normalization: str | None = "sym", bias: bool = True
    ) -> None:
        super().__init__(in_channels, out_channels)
        if isinstance(K, bool) or not isinstance(K, int) or K < 1:
            raise ValueError(f"K (the Chebyshev filter size) must be a positive integer, got {K!r}")
        if normalization not in NORMALIZATIONS:
            raise ValueError(f"unknown normalization {normalization!r} (choose from sym, rw, null)")
        self.K = K
        with torch.random.fork_rng(devices=[]):  # the draws that count are reset_parameters', in tgt's order
            self.input = nn.Linear(in_channels, GATES * out_channels)
            self.conv = ChebConv(out_channels, GATES * out_channels, K, normalization=normalization, bias=bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """tgt's initialisation, drawn in tgt's order from the global generator: for each gate
        (``i, f, c, o``) a ``ChebConv(out, out, K)`` built as tgt builds it (its Glorot-uniform
        filters), then each gate's ``W_g`` Glorot-uniform over ``in x out``; every bias zero. So a
        model built after ``torch.manual_seed(s)`` holds the weights of tgt's cells built after it."""
        out, conv = self.out_channels, self.conv
        with torch.no_grad():
            for gate in range(GATES):
                rows = slice(gate * out, (gate + 1) * out)
                gate_conv = ChebConv(out, out, self.K, normalization=conv.normalization, bias=conv.bias is not None)
                for lin, gate_lin in zip(conv.lins, gate_conv.lins, strict=True):
                    lin.weight[rows].copy_(gate_lin.weight)
            bound = math.sqrt(6.0 / (self.in_channels + out))
            for gate in range(GATES):
                weight = torch.empty(self.in_channels, out).uniform_(-bound, bound)  # tgt's W_g, applied as X W_g
                self.input.weight[gate * out : (gate + 1) * out].copy_(weight.T)
            self.input.bias.zero_()
            if conv.bias is not None:
                conv.bias.zero_()

    def initial_state(self, num_nodes: int, device: torch.device, dtype: torch.dtype) -> State:
        zeros = torch.zeros(num_nodes, self.out_channels, device=device, dtype=dtype)
        return ZeroState((zeros, zeros.clone()))

    def spatial(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor, state: State | None, conv_out: Any = None
    ) -> GCLSTMInput:
        if conv_out is not None:
            raise ValueError("GC-LSTM has no reusable convolution of its input (reuse = None): conv_out must be None")
        if flops.counting():
            flops.add_flops("transform", 2 * x.size(0) * self.in_channels * GATES * self.out_channels)
            flops.add_flops("elementwise", x.size(0) * GATES * self.out_channels)
        laplacian = scaled_laplacian_edges(self.conv, edge_index, edge_weight, x.size(0), x.dtype) if self.K > 1 else None
        return GCLSTMInput(self.input(x), laplacian)

    def chebyshev(self, h: torch.Tensor, laplacian: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
        """``conv(h, ...)`` over the given scaled Laplacian: ``sum_k T_k(L^) h Theta^k + bias``
        (``[N, 4 * out]``), the four gates' convolutions of ``h`` at once."""
        conv = self.conv
        basis = [h]
        if laplacian is not None:
            edge_index, coefficients = laplacian
            basis.append(propagate(h, edge_index, coefficients))
            for _ in range(2, self.K):
                basis.append(2.0 * propagate(basis[-1], edge_index, coefficients) - basis[-2])
        weight = torch.cat([lin.weight for lin in conv.lins], dim=1)  # [4 out, K out]: Theta^0 .. Theta^(K-1)
        if flops.counting():
            rows, width = h.size(0), self.out_channels
            flops.add_flops("transform", 2 * rows * self.K * width * GATES * width)
            flops.add_flops("elementwise", 2 * rows * width * max(0, self.K - 2))  # 2 T - T'' per order from 2
            if conv.bias is not None:
                flops.add_flops("elementwise", rows * GATES * width)
        return F.linear(torch.cat(basis, dim=-1) if len(basis) > 1 else h, weight, conv.bias)

    def temporal(self, spatial_out: GCLSTMInput, state: State) -> tuple[torch.Tensor, State]:
        h, c = cast("tuple[torch.Tensor, torch.Tensor]", state)  # this layer's states are (H, C) (initial_state)
        gates = spatial_out.gates
        if isinstance(state, ZeroState):  # H = C = 0: every T_k(L^) H vanishes and so does the forget term
            if self.conv.bias is not None:
                gates = gates + self.conv.bias
            i, _, t, o = gates.chunk(GATES, dim=-1)
            c = torch.sigmoid(i) * torch.tanh(t)
        else:
            i, f, t, o = (gates + self.chebyshev(h, spatial_out.laplacian)).chunk(GATES, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(t)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, (h, c)


class GCLSTM(DGNN):
    """``num_layers`` stacked GC-LSTM cells of width ``hidden_channels`` and a linear head; ``K``,
    ``normalization`` and ``bias`` are every cell's (see ``GCLSTMLayer``)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        hidden_channels: int = 64,
        num_layers: int = 2,
        K: int = 2,
        normalization: str | None = "sym",
        bias: bool = True,
    ) -> None:
        make_layer = lambda width: GCLSTMLayer(width, hidden_channels, K, normalization, bias)  # noqa: E731
        super().__init__(stack_layers(make_layer, in_channels, out_channels, hidden_channels, num_layers), out_channels)
