"""EvolveGCN-H (Pareja et al., 2020): a GRU evolves the GCN weights from a top-k summary of the nodes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import TopKPooling
from torch_geometric.nn.inits import glorot

from dygsched.data.diffmap import DiffMap, EdgeSet
from dygsched.models import flops
from dygsched.models.dgnn import DGNNLayer, State
from dygsched.models.gcn_stack import GCNStack
from dygsched.models.incremental_kernels import GCNSpec, gcn_aggregate_chain, gcn_step_sizes
from dygsched.models.ops import gcn_aggregate


class EvolveGCNHLayer(DGNNLayer):
    """One EvolveGCN-H layer::

        Z_t = TopK(X_t, k=in_channels)               (the k best-scoring rows, scaled by tanh(score))
        W_t = GRU(input=Z_t, hidden=W_{t-1})         (row i of W pairs with the i-th best node)
        H_t = ReLU(A_t X_t W_t)

    ``W`` is ``[in_channels, out_channels]``; the GRU has input size ``in_channels`` and hidden
    size ``out_channels``, so in the square case it is exactly ``torch_geometric_temporal``'s
    ``EvolveGCNH`` (``TopKPooling`` + ``GRU`` + fixed-weight GCN, before the ReLU). tgt sets the pooling ratio to
    ``in_channels / num_nodes`` for a node count fixed at construction; here ``k = in_channels``
    directly (the same ``k``), so the layer works on any graph. A snapshot with fewer than ``k``
    nodes pads the summary with zero rows.

    ``spatial`` returns ``(A_t X_t, Z_t)``: the aggregation and the summary, both functions of the
    snapshot alone; ``temporal`` runs the GRU on ``W`` and projects. State: ``(W,)``; the initial
    state is the learnable ``initial_weight``. As for EvolveGCN-O, tgt keeps the evolved weight on
    the module across ``forward`` calls; here every snapshot group starts from ``initial_weight``.

    Reuse (``"gcn_aggregate"``): the aggregation ``A_t X_t`` only; the summary ``Z_t`` is still
    computed per snapshot and the projection's weight changes with every snapshot.
    """

    reuse = "gcn_aggregate"
    node_state = False  # the state is the evolving weight, one per graph
    partitionable = False  # it would need a cross-rank top-k
    not_partitionable_because = "its top-k ranks every node of a snapshot"

    def __init__(self, in_channels: int, out_channels: int, improved: bool = False, add_self_loops: bool = True) -> None:
        super().__init__(in_channels, out_channels)
        self.improved = improved
        self.add_self_loops = add_self_loops
        self.initial_weight = nn.Parameter(torch.empty(in_channels, out_channels))
        self.pooling = TopKPooling(in_channels, ratio=in_channels)
        self.recurrent = nn.GRUCell(in_channels, out_channels)
        glorot(self.initial_weight)

    def initial_state(self, num_nodes: int, device: torch.device, dtype: torch.dtype) -> State:
        return (self.initial_weight.to(device=device, dtype=dtype),)

    def spatial(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor, state: State | None, conv_out: Any = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(A_t X_t [N, in_channels], Z_t [in_channels, in_channels])``; ``conv_out`` replaces ``A_t X_t``."""
        if conv_out is None:
            aggregated = gcn_aggregate(x, edge_index, edge_weight, improved=self.improved, add_self_loops=self.add_self_loops)
        else:
            aggregated = conv_out
        summary = self.pooling(x, edge_index)[0]
        missing = self.in_channels - summary.size(0)
        if missing > 0:
            summary = F.pad(summary, (0, 0, 0, missing))
        return aggregated, summary

    def step_sizes(self, before: EdgeSet, after: EdgeSet, diff: DiffMap) -> object | None:
        return gcn_step_sizes(before, after, diff, GCNSpec.of(self.improved, self.add_self_loops))

    def conv_chain(
        self, x: torch.Tensor, first: EdgeSet, diffs: Sequence[DiffMap], paths: Sequence[str] | None = None
    ) -> list[Any]:
        return gcn_aggregate_chain(x, first, diffs, paths, improved=self.improved, add_self_loops=self.add_self_loops)

    def temporal(self, spatial_out: tuple[torch.Tensor, torch.Tensor], state: State) -> tuple[torch.Tensor, State]:
        aggregated, summary = spatial_out
        (weight,) = state
        weight = self.recurrent(summary, weight)
        if flops.counting():
            flops.add_flops("transform", 2 * aggregated.size(0) * weight.size(0) * weight.size(1))
        return F.relu(aggregated @ weight), (weight,)


class EvolveGCNH(GCNStack):
    """``num_layers`` stacked EvolveGCN-H layers of width ``hidden_channels`` and a linear head."""

    layer_type = EvolveGCNHLayer
