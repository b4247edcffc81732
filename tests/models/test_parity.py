"""Our layers against torch-geometric-temporal's modules with the same weights, to 1e-5.

Each test copies tgt's weights into our layer, runs both over snapshots whose graphs (and node
sets) change from one to the next, and compares the recurrent output and state at every step.
WD-GCN and GAT-LSTM have no tgt counterpart; they are checked in test_equations.py.
"""

from __future__ import annotations

import pytest
import torch

from dygsched.data.temporal_graph import Snapshot
from dygsched.models.evolvegcn_h import EvolveGCNHLayer
from dygsched.models.evolvegcn_o import EvolveGCNOLayer
from dygsched.models.mpnn_lstm import MPNNLSTMLayer
from dygsched.models.tgcn import TGCN, TGCNLayer
from tests.models.snapshots import changing_group

recurrent = pytest.importorskip("torch_geometric_temporal.nn.recurrent")

TOL = {"atol": 1e-5, "rtol": 1e-5}


def randomise_biases(module: torch.nn.Module) -> None:
    """Biases often start at zero; give them values so that a mis-copied one shows."""
    for name, param in module.named_parameters():
        if name.endswith("bias"):
            torch.nn.init.normal_(param, std=0.5)


def copy_recurrent(cell: torch.nn.RNNCellBase, rnn: torch.nn.RNNBase) -> None:
    """Single-layer ``nn.GRU``/``nn.LSTM`` weights into the matching ``nn.GRUCell``/``nn.LSTMCell``."""
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).copy_(getattr(rnn, f"{name}_l0"))


def load_tgcn_cell(layer: TGCNLayer, tgt_cell: torch.nn.Module) -> None:
    """tgt's three gate convolutions, stacked into our single conv."""
    convs = (tgt_cell.conv_z, tgt_cell.conv_r, tgt_cell.conv_h)
    with torch.no_grad():
        layer.conv.lin.weight.copy_(torch.cat([conv.lin.weight for conv in convs]))
        layer.conv.bias.copy_(torch.cat([conv.bias for conv in convs]))
    for name in ("linear_z", "linear_r", "linear_h"):
        getattr(layer, name).load_state_dict(getattr(tgt_cell, name).state_dict())


@pytest.mark.parametrize("in_channels", [4, 32], ids=["aggregate-first", "project-first"])  # 32 > 3 x 8 gate channels
def test_tgcn_matches_tgt_cell_by_cell(in_channels: int) -> None:
    """Our TGCN folds the gates' input halves into the convolution and skips a zero state's
    products (``ZeroState``, the first snapshot): the same outputs, states and gradients as tgt."""
    torch.manual_seed(0)
    model = TGCN(in_channels, 1, hidden_channels=8, num_layers=2)
    cells = [recurrent.TGCN(in_channels, 8), recurrent.TGCN(8, 8)]
    for layer, cell in zip(model.layers, cells, strict=True):
        randomise_biases(cell)
        load_tgcn_cell(layer, cell)

    states = model.initial_states(12, torch.device("cpu"))
    hidden: list[torch.Tensor | None] = [None, None]
    for snapshot in changing_group(length=3, num_features=in_channels):
        out, states = model.step(snapshot, states)
        x = snapshot.x
        for i, cell in enumerate(cells):
            hidden[i] = cell(x, snapshot.edge_index, snapshot.edge_weight, hidden[i])
            x = hidden[i]
            torch.testing.assert_close(states[i][0], hidden[i], **TOL)
        torch.testing.assert_close(out, x, **TOL)

    (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
    (x * torch.linspace(-1, 1, x.numel()).view_as(x)).sum().backward()
    for layer, cell in zip(model.layers, cells, strict=True):
        convs = (cell.conv_z, cell.conv_r, cell.conv_h)
        torch.testing.assert_close(layer.conv.lin.weight.grad, torch.cat([c.lin.weight.grad for c in convs]), **TOL)
        torch.testing.assert_close(layer.conv.bias.grad, torch.cat([c.bias.grad for c in convs]), **TOL)
        for name in ("linear_z", "linear_r", "linear_h"):
            torch.testing.assert_close(getattr(layer, name).weight.grad, getattr(cell, name).weight.grad, **TOL)
            torch.testing.assert_close(getattr(layer, name).bias.grad, getattr(cell, name).bias.grad, **TOL)


def test_evolvegcn_o_matches_tgt() -> None:
    torch.manual_seed(0)
    theirs = recurrent.EvolveGCNO(8)
    ours = EvolveGCNOLayer(8, 8)
    with torch.no_grad():
        ours.initial_weight.copy_(theirs.initial_weight[0])
    copy_recurrent(ours.recurrent, theirs.recurrent_layer)

    state = ours.initial_state(12, torch.device("cpu"), torch.float32)
    for snapshot in changing_group(num_features=8, length=3):
        out, state = ours.temporal(ours.spatial(snapshot.x, snapshot.edge_index, snapshot.edge_weight, state), state)
        expected = theirs(snapshot.x, snapshot.edge_index, snapshot.edge_weight)  # carries its weight across calls
        torch.testing.assert_close(state[0], theirs.weight[0], **TOL)
        torch.testing.assert_close(out, torch.relu(expected), **TOL)  # tgt's layer has no activation


def test_evolvegcn_h_matches_tgt() -> None:
    torch.manual_seed(0)
    num_nodes = 16  # tgt's pooling ratio 8 / 16 keeps exactly k = 8 rows, as the GRU needs
    theirs = recurrent.EvolveGCNH(num_nodes, 8)
    ours = EvolveGCNHLayer(8, 8)
    with torch.no_grad():
        ours.initial_weight.copy_(theirs.initial_weight[0])
    ours.pooling.load_state_dict(theirs.pooling_layer.state_dict())
    copy_recurrent(ours.recurrent, theirs.recurrent_layer)

    state = ours.initial_state(num_nodes, torch.device("cpu"), torch.float32)
    for snapshot in changing_group(num_nodes=num_nodes, num_features=8, length=3):
        out, state = ours.temporal(ours.spatial(snapshot.x, snapshot.edge_index, snapshot.edge_weight, state), state)
        expected = theirs(snapshot.x, snapshot.edge_index, snapshot.edge_weight)
        torch.testing.assert_close(state[0], theirs.weight[0], **TOL)
        torch.testing.assert_close(out, torch.relu(expected), **TOL)


def mpnn_pair(window: int, dropout: float, num_nodes: int = 12) -> tuple[MPNNLSTMLayer, torch.nn.Module]:
    torch.manual_seed(0)
    theirs = recurrent.MPNNLSTM(4, 8, num_nodes, window, dropout)
    randomise_biases(theirs)
    with torch.no_grad():  # non-trivial running statistics and affine parameters
        for bn in (theirs._batch_norm_1, theirs._batch_norm_2):
            bn.running_mean.normal_()
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
    ours = MPNNLSTMLayer(4, 8, dropout=dropout)
    ours.conv_1.load_state_dict(theirs._convolution_1.state_dict())
    ours.conv_2.load_state_dict(theirs._convolution_2.state_dict())
    ours.batch_norm_1.load_state_dict(theirs._batch_norm_1.state_dict())
    ours.batch_norm_2.load_state_dict(theirs._batch_norm_2.state_dict())
    copy_recurrent(ours.recurrent_1, theirs._recurrent_1)
    copy_recurrent(ours.recurrent_2, theirs._recurrent_2)
    return ours, theirs


def as_window(snapshots: list[Snapshot]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """tgt's MPNNLSTM input: the window's snapshots stacked as one block-diagonal graph."""
    n = snapshots[0].num_nodes
    x = torch.cat([s.x for s in snapshots])
    edge_index = torch.cat([s.edge_index + t * n for t, s in enumerate(snapshots)], dim=1)
    edge_weight = torch.cat([s.edge_weight for s in snapshots])
    return x, edge_index, edge_weight


def run_ours(layer: MPNNLSTMLayer, snapshots: list[Snapshot]) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
    state = layer.initial_state(snapshots[0].num_nodes, torch.device("cpu"), torch.float32)
    for snapshot in snapshots:
        out, state = layer.temporal(layer.spatial(snapshot.x, snapshot.edge_index, snapshot.edge_weight, state), state)
    return out, state


def test_mpnn_lstm_matches_tgt_over_a_window_in_eval_mode() -> None:
    """Window of 3 changing graphs: the stacked LSTMs' final H_1, H_2 agree; the skip columns differ by design."""
    snapshots = changing_group(length=3)
    ours, theirs = mpnn_pair(window=3, dropout=0.5)
    ours.eval()
    theirs.eval()
    out, (h1, _, h2, _) = run_ours(ours, snapshots)
    expected = theirs(*as_window(snapshots))
    torch.testing.assert_close(h1, expected[:, :8], **TOL)
    torch.testing.assert_close(h2, expected[:, 8:16], **TOL)
    torch.testing.assert_close(out[:, :16], expected[:, :16], **TOL)
    torch.testing.assert_close(out[:, 16:], snapshots[-1].x)  # ours: the current input; tgt: a window layout


def test_mpnn_lstm_matches_tgt_on_one_snapshot_in_training_mode() -> None:
    """With w = 1 the batch statistics and the skip columns agree as well: the whole output matches."""
    snapshot = changing_group(length=1)
    ours, theirs = mpnn_pair(window=1, dropout=0.0)
    out, _ = run_ours(ours, snapshot)
    expected = theirs(*as_window(snapshot))
    torch.testing.assert_close(out, expected, **TOL)
    torch.testing.assert_close(ours.batch_norm_1.running_mean, theirs._batch_norm_1.running_mean, **TOL)
    torch.testing.assert_close(ours.batch_norm_2.running_var, theirs._batch_norm_2.running_var, **TOL)
