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
def test_twitter_tennis_is_exactly_the_library_loaders(shipped_data, mode, nodes):
    """Our transformation of the JSON against the library's, every snapshot, bit for bit."""
    pgt = pytest.importorskip("torch_geometric_temporal.dataset")
    path = shipped_data / "twitter_tennis_rg17.json"
    graph = TwitterTennisSource(path=str(path), num_nodes=nodes, feature_mode=mode, target_offset=2).load()
    assert graph.num_snapshots == 120 and graph.num_nodes == (nodes or 1000)
    library_mode = None if mode == "raw" else mode
    theirs = library_graph(
        pgt.TwitterTennisDatasetLoader, json.loads(path.read_text()), "twitter_tennis",
        build=lambda cls: cls(N=nodes, feature_mode=library_mode, target_offset=2),
    )  # fmt: skip
    assert_same_graph(graph, theirs)


@pytest.mark.parametrize("lags", [1, 8, 14])
def test_england_covid_is_exactly_the_library_loaders(shipped_data, lags):
    pgt = pytest.importorskip("torch_geometric_temporal.dataset")
    path = shipped_data / "england_covid.json"
    graph = EnglandCovidSource(path=str(path), lags=lags).load()
    assert graph.num_nodes == 129 and graph.num_snapshots == 61 - lags and graph.num_features == lags
    assert_same_graph(graph, library_graph(pgt.EnglandCovidDatasetLoader, json.loads(path.read_text()), "england_covid", lags=lags))


def test_the_sources_need_no_pytorch_geometric_temporal(shipped_data):
    """A run reads both datasets without the library (it needs compiled extensions to install)."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "sys.modules['torch_geometric_temporal'] = None\n"  # any import of it would now fail
        "from dygsched.data.pgt import EnglandCovidSource, TwitterTennisSource\n"
        f"print(TwitterTennisSource(path={str(shipped_data / 'twitter_tennis_rg17.json')!r}).load().num_snapshots,"
        f" EnglandCovidSource(path={str(shipped_data / 'england_covid.json')!r}).load().num_snapshots)"
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


def test_missing_snapshot_key(tmp_path, shipped_data):
    data = json.loads((shipped_data / "twitter_tennis_rg17.json").read_text())
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


def series_file(layout, steps=12, nodes=5):
    """A small JSON in the layout of the library's file ``layout`` (values vary per node and step)."""
    values = [[float((t * 7 + n * 3) % 11) + 0.5 * n for n in range(nodes)] for t in range(steps)]
    edges = [[i, (i + 1) % nodes] for i in range(nodes)] + [[0, 2]]
    weights = [0.5 + i for i in range(len(edges))]
    if layout == "chickenpox":
        return {"edges": edges, "node_ids": {str(n): n for n in range(nodes)}, "FX": values}
    if layout == "pedalme":
        return {"edges": edges, "weights": weights, "X": values}
    stops = [100 + 2 * n for n in range(nodes)]
    return {
        "directed": True, "multigraph": False, "graph": {},
        "nodes": [
            {"bus_stop": stops[n], "id": n, "y": [v[n] for v in values], "X": {"y": [v[n] * 2 + 1 for v in values]}}
            for n in range(nodes)
        ],
        "links": [{"source": stops[a], "target": stops[b], "weight": w} for (a, b), w in zip(edges, weights)],
    }  # fmt: skip


@pytest.mark.parametrize("layout, loader", [("chickenpox", "ChickenpoxDatasetLoader"), ("pedalme", "PedalMeDatasetLoader"), ("montevideo_bus", "MontevideoBusDatasetLoader")])
@pytest.mark.parametrize("lags", [1, 4])
def test_series_are_exactly_the_library_loaders(tmp_path, layout, loader, lags):
    pgt = pytest.importorskip("torch_geometric_temporal.dataset")
    from dygsched.data.pgt import LaggedSeriesSource

    data = series_file(layout)
    path = tmp_path / "series.json"
    path.write_text(json.dumps(data))
    graph = LaggedSeriesSource(path=str(path), layout=layout, lags=lags).load()
    assert graph.num_snapshots == 12 - lags and graph.num_nodes == 5 and graph.num_features == lags
    assert_same_graph(graph, library_graph(getattr(pgt, loader), data, layout, lags=lags))


@pytest.mark.parametrize(
    "layout, change, message",
    [
        ("pedalme", lambda d: d.pop("X"), "misses key 'X'"),
        ("pedalme", lambda d: d.update(edges=[[0, 9]], weights=[1.0]), "edges refer to nodes outside 0..4"),
        ("chickenpox", lambda d: d.update(FX=[[1.0, 2.0], [3.0]]), "is malformed"),
        ("montevideo_bus", lambda d: d["links"].append({"source": 999, "target": 100, "weight": 1.0}), "misses key 999"),
    ],
)
def test_a_malformed_series_file_is_one_line(tmp_path, layout, change, message):
    from dygsched.data.pgt import LaggedSeriesSource

    data = series_file(layout)
    change(data)
    path = tmp_path / "series.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=message) as failure:
        LaggedSeriesSource(path=str(path), layout=layout, lags=2).load()
    assert "\n" not in str(failure.value)
