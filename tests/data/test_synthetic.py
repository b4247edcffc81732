import pytest
import torch

from dygsched.data.synthetic import SyntheticSource
from dygsched.data.temporal_graph import Task
from dygsched.errors import DataError


def test_deterministic_per_seed():
    a = SyntheticSource(num_nodes=150, num_snapshots=6, seed=3).load()
    b = SyntheticSource(num_nodes=150, num_snapshots=6, seed=3).load()
    c = SyntheticSource(num_nodes=150, num_snapshots=6, seed=4).load()
    for sa, sb in zip(a.snapshots, b.snapshots):
        assert torch.equal(sa.edge_index, sb.edge_index) and torch.equal(sa.y, sb.y)
    assert not torch.equal(a.snapshots[-1].edge_index, c.snapshots[-1].edge_index)


def test_edges_change_at_the_requested_rate_and_grow():
    graph = SyntheticSource(
        num_nodes=2000, avg_degree=8, num_snapshots=10, change_rate=0.1, growth="stackoverflow", seed=0
    ).load()
    n = graph.num_nodes
    keys = [set((s.edge_index[0] * n + s.edge_index[1]).tolist()) for s in graph.snapshots]
    for before, after in zip(keys, keys[1:]):
        removed = len(before - after) / len(before)
        assert 0.07 < removed < 0.13
    assert graph.snapshots[-1].num_edges > 1.5 * graph.snapshots[0].num_edges
    assert graph.snapshots[-1].num_active_nodes > graph.snapshots[0].num_active_nodes
    assert abs(graph.snapshots[-1].num_edges / n - 8) < 0.5


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_edges_only_touch_existing_nodes_and_have_no_self_loops(seed):
    """Also where the node count dips (the stackoverflow curve fluctuates): a node that left takes
    its edges with it (with seed 0, a kept edge of a departed node once crashed DistDy)."""
    graph = SyntheticSource(num_snapshots=40, seed=seed).load()
    counts = [int(snap.node_mask.sum()) for snap in graph.snapshots]
    assert seed != 0 or any(b < a for a, b in zip(counts, counts[1:]))  # the case this test is for
    for snap in graph.snapshots:
        assert snap.node_mask[snap.edge_index].all()
        assert (snap.edge_index[0] != snap.edge_index[1]).all()


def test_arxiv_growth_keeps_all_nodes():
    graph = SyntheticSource(num_nodes=300, num_snapshots=5, growth="arxiv", seed=1).load()
    assert all(bool(s.node_mask.all()) for s in graph.snapshots)


def test_classification_targets_are_classes():
    graph = SyntheticSource(num_nodes=200, num_snapshots=4, task="classification", num_classes=3).load()
    assert graph.task is Task.CLASSIFICATION and graph.out_channels == 3
    assert set(torch.cat([s.y for s in graph.snapshots]).tolist()) == {0, 1, 2}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_nodes": 1}, "num_nodes"),
        ({"growth": "linear"}, "unknown growth trend"),
        ({"change_rate": 1.5}, "change_rate"),
        ({"task": "ranking"}, "unknown task"),
        ({"avg_degree": 0}, "avg_degree"),
    ],
)
def test_bad_parameters(kwargs, message):
    with pytest.raises(DataError, match=message):
        SyntheticSource(**kwargs).load()


def test_fluctuation_default_draws_the_same_graph_and_scales_only_the_edge_noise():
    default = SyntheticSource(num_nodes=200, num_snapshots=8, seed=5).load()
    explicit = SyntheticSource(num_nodes=200, num_snapshots=8, seed=5, fluctuation=0.02).load()
    for a, b in zip(default.snapshots, explicit.snapshots, strict=True):
        assert torch.equal(a.edge_index, b.edge_index) and torch.equal(a.y, b.y) and torch.equal(a.node_mask, b.node_mask)
    wider = SyntheticSource(num_nodes=200, num_snapshots=8, seed=5, fluctuation=0.3).load()
    assert [s.num_edges for s in wider.snapshots] != [s.num_edges for s in default.snapshots]
    assert [s.num_active_nodes for s in wider.snapshots] == [s.num_active_nodes for s in default.snapshots]


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "0.3", True])
def test_a_bad_fluctuation_is_refused_in_one_line(bad):
    with pytest.raises(DataError, match=r"^synthetic: fluctuation must be a number in \[0, 1\], got "):
        SyntheticSource(num_nodes=50, num_snapshots=3, fluctuation=bad).load()
