import pytest
import torch

from dygsched.data.groups import sliding_groups, split_by_time
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.errors import ConfigError, DataError


def test_sliding_windows():
    groups = sliding_groups(6, 4)
    assert [(g.start, g.stop) for g in groups] == [(0, 4), (1, 5), (2, 6)]


def test_window_larger_than_snapshots():
    with pytest.raises(ConfigError, match="larger than the number of snapshots"):
        sliding_groups(3, 4)


def test_split_is_by_time_and_disjoint():
    split = split_by_time(sliding_groups(24, 4), 0.7, 0.15)
    assert len(split.train) == 15 and len(split.val) == 3 and len(split.test) == 3
    assert split.train[-1].stop <= split.val[0].stop and split.val[-1].stop <= split.test[0].stop


def test_too_few_groups_for_a_split():
    with pytest.raises(ConfigError, match="too few"):
        split_by_time(sliding_groups(5, 4), 0.7, 0.15)


def snapshot(edges, n=3):
    edge_index = torch.tensor(edges, dtype=torch.long).reshape(-1, 2).T
    return Snapshot(
        edge_index, torch.ones(edge_index.shape[1]), torch.zeros(n, 2), torch.zeros(n), torch.ones(n, dtype=torch.bool)
    )


def test_temporal_graph_rejects_ids_out_of_range():
    with pytest.raises(DataError, match="outside"):
        TemporalGraph("g", (snapshot([[0, 5]]),), Task.REGRESSION)


def test_temporal_graph_rejects_empty_and_nan():
    with pytest.raises(DataError, match="no snapshots"):
        TemporalGraph("g", (), Task.REGRESSION)
    bad = snapshot([[0, 1]])
    bad = Snapshot(bad.edge_index, bad.edge_weight, torch.full((3, 2), float("nan")), bad.y, bad.node_mask)
    with pytest.raises(DataError, match="NaN"):
        TemporalGraph("g", (bad,), Task.REGRESSION)
