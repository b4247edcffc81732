"""One layer loop (``DGNN.unroll``): hooks see every layer of every snapshot, and change nothing
unless they mean to; the profiler's timed hooks run the training code itself; a window's temporal
steps run at once give what they give one at a time."""

import pytest
import torch

from dygsched.data.synthetic import SyntheticSource
from dygsched.engine.snapshot_groups.profiler import PhaseTimer, TimedHooks
from dygsched.models.gat_lstm import GATLSTM
from dygsched.models.gclstm import GCLSTM
from dygsched.models.hooks import PLAIN, GivenFirstSpatial, LayerHooks
from dygsched.models.mpnn_lstm import MPNNLSTM
from dygsched.models.tgcn import TGCN


class Counting(LayerHooks):
    def __init__(self):
        self.calls = []

    def spatial(self, depth, t, layer, x, snapshot, state):
        self.calls.append((t, depth))
        return super().spatial(depth, t, layer, x, snapshot, state)


class StepByStep(LayerHooks):
    """Acts between temporal steps (as FlareDTDG's or the profiler's hooks do), so ``unroll`` runs
    snapshot by snapshot and every layer's steps one at a time."""

    def temporal(self, depth, t, layer, spatial_out, state):
        return super().temporal(depth, t, layer, spatial_out, state)


@pytest.mark.parametrize(
    "make",
    [
        lambda: TGCN(4, 1, 8, 2),
        lambda: GATLSTM(4, 1, 8, 3, heads=2),
        lambda: MPNNLSTM(4, 1, 8, 1, dropout=0.0),
        lambda: GCLSTM(4, 1, 8, 2, K=3),
    ],
)
def test_hooks_see_every_layer_and_the_timed_forward_is_the_forward(make):
    graph = SyntheticSource(num_nodes=30, num_snapshots=3, feature_dim=4).load()
    torch.manual_seed(0)
    model = make()
    counting = Counting()
    plain = model(graph.snapshots)
    assert torch.equal(model(graph.snapshots, hooks=counting), plain)
    assert not counting.per_step  # nothing between the steps: one layer at a time, its steps as a window
    assert counting.calls == [(t, d) for d in range(len(model.layers)) for t in range(3)]
    timer = PhaseTimer(torch.device("cpu"))
    assert torch.equal(model(graph.snapshots, hooks=TimedHooks(timer)), plain)
    assert timer.seconds["spatial"] > 0 and timer.seconds["temporal"] > 0


def test_unroll_continues_from_given_states_like_one_long_sequence():
    graph = SyntheticSource(num_nodes=30, num_snapshots=4, feature_dim=4).load()
    model = TGCN(4, 1, 8, 2)
    whole, _ = model.unroll(graph.snapshots)
    _, middle = model.unroll(graph.snapshots[:2])
    rest, _ = model.unroll(graph.snapshots[2:], middle, PLAIN)
    assert torch.allclose(rest, whole)
    spatial = [model.layers[0].spatial(s.x, s.edge_index, s.edge_weight, None) for s in graph.snapshots]
    assert torch.allclose(model(graph.snapshots, hooks=GivenFirstSpatial(spatial)), model(graph.snapshots))


@pytest.mark.parametrize(
    "make",
    [
        lambda: TGCN(4, 1, 8, 3),
        lambda: MPNNLSTM(4, 1, 8, 2, dropout=0.0),
        lambda: GATLSTM(4, 1, 8, 2, heads=2),
        lambda: GCLSTM(4, 1, 8, 2, K=3),
    ],
)
def test_one_layer_at_a_time_is_the_same_computation(make):
    graph = SyntheticSource(num_nodes=30, num_snapshots=4, feature_dim=4).load()
    torch.manual_seed(0)
    model = make()
    model.eval()  # batch norm's running statistics would otherwise be updated in another order
    by_snapshot, states = model.unroll(graph.snapshots, hooks=StepByStep())
    by_layer, layer_states = model.unroll(graph.snapshots, hooks=StepByStep(), layer_major=True)
    as_windows, window_states = model.unroll(graph.snapshots)
    for other, other_states in ((by_layer, layer_states), (as_windows, window_states)):
        assert torch.allclose(other, by_snapshot, atol=1e-6)
        assert all(torch.allclose(a, b, atol=1e-6) for s, r in zip(states, other_states) for a, b in zip(s, r))
    timer = PhaseTimer(torch.device("cpu"))
    assert torch.allclose(model.unroll(graph.snapshots, hooks=TimedHooks(timer), layer_major=True)[0], by_snapshot, atol=1e-6)
    assert timer.seconds["spatial"] > 0
