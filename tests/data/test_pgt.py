"""Our readers of PyTorch Geometric Temporal's JSON files against the library's own loaders,
snapshot by snapshot, bit for bit; and its signal objects through ``from_signal``.

The library's side comes from the references recorded from it (``tests/pgt_references.py``:
each snapshot's edges, weights, features and targets as digests of their bytes) or, under
``pytest -m pgt``, from the library itself, checked against the references too.
"""

import hashlib
import importlib
import json

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from dygsched.data.catalog import SHIPPED_DIR
from dygsched.data.pgt import EnglandCovidSource, LaggedSeriesSource, TwitterTennisSource, from_signal
from dygsched.errors import DataError
from tests.pgt_references import SOURCES, assert_graph_matches_digests, graph_digests, library_case, library_outputs


def tgt_datasets():
    return importlib.import_module("torch_geometric_temporal.dataset")


def library_graph(loader_class, data, name, **get):
    """What PyTorch Geometric Temporal's own loader gives for ``data`` (its JSON, read locally)."""

    class Local(loader_class):
        def _read_web_data(self):
            self._dataset = data

    build = get.pop("build", lambda cls: cls())
    return from_signal(build(Local).get_dataset(**get), name)


def json_digest(data) -> str:
    """The SHA-256 of a JSON value as the library's loader reads it (to tell a changed input)."""
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def loader_outputs(data, graph) -> dict:
    return {"input": json_digest(data), "snapshots": graph_digests(graph)}


def assert_same_as_library(graph, data, theirs, case):
    assert json_digest(data) == theirs["input"], f"{case}: the input is not the one recorded: re-record the references"
    assert_graph_matches_digests(graph, theirs["snapshots"], case)


def shipped_json(name):
    return json.loads((SHIPPED_DIR / name).read_text())


TENNIS = [("encoded", None), ("raw", None), ("diagonal", 300), ("encoded", 500)]


def tgt_twitter_tennis(mode, nodes):
    data = shipped_json("twitter_tennis_rg17.json")
    library_mode = None if mode == "raw" else mode
    graph = library_graph(
        tgt_datasets().TwitterTennisDatasetLoader,
        data,
        "twitter_tennis",
        build=lambda cls: cls(N=nodes, feature_mode=library_mode, target_offset=2),
    )
    return loader_outputs(data, graph)


TENNIS_CASES = {
    (mode, nodes): library_case(f"twitter_tennis-{mode}-{nodes or 'all'}-nodes", lambda m=mode, n=nodes: tgt_twitter_tennis(m, n))
    for mode, nodes in TENNIS
}


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("mode, nodes", TENNIS)
def test_twitter_tennis_is_exactly_the_library_loaders(shipped_data, mode, nodes, source):
    """Our transformation of the JSON against the library's, every snapshot, bit for bit."""
    theirs = library_outputs(TENNIS_CASES[mode, nodes], source)
    path = shipped_data / "twitter_tennis_rg17.json"
    graph = TwitterTennisSource(path=str(path), num_nodes=nodes, feature_mode=mode, target_offset=2).load()
    assert graph.num_snapshots == 120 and graph.num_nodes == (nodes or 1000)
    assert_same_as_library(graph, json.loads(path.read_text()), theirs, TENNIS_CASES[mode, nodes])


def tgt_england_covid(lags):
    data = shipped_json("england_covid.json")
    return loader_outputs(data, library_graph(tgt_datasets().EnglandCovidDatasetLoader, data, "england_covid", lags=lags))


COVID_CASES = {lags: library_case(f"england_covid-{lags}-lags", lambda n=lags: tgt_england_covid(n)) for lags in (1, 8, 14)}


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("lags", [1, 8, 14])
def test_england_covid_is_exactly_the_library_loaders(shipped_data, lags, source):
    theirs = library_outputs(COVID_CASES[lags], source)
    path = shipped_data / "england_covid.json"
    graph = EnglandCovidSource(path=str(path), lags=lags).load()
    assert graph.num_nodes == 129 and graph.num_snapshots == 61 - lags and graph.num_features == lags
    assert_same_as_library(graph, json.loads(path.read_text()), theirs, COVID_CASES[lags])


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


def iterated(signal) -> list[dict[str, torch.Tensor]]:
    """What a signal's iterator gives: one ``Data`` per snapshot, as its attributes."""
    return [dict(data.to_dict()) for data in signal]


def as_data(snapshots: list[dict[str, torch.Tensor]]) -> list[Data]:
    return [Data(**snapshot) for snapshot in snapshots]


def tgt_static_signal():
    """The library's ``StaticGraphTemporalSignal`` over 3 nodes, 2 edges and 4 steps, iterated."""
    StaticGraphTemporalSignal = importlib.import_module("torch_geometric_temporal.signal").StaticGraphTemporalSignal
    signal = StaticGraphTemporalSignal(np.array([[0, 1], [1, 2]]), np.ones(2), [np.ones((3, 2))] * 4, [np.arange(3.0)] * 4)
    return {"iterated": iterated(signal)}


STATIC_SIGNAL = library_case("static_graph_signal", tgt_static_signal)


@pytest.mark.parametrize("source", SOURCES)
def test_from_signal_accepts_a_static_graph_signal(source):
    graph = from_signal(as_data(library_outputs(STATIC_SIGNAL, source)["iterated"]), "static")
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
        "directed": True,
        "multigraph": False,
        "graph": {},
        "nodes": [
            {"bus_stop": stops[n], "id": n, "y": [v[n] for v in values], "X": {"y": [v[n] * 2 + 1 for v in values]}}
            for n in range(nodes)
        ],
        "links": [{"source": stops[a], "target": stops[b], "weight": w} for (a, b), w in zip(edges, weights)],
    }


SERIES = {
    "chickenpox": "ChickenpoxDatasetLoader",
    "pedalme": "PedalMeDatasetLoader",
    "montevideo_bus": "MontevideoBusDatasetLoader",
}


def tgt_series(layout, lags):
    data = series_file(layout)
    return loader_outputs(data, library_graph(getattr(tgt_datasets(), SERIES[layout]), data, layout, lags=lags))


SERIES_CASES = {
    (layout, lags): library_case(f"{layout}-{lags}-lags", lambda a=layout, n=lags: tgt_series(a, n))
    for layout in SERIES
    for lags in (1, 4)
}


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("layout", list(SERIES))
@pytest.mark.parametrize("lags", [1, 4])
def test_series_are_exactly_the_library_loaders(tmp_path, layout, lags, source):
    theirs = library_outputs(SERIES_CASES[layout, lags], source)
    data = series_file(layout)
    path = tmp_path / "series.json"
    path.write_text(json.dumps(data))
    graph = LaggedSeriesSource(path=str(path), layout=layout, lags=lags).load()
    assert graph.num_snapshots == 12 - lags and graph.num_nodes == 5 and graph.num_features == lags
    assert_same_as_library(graph, data, theirs, SERIES_CASES[layout, lags])


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
    data = series_file(layout)
    change(data)
    path = tmp_path / "series.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=message) as failure:
        LaggedSeriesSource(path=str(path), layout=layout, lags=2).load()
    assert "\n" not in str(failure.value)
