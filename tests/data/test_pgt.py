import json

import pytest
import torch

from dygsched.data.pgt import EnglandCovidSource, TwitterTennisSource, from_signal
from dygsched.errors import DataError


def test_twitter_tennis_matches_the_library_loader(shared_data):
    from torch_geometric_temporal.dataset import TwitterTennisDatasetLoader

    graph = TwitterTennisSource(path=str(shared_data / "twitter_tennis_rg17.json")).load()
    assert graph.num_snapshots == 120 and graph.num_nodes == 1000 and graph.num_features == 16

    data = json.loads((shared_data / "twitter_tennis_rg17.json").read_text())

    class Local(TwitterTennisDatasetLoader):
        def _read_web_data(self):
            self._dataset = data

    reference = list(Local().get_dataset())
    for ours, theirs in zip(graph.snapshots[:5], reference[:5]):
        assert torch.equal(ours.edge_index, theirs.edge_index)
        assert torch.allclose(ours.x, theirs.x.float()) and torch.allclose(ours.y, theirs.y.float())


def test_england_covid(shared_data):
    graph = EnglandCovidSource(path=str(shared_data / "england_covid.json"), lags=8).load()
    assert graph.num_nodes == 129 and graph.num_snapshots == 61 - 8 and graph.num_features == 8


def test_from_signal_accepts_a_static_graph_signal():
    import numpy as np
    from torch_geometric_temporal.signal import StaticGraphTemporalSignal

    edges = np.array([[0, 1], [1, 2]])
    signal = StaticGraphTemporalSignal(edges, np.ones(2), [np.ones((3, 2))] * 4, [np.arange(3.0)] * 4)
    graph = from_signal(signal, "static")
    assert graph.num_snapshots == 4
    assert graph.snapshots[0].num_edges == 2
    assert torch.equal(graph.snapshots[2].y, torch.arange(3.0))


def test_missing_snapshot_key(tmp_path, shared_data):
    data = json.loads((shared_data / "twitter_tennis_rg17.json").read_text())
    del data["17"]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match="misses snapshot key '17'"):
        TwitterTennisSource(path=str(path)).load()


@pytest.mark.parametrize("content, message", [("{not json", "not valid JSON"), ("[1, 2]", "JSON object"), ("{}", "time_periods")])
def test_malformed_json(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        TwitterTennisSource(path=str(path)).load()


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="file not found"):
        EnglandCovidSource(path=str(tmp_path / "none.json")).load()
