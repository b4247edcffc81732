import json

import pytest
import torch

from dygsched.data.pgt import EnglandCovidSource, TwitterTennisSource, from_signal
from dygsched.errors import DataError


def library_graph(loader_class, data, name, **get):
    """What PyTorch Geometric Temporal's own loader gives for ``data`` (its JSON, read locally)."""

    class Local(loader_class):
        def _read_web_data(self):
            self._dataset = data

    build = get.pop("build", lambda cls: cls())
    return from_signal(build(Local).get_dataset(**get), name)


def assert_same_graph(ours, theirs):
    assert ours.num_snapshots == theirs.num_snapshots
    for a, b in zip(ours.snapshots, theirs.snapshots, strict=True):
        assert torch.equal(a.edge_index, b.edge_index) and torch.equal(a.edge_weight, b.edge_weight)
        assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)


@pytest.mark.parametrize("mode, nodes", [("encoded", None), ("raw", None), ("diagonal", 300), ("encoded", 500)])
def test_twitter_tennis_is_exactly_the_library_loaders(shared_data, mode, nodes):
    """Our transformation of the JSON against the library's, every snapshot, bit for bit."""
    pgt = pytest.importorskip("torch_geometric_temporal.dataset")
    path = shared_data / "twitter_tennis_rg17.json"
    graph = TwitterTennisSource(path=str(path), num_nodes=nodes, feature_mode=mode, target_offset=2).load()
    assert graph.num_snapshots == 120 and graph.num_nodes == (nodes or 1000)
    library_mode = None if mode == "raw" else mode
    theirs = library_graph(
        pgt.TwitterTennisDatasetLoader, json.loads(path.read_text()), "twitter_tennis",
        build=lambda cls: cls(N=nodes, feature_mode=library_mode, target_offset=2),
    )  # fmt: skip
    assert_same_graph(graph, theirs)


@pytest.mark.parametrize("lags", [1, 8, 14])
def test_england_covid_is_exactly_the_library_loaders(shared_data, lags):
    pgt = pytest.importorskip("torch_geometric_temporal.dataset")
    path = shared_data / "england_covid.json"
    graph = EnglandCovidSource(path=str(path), lags=lags).load()
    assert graph.num_nodes == 129 and graph.num_snapshots == 61 - lags and graph.num_features == lags
    assert_same_graph(graph, library_graph(pgt.EnglandCovidDatasetLoader, json.loads(path.read_text()), "england_covid", lags=lags))


def test_the_sources_need_no_pytorch_geometric_temporal(shared_data):
    """A run reads both datasets without the library (it needs compiled extensions to install)."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "sys.modules['torch_geometric_temporal'] = None\n"  # any import of it would now fail
        "from dygsched.data.pgt import EnglandCovidSource, TwitterTennisSource\n"
        f"print(TwitterTennisSource(path={str(shared_data / 'twitter_tennis_rg17.json')!r}).load().num_snapshots,"
        f" EnglandCovidSource(path={str(shared_data / 'england_covid.json')!r}).load().num_snapshots)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["120", "53"], done.stderr


def test_from_signal_accepts_a_static_graph_signal():
    import numpy as np

    StaticGraphTemporalSignal = pytest.importorskip("torch_geometric_temporal.signal").StaticGraphTemporalSignal

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
