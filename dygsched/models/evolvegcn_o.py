"""EvolveGCN-O (Pareja et al., 2020): the GCN weight matrix itself is the GRU's hidden state."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn.inits import glorot

from dygsched.data.diffmap import DiffMap, EdgeSet
from dygsched.models import flops
from dygsched.models.dgnn import DGNNLayer, State
from dygsched.models.gcn_stack import GCNStack
from dygsched.models.incremental_kernels import GCNSpec, gcn_aggregate_chain, gcn_step_sizes
from dygsched.models.ops import gcn_aggregate


class EvolveGCNOLayer(DGNNLayer):
    """One EvolveGCN-O layer::

        W_t = GRU(input=W_{t-1}, hidden=W_{t-1})     (rows of W are the GRU's batch)
        H_t = ReLU(A_t X_t W_t)                      (A_t: GCN-normalised adjacency with self-loops)

    ``W`` is ``[in_channels, out_channels]``; the GRU has input and hidden size ``out_channels``,
    so in the square case it is exactly ``torch_geometric_temporal``'s ``EvolveGCNO`` (a GRU over
    ``W[None]``, then ``GCNConv`` with the evolved weight and no bias; tgt returns the output
    before the activation, ``H_t`` here is after it); other shapes are allowed, as in the paper.
    ``spatial`` is the aggregation ``A_t X_t`` (it needs no weight, so it does not read the state
    and can be reused); ``temporal`` evolves ``W`` and projects:
    ``(A_t X_t) W_t``, which equals ``A_t (X_t W_t)`` up to float rounding.

    State: ``(W,)``, the current weight ``[in_channels, out_channels]``; the initial state is the
    learnable ``initial_weight``. Unlike tgt, which keeps the evolved weight on the module
    (``self.weight``) from one ``forward`` call to the next until ``reinitialize_weight()``, the
    weight here lives in the explicit state, so every snapshot group starts from ``initial_weight``.

    Reuse (``"gcn_aggregate"``): the aggregation ``A_t X_t`` only; the projection's weight
    changes with every snapshot.
    """

    reuse = "gcn_aggregate"
    node_state = False  # the state is the evolving weight, one per graph

    def __init__(self, in_channels: int, out_channels: int, improved: bool = False, add_self_loops: bool = True) -> None:
        super().__init__(in_channels, out_channels)
        self.improved = improved
        self.add_self_loops = add_self_loops
        self.initial_weight = nn.Parameter(torch.empty(in_channels, out_channels))
        self.recurrent = nn.GRUCell(out_channels, out_channels)
        glorot(self.initial_weight)

    def initial_state(self, num_nodes: int, device: torch.device, dtype: torch.dtype) -> State:
        return (self.initial_weight.to(device=device, dtype=dtype),)

    def spatial(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor, state: State | None, conv_out: Any = None
    ) -> torch.Tensor:
        """``A_t X_t``: ``[N, in_channels]``."""
        if conv_out is not None:
            return conv_out
        return gcn_aggregate(x, edge_index, edge_weight, improved=self.improved, add_self_loops=self.add_self_loops)

    def step_sizes(self, before: EdgeSet, after: EdgeSet, diff: DiffMap) -> object | None:
        return gcn_step_sizes(before, after, diff, GCNSpec.of(self.improved, self.add_self_loops))

    def conv_chain(
        self, x: torch.Tensor, first: EdgeSet, diffs: Sequence[DiffMap], paths: Sequence[str] | None = None
    ) -> list[Any]:
        return gcn_aggregate_chain(x, first, diffs, paths, improved=self.improved, add_self_loops=self.add_self_loops)

    def temporal(self, spatial_out: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        (weight,) = state
        weight = self.recurrent(weight, weight)
        if flops.counting():
            flops.add_flops("transform", 2 * spatial_out.size(0) * weight.size(0) * weight.size(1))
        return F.relu(spatial_out @ weight), (weight,)


class EvolveGCNO(GCNStack):
    """``num_layers`` stacked EvolveGCN-O layers of width ``hidden_channels`` and a linear head."""

    layer_type = EvolveGCNOLayer
