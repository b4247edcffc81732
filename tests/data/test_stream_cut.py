import numpy as np
import pytest
import torch

from dygsched.data.events import events_from_arrays
from dygsched.data.stream_cut import cut_stream
from dygsched.data.time_cut import TimeCut
from dygsched.errors import DataError

# What TGX's own discretize (UTG's loaders' call) gave on the shipped CollegeMsg, weekly: the distinct
# (src, dst) pairs of each of its 29 windows (run once on this file in a separate environment).
TGX_COLLEGEMSG_WEEKLY = [1, 146, 1403, 3254, 3825, 3197, 4354, 2394, 1730, 977, 54, 498, 647, 535, 272]
TGX_COLLEGEMSG_WEEKLY += [342, 337, 243, 335, 307, 308, 221, 289, 237, 214, 169, 129, 117, 93]


def close(got: torch.Tensor, expected: object) -> None:
    np.testing.assert_allclose(got.numpy(), np.asarray(expected, dtype=np.float64), rtol=1e-6, atol=1e-6)


def tiny_stream():
    """Six events over three windows of 10 time units, with two edge features each."""
    src = np.array([0, 0, 1, 2, 3, 0])
    dst = np.array([1, 1, 2, 3, 3, 3])
    t = np.array([0.0, 1.0, 2.0, 12.0, 15.0, 25.0])
    features = np.array([[1, 0], [3, 0], [0, 2], [4, 4], [2, 0], [1, 1]], dtype=np.float32)
    return events_from_arrays("tiny", src, dst, t, None, 4, features)


def test_a_hand_computed_stream():
    graph = cut_stream(tiny_stream(), TimeCut.length(10.0))
    assert graph.num_snapshots == 2 and graph.num_features == 4  # 3 windows, the last only gives targets
    assert graph.snapshot_times.tolist() == [0.0, 10.0, 20.0]
    first, second = graph.snapshots
    assert first.edge_index.tolist() == [[0, 1], [1, 2]] and first.edge_weight.tolist() == [2.0, 1.0]  # repeats: a count
    one, three = np.log1p(1), np.log1p(3)  # log(1 + degree)
    close(first.x[:, :2], [[0, one], [one, one], [one, 0], [0, 0]])  # [in, out]
    close(first.x[:, 2:], [[2, 0], [4 / 3, 2 / 3], [0, 2], [0, 0]])  # the mean of the node's events' features
    close(first.y, [0, 0, one, three])  # the next window: 2 -> 3, 3 -> 3
    assert first.node_mask.tolist() == [True, True, True, False]
    assert second.edge_index.tolist() == [[2, 3], [3, 3]]
    close(second.x[:, 2:], [[0, 0], [0, 0], [4, 4], [8 / 3, 4 / 3]])  # a self-loop's event counts at both ends
    close(second.y, [one, 0, 0, one])


def test_weights_add_up_and_overlapping_windows_average_their_events():
    stream = tiny_stream()
    weighted = events_from_arrays("w", stream.src, stream.dst, stream.t, torch.tensor([0.5, 2.0, 1.0, 1.0, 1.0, 1.0]), 4)
    assert cut_stream(weighted, TimeCut.length(10.0)).snapshots[0].edge_weight.tolist() == [2.5, 1.0]
    lagged = cut_stream(stream, TimeCut.length(10.0), lags=1)  # snapshot 0 holds windows 0 and 1
    assert lagged.num_snapshots == 1 and lagged.snapshots[0].num_edges == 4
    close(lagged.snapshots[0].x[3, 2:], [8 / 3, 4 / 3])


def test_a_gap_and_a_single_window_are_refused():
    stream = tiny_stream()
    with pytest.raises(DataError, match="empty between events"):
        cut_stream(stream, TimeCut.length(5.0))  # [5, 10) and [20, 25) hold nothing
    assert cut_stream(stream, TimeCut.length(5.0), refuse_gaps=False).snapshots[1].num_edges == 0
    with pytest.raises(DataError, match="single snapshot"):
        cut_stream(stream, TimeCut.length(100.0))


def test_collegemsg_weekly_is_tgxs_cut(shipped_data):
    from dygsched.data.stream_formats import StreamFileSource

    stream = StreamFileSource(str(shipped_data / "collegemsg.csv"), name="collegemsg").load()
    graph = cut_stream(stream, TimeCut.unit("weekly"))
    assert graph.num_snapshots == len(TGX_COLLEGEMSG_WEEKLY) - 1  # its last window gives the targets
    assert [s.num_edges for s in graph.snapshots] == TGX_COLLEGEMSG_WEEKLY[:-1]
    times = graph.snapshot_times
    assert times[0] == stream.t[0] and times[1] - times[0] == 1 and bool((times[2:] - times[1:-1] == 604_800).all())
    assert sum(float(s.edge_weight.sum()) for s in graph.snapshots) == int((stream.t < times[-1]).sum())  # every message
    assert graph.num_features == 2 and graph.num_nodes == stream.num_nodes


def test_a_stream_with_features_keeps_them_and_new_nodes_get_them_too():
    rng = np.random.default_rng(0)
    count = 400
    src, dst = rng.integers(0, 30, count), rng.integers(30, 40, count)
    src[-70:-50] = 50  # a node that appears only in the last snapshot
    features = rng.standard_normal((count, 3)).astype(np.float32)
    stream = events_from_arrays("s", src, dst, np.arange(count, dtype=np.float64), None, 51, features)
    graph = cut_stream(stream, TimeCut.length(50.0))
    last = graph.snapshots[-1]
    assert graph.num_features == 5 and last.node_mask[50]
    mine = (stream.src.numpy() == 50) & (stream.t.numpy() >= float(graph.snapshot_times[-2]))
    mine &= stream.t.numpy() < float(graph.snapshot_times[-1])
    close(last.x[50, 2:], stream.edge_features[torch.from_numpy(mine)].mean(0))
    close(last.x[50, 1], np.log1p(len(set(stream.dst.numpy()[mine].tolist()))))
