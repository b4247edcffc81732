"""The LSTM models' window path (zero-state first step, a window's temporal steps at once, outputs
only where read, uniform-sample dropout) against the per-step computation it replaced."""

from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from dygsched.data.synthetic import SyntheticSource
from dygsched.models import GATLSTM, MPNNLSTM, WDGCN
from dygsched.models.hooks import LayerHooks
from dygsched.models.ops import dropout, gcn_conv, lstm_cell

# The window path claims the per-step path's numbers, so they are compared in float64: the two sum in
# other orders (one matmul over the window against one per step), and three epochs of Adam, which divides
# each gradient by its own running size, carry float32's ~1e-7 rounding to 1e-6 in gradients and
# parameters on one CPU kernel set and less on another, within 10x of any fixed float32 tolerance. In
# float64 the two paths stay within 1e-13, so 1e-9 is exact up to rounding on every kernel set.
TOLERANCE = 1e-9


def as_dtype(snapshots, dtype):
    return [replace(s, x=s.x.to(dtype), y=s.y.to(dtype), edge_weight=s.edge_weight.to(dtype)) for s in snapshots]


class KeepTopOutputs(LayerHooks):
    """Acts between the steps, so ``unroll`` runs them one at a time, and keeps every step's
    top-layer output: the outputs the window path skips building are the ones seen here."""

    def __init__(self, sink, top):
        self.sink, self.top = sink, top

    def temporal(self, depth, t, layer, spatial_out, state):
        out, state = layer.temporal(spatial_out, state)
        if depth == self.top:
            self.sink.append(out)
        return out, state


def per_step_mpnn_lstm(model: MPNNLSTM, snapshots) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """MPNN-LSTM as it ran before: every block snapshot by snapshot, ``nn.LSTMCell`` from zeros,
    ``[H1, H2, X]`` built at every step. Returns the prediction and every step's top output."""
    first = snapshots[0]
    states = []
    for layer in model.layers:
        zeros = torch.zeros(first.num_nodes, layer.hidden_channels, dtype=first.x.dtype)
        states.append((zeros, zeros, zeros, zeros))
    outputs = []
    for snapshot in snapshots:
        x = snapshot.x
        for depth, layer in enumerate(model.layers):
            s1 = F.dropout(
                layer.batch_norm_1(F.relu(gcn_conv(layer.conv_1, x, snapshot.edge_index, snapshot.edge_weight))),
                layer.dropout,
                layer.training,
            )
            s2 = F.dropout(
                layer.batch_norm_2(F.relu(gcn_conv(layer.conv_2, s1, snapshot.edge_index, snapshot.edge_weight))),
                layer.dropout,
                layer.training,
            )
            h1, c1, h2, c2 = states[depth]
            h1, c1 = layer.recurrent_1(torch.cat([s1, s2], dim=-1), (h1, c1))
            h2, c2 = layer.recurrent_2(h1, (h2, c2))
            states[depth] = (h1, c1, h2, c2)
            x = torch.cat([h1, h2, x] if layer.skip else [h1, h2], dim=-1)
        outputs.append(x)
    return model.readout(x), outputs


def train_three_epochs(model, snapshots, forward):
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses, grads = [], None
    for _ in range(3):
        for stop in range(2, len(snapshots) + 1):
            group = snapshots[stop - 2 : stop]
            optimizer.zero_grad()
            loss = F.mse_loss(forward(model, group), group[-1].y)
            loss.backward()
            grads = [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in model.parameters()]
            optimizer.step()
            losses.append(float(loss.detach()))
    return torch.tensor(losses, dtype=torch.float64), grads


@pytest.mark.parametrize("num_layers,skip", [(1, True), (2, True), (2, False)])
def test_mpnn_lstm_window_path_is_the_per_step_path(num_layers, skip):
    dtype = torch.float64
    graph = SyntheticSource(num_nodes=40, num_snapshots=5, feature_dim=4, seed=3).load()
    snapshots = as_dtype(graph.snapshots, dtype)
    torch.manual_seed(0)
    ours = MPNNLSTM(4, 1, hidden_channels=8, num_layers=num_layers, dropout=0.0, skip=skip).to(dtype)
    reference = MPNNLSTM(4, 1, hidden_channels=8, num_layers=num_layers, dropout=0.0, skip=skip).to(dtype)
    reference.load_state_dict(ours.state_dict())
    tol = TOLERANCE

    top_ours = []
    h, states = ours.unroll(snapshots, hooks=KeepTopOutputs(top_ours, len(ours.layers) - 1))
    _, top_reference = per_step_mpnn_lstm(reference, snapshots)
    for a, b in zip(top_ours, top_reference, strict=True):
        assert torch.allclose(a, b, rtol=tol, atol=tol)
    assert torch.allclose(ours.readout(h), per_step_mpnn_lstm(reference, snapshots)[0], rtol=tol, atol=tol)

    losses_ours, grads_ours = train_three_epochs(ours, snapshots, lambda m, g: m(g))
    losses_reference, grads_reference = train_three_epochs(reference, snapshots, lambda m, g: per_step_mpnn_lstm(m, g)[0])
    assert torch.allclose(losses_ours, losses_reference, rtol=tol, atol=tol)
    for a, b in zip(grads_ours, grads_reference, strict=True):
        assert torch.allclose(a, b, rtol=tol, atol=tol)
    for a, b in zip(ours.parameters(), reference.parameters(), strict=True):
        assert torch.allclose(a, b, rtol=10 * tol, atol=10 * tol)


@pytest.mark.parametrize(
    "make",
    [lambda: WDGCN(4, 1, hidden_channels=8, num_layers=2), lambda: GATLSTM(4, 1, hidden_channels=8, num_layers=2, heads=2)],
)
def test_zero_state_first_step_is_the_cell(make):
    graph = SyntheticSource(num_nodes=30, num_snapshots=4, feature_dim=4).load()
    torch.manual_seed(0)
    model = make().double()
    snapshots = as_dtype(graph.snapshots, torch.float64)
    ours = model(snapshots)
    # the same model with states that are plain tuples of zeros: every step through nn.LSTMCell
    plain_states = [tuple(layer.initial_state(30, torch.device("cpu"), torch.float64)) for layer in model.layers]
    h, _ = model.unroll(snapshots, plain_states)
    assert torch.allclose(ours, model.readout(h), atol=1e-12)


@pytest.mark.parametrize("zero_state", [True, False])
def test_lstm_cell_from_the_zero_state(zero_state):
    torch.manual_seed(0)
    cell = torch.nn.LSTMCell(5, 3).double()
    x = torch.randn(7, 5, dtype=torch.float64)
    zeros = torch.zeros(7, 3, dtype=torch.float64)
    for a, b in zip(lstm_cell(cell, x, (zeros, zeros), zero_state=zero_state), cell(x, (zeros, zeros)), strict=True):
        assert torch.allclose(a, b, atol=1e-12)


def test_dropout_keeps_each_entry_with_one_minus_p_and_rescales():
    torch.manual_seed(0)
    x = torch.ones(200_000)
    out = dropout(x, 0.3, training=True)
    kept = out != 0
    assert abs(float(kept.float().mean()) - 0.7) < 0.005
    assert torch.allclose(out[kept], torch.full_like(out[kept], 1 / 0.7))
    assert torch.equal(dropout(x, 0.3, training=False), x)
    assert torch.equal(dropout(x, 1.0, training=True), torch.zeros_like(x))
    y = torch.randn(50, requires_grad=True)
    out = dropout(y, 0.5, training=True)
    out.sum().backward()
    assert torch.equal(y.grad, (out.detach() != 0).float() * 2.0)  # the gradient flows through the kept entries only
