"""MPNN-LSTM (Panagopoulos et al., 2021): two GCNs per snapshot, two stacked LSTMs over time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GCNConv

from dygsched.data.diffmap import DiffMap, EdgeSet
from dygsched.data.temporal_graph import Snapshot
from dygsched.models.dgnn import DGNN, DGNNLayer, State, ZeroState, stack_layers
from dygsched.models.incremental_kernels import GCNSpec, gcn_conv_chain, gcn_step_sizes
from dygsched.models.ops import dropout, gcn_conv, lstm_cell
from dygsched.models.partitioned import PartitionOps, synced_batch_norm


class MPNNLSTMLayer(DGNNLayer):
    """One MPNN-LSTM block, ``torch_geometric_temporal.nn.recurrent.MPNNLSTM`` taken one snapshot at a time::

        S1_t = Dropout(BN_1(ReLU(GCN_1(X_t))))
        S2_t = Dropout(BN_2(ReLU(GCN_2(S1_t))))
        H1_t, C1_t = LSTM_1([S1_t, S2_t], (H1_{t-1}, C1_{t-1}))
        H2_t, C2_t = LSTM_2(H1_t, (H2_{t-1}, C2_{t-1}))
        out_t = [H1_t, H2_t, X_t]                       (X_t only with ``skip=True``)

    ``spatial`` is the two convolutions with their batch norms and dropout, returning
    ``([S1_t, S2_t], X_t)``; it does not read the state. ``temporal`` is one step of each of the
    two stacked LSTMs. State: ``(H1, C1, H2, C2)``, each ``[N, hidden_channels]``. The output has
    ``2 * hidden_channels (+ in_channels with skip)`` columns.

    Where this differs from tgt's ``MPNNLSTM``, which takes a whole window of ``w`` snapshots as
    one block-diagonal batch in a single call:

    * Batch norm in training mode normalises each snapshot with its own statistics, where tgt
      normalises all ``w * N`` rows of the window together, and the running statistics are updated
      once per snapshot instead of once per window. In eval mode, or with ``w = 1``, the two agree.
    * The skip columns are the current snapshot's input ``X_t``. tgt appends the full features of
      the window's first snapshot plus the last feature column of each later snapshot (a layout
      tied to the lagged-case features of its COVID data, whose width depends on ``w``). With
      ``w = 1`` the two agree.
    * The LSTMs' outputs ``H1``, ``H2`` (tgt's ``H_1[0]``, ``H_2[0]``) are the same in every case
      where the batch norms agree, i.e. the recurrent math is identical.

    Reuse (``"gcn"``): ``GCN_1(X_t)`` only; ``GCN_2`` reads ``S1_t`` after batch norm and dropout.

    Cost: a group starts from the zero state, so the first step skips both LSTMs' recurrent
    products (``lstm_cell``); run as a window (``temporal_window``) the output concatenation
    ``[H1_t, H2_t, X_t]`` is built only for the steps the next block or the head reads; dropout
    draws its masks from a uniform sample (``dygsched.models.ops.dropout``, 3x cheaper on a CPU).
    """

    reuse = "gcn"

    def __init__(self, in_channels: int, hidden_channels: int, dropout: float = 0.5, skip: bool = True) -> None:
        super().__init__(in_channels, 2 * hidden_channels + (in_channels if skip else 0))
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.hidden_channels = hidden_channels
        self.dropout = dropout
        self.skip = skip
        self.conv_1 = GCNConv(in_channels, hidden_channels)
        self.conv_2 = GCNConv(hidden_channels, hidden_channels)
        self.batch_norm_1 = nn.BatchNorm1d(hidden_channels)
        self.batch_norm_2 = nn.BatchNorm1d(hidden_channels)
        self.recurrent_1 = nn.LSTMCell(2 * hidden_channels, hidden_channels)
        self.recurrent_2 = nn.LSTMCell(hidden_channels, hidden_channels)

    def initial_state(self, num_nodes: int, device: torch.device, dtype: torch.dtype) -> State:
        zeros = torch.zeros(num_nodes, self.hidden_channels, device=device, dtype=dtype)
        return ZeroState((zeros, zeros.clone(), zeros.clone(), zeros.clone()))

    def spatial(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor, state: State | None, conv_out: Any = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``([S1_t, S2_t] [N, 2 * hidden_channels], X_t)``; ``conv_out`` replaces ``GCN_1(X_t)``."""
        s1 = F.relu(gcn_conv(self.conv_1, x, edge_index, edge_weight) if conv_out is None else conv_out)
        s1 = dropout(self.batch_norm_1(s1), self.dropout, self.training)
        s2 = F.relu(gcn_conv(self.conv_2, s1, edge_index, edge_weight))
        s2 = dropout(self.batch_norm_2(s2), self.dropout, self.training)
        return torch.cat([s1, s2], dim=-1), x

    def spatial_partitioned(self, x: torch.Tensor, snapshot: Snapshot, state: State | None, ops: PartitionOps) -> Any:
        """Both convolutions read halo rows (``S1``'s come by a second exchange) and both batch norms
        take their statistics over every rank's owned rows: the whole snapshot's, as in ``spatial``."""
        s1 = F.relu(ops.owned(gcn_conv(self.conv_1, ops.with_halo(x), snapshot.edge_index, snapshot.edge_weight)))
        s1 = dropout(synced_batch_norm(self.batch_norm_1, s1, ops), self.dropout, self.training)
        s2 = F.relu(ops.owned(gcn_conv(self.conv_2, ops.with_halo(s1), snapshot.edge_index, snapshot.edge_weight)))
        s2 = dropout(synced_batch_norm(self.batch_norm_2, s2, ops), self.dropout, self.training)
        return torch.cat([s1, s2], dim=-1), x

    def step_sizes(self, before: EdgeSet, after: EdgeSet, diff: DiffMap) -> object | None:
        conv = self.conv_1
        return gcn_step_sizes(before, after, diff, GCNSpec.of(conv.improved, conv.add_self_loops, conv.normalize))

    def conv_chain(
        self, x: torch.Tensor, first: EdgeSet, diffs: Sequence[DiffMap], paths: Sequence[str] | None = None
    ) -> list[Any]:
        return gcn_conv_chain(self.conv_1, x, first, diffs, paths)

    def temporal(self, spatial_out: tuple[torch.Tensor, torch.Tensor], state: State) -> tuple[torch.Tensor, State]:
        state = self._step(spatial_out[0], state)
        return self._output(state, spatial_out[1]), state

    def temporal_window(
        self, spatial_outs: Sequence[tuple[torch.Tensor, torch.Tensor]], state: State, keep_outputs: bool = True
    ) -> tuple[list[torch.Tensor | None], State]:
        outputs: list[torch.Tensor | None] = []
        last = len(spatial_outs) - 1
        for t, (aggregated, x) in enumerate(spatial_outs):
            state = self._step(aggregated, state)
            outputs.append(self._output(state, x) if keep_outputs or t == last else None)
        return outputs, state

    def _step(self, aggregated: torch.Tensor, state: State) -> State:
        """Both LSTMs one step on; from the zero state without the state's products."""
        zero = isinstance(state, ZeroState)
        h1, c1, h2, c2 = state
        h1, c1 = lstm_cell(self.recurrent_1, aggregated, (h1, c1), zero_state=zero)
        h2, c2 = lstm_cell(self.recurrent_2, h1, (h2, c2), zero_state=zero)
        return (h1, c1, h2, c2)

    def _output(self, state: State, x: torch.Tensor) -> torch.Tensor:
        h1, _, h2, _ = state
        return torch.cat([h1, h2, x] if self.skip else [h1, h2], dim=-1)


class MPNNLSTM(DGNN):
    """``num_layers`` stacked MPNN-LSTM blocks and a linear head (one block is the paper's model).

    Each block's output (``2 * hidden_channels``, plus its input width with ``skip``) is the next
    block's input, so with ``skip`` the width grows by ``2 * hidden_channels`` per block.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        hidden_channels: int = 64,
        num_layers: int = 2,
        dropout: float = 0.5,
        skip: bool = True,
    ) -> None:
        make_layer = lambda width: MPNNLSTMLayer(width, hidden_channels, dropout, skip)  # noqa: E731
        super().__init__(stack_layers(make_layer, in_channels, out_channels, hidden_channels, num_layers), out_channels)
