"""Malformed and adversarial input, generated: every data source either returns a valid graph that
trains (a finite loss and gradient) or raises ``DataError`` with one line, never anything else."""

from __future__ import annotations

import importlib
import json
import math

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch_geometric.data import Data

from dygsched.data.edgelist import EdgeListSource
from dygsched.data.groups import sliding_groups
from dygsched.data.pgt import EnglandCovidSource, TwitterTennisSource, from_signal
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.engine.objective import GroupObjective
from dygsched.errors import DataError
from dygsched.models.tgcn import TGCN
from tests.pgt_references import SOURCES, library_case, library_outputs

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def loads_or_refuses(load):
    """The graph ``load()`` returns, or ``None`` when it refused with a one-line ``DataError``."""
    try:
        return load()
    except DataError as exc:
        assert "\n" not in str(exc) and str(exc)
        return None


def trains(graph: TemporalGraph) -> None:
    """One forward and backward of a small model over a group ending at every snapshot: finite."""
    torch.manual_seed(0)
    objective = GroupObjective(TGCN(graph.num_features, graph.out_channels, hidden_channels=4, num_layers=1), graph.task)
    for group in sliding_groups(graph.num_snapshots, min(2, graph.num_snapshots)):
        objective.zero_grad()
        loss = objective(group.snapshots(graph))
        loss.backward()
        assert torch.isfinite(loss)
        assert all(torch.isfinite(p.grad).all() for p in objective.parameters() if p.grad is not None)


# ---- edge lists ---------------------------------------------------------------------------------

ids = st.one_of(
    st.integers(-3, 40),
    st.integers(2**40, 2**62),  # huge ids: compacted
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from(["x", "", "1.5", "True"]),
)
times = st.one_of(
    st.integers(-5, 50), st.floats(-1e308, 1e308), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["t", ""])
)
weights = st.one_of(st.floats(-2, 5), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["w"]))


@st.composite
def edge_tables(draw):
    rows = draw(st.integers(0, 12))
    columns = {"src": draw(st.lists(ids, min_size=rows, max_size=rows)), "dst": draw(st.lists(ids, min_size=rows, max_size=rows))}
    columns["t"] = draw(st.lists(times, min_size=rows, max_size=rows))
    columns["w"] = draw(st.lists(weights, min_size=rows, max_size=rows))
    dropped = draw(st.lists(st.sampled_from(["src", "dst", "t", "w"]), max_size=1))
    return pd.DataFrame({k: v for k, v in columns.items() if k not in dropped})


@given(table=edge_tables(), num_snapshots=st.integers(-1, 6), weighted=st.booleans(), directed=st.booleans())
@SETTINGS
def test_edge_list_fuzz(tmp_path, table, num_snapshots, weighted, directed):
    path = tmp_path / "edges.csv"
    table.to_csv(path, index=False)
    source = EdgeListSource(path=str(path), num_snapshots=num_snapshots, weight_col="w" if weighted else None, directed=directed)
    graph = loads_or_refuses(source.load)
    if graph is not None:
        assert graph.num_snapshots == int(num_snapshots) - 1
        trains(graph)


@st.composite
def valid_edges(draw):
    count = draw(st.integers(2, 25))
    src = draw(st.lists(st.integers(0, 6), min_size=count, max_size=count))
    dst = draw(st.lists(st.integers(0, 6), min_size=count, max_size=count))  # self-loops and duplicates included
    t = draw(st.lists(st.integers(0, 9), min_size=count, max_size=count).filter(lambda v: max(v) > min(v)))
    return pd.DataFrame({"src": src, "dst": dst, "t": t})


@given(table=valid_edges(), seed=st.integers(0, 2**16))
@SETTINGS
def test_row_order_duplicates_and_self_loops(tmp_path, table, seed):
    """Rows in any order give the same graph; a repeated edge is one edge weighted by its count;
    self-loops stay edges; every snapshot trains, empty ones (gaps in time) included."""
    first, shuffled = tmp_path / "a.csv", tmp_path / "b.csv"
    table.to_csv(first, index=False)
    table.sample(frac=1.0, random_state=seed).to_csv(shuffled, index=False)
    a = EdgeListSource(path=str(first), num_snapshots=None, snapshot_duration=1.0, num_nodes=7).load()
    b = EdgeListSource(path=str(shuffled), num_snapshots=None, snapshot_duration=1.0, num_nodes=7).load()
    assert a.num_snapshots == int(table.t.max() - table.t.min())
    for t, (sa, sb) in enumerate(zip(a.snapshots, b.snapshots)):
        assert torch.equal(sa.edge_index, sb.edge_index) and torch.equal(sa.edge_weight, sb.edge_weight)
        rows = table[table.t - table.t.min() == t]
        counts = rows.groupby(["src", "dst"]).size()
        got = {tuple(e): w for e, w in zip(sa.edge_index.T.tolist(), sa.edge_weight.tolist())}
        assert got == {k: float(v) for k, v in counts.items()}
        assert sa.num_edges == 0 or sa.node_mask.any()
        assert not sa.node_mask.any() or sa.num_edges > 0
    trains(a)


@pytest.mark.parametrize(
    "text, kwargs, message",
    [
        ("src,dst,t\n0,1,0\n1,2,1.7e308\n3,1,-1.7e308\n", {}, "too wide"),
        ("src,dst,t\n0,1,0\n1,2,1e12\n", {"num_snapshots": None, "snapshot_duration": 1.0}, "at most 100,000"),
        ("src,dst,t\n0,1,0\n1,2,5\n", {"num_snapshots": 10**9}, "num_snapshots must be in"),
        ("src,dst,t\n0,1,0\n1e17,2,5\n", {}, "too large"),
        ("src,dst,t\ntrue,false,0\nfalse,true,5\n", {}, "must be numeric"),
        ("src,dst,t,w\n0,1,0,-1\n1,2,5,1\n", {"weight_col": "w"}, "non-negative"),
        ("src,dst,t,w\n0,1,0,inf\n1,2,5,1\n", {"weight_col": "w"}, "non-negative"),
        ("src,dst,t\n0,1,0\n1,2,5\n", {"num_nodes": 10**12}, "memory"),
    ],
)
def test_edge_list_limits(tmp_path, text, kwargs, message):
    path = tmp_path / "edges.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        EdgeListSource(path=str(path), **kwargs).load()


def test_gap_in_time_is_an_empty_snapshot(tmp_path):
    path = tmp_path / "edges.csv"
    path.write_text("src,dst,t\n0,1,0\n1,2,1\n2,0,4\n0,2,5\n")
    graph = EdgeListSource(path=str(path), num_snapshots=None, snapshot_duration=1.0).load()
    assert [s.num_edges for s in graph.snapshots] == [1, 1, 0, 0, 1]
    assert not graph.snapshots[2].node_mask.any()
    trains(graph)


# ---- PyTorch Geometric Temporal JSON ------------------------------------------------------------


def tennis_json(periods: int = 4, nodes: int = 5) -> dict:
    rng = np.random.default_rng(0)
    data: dict = {"time_periods": periods}
    for t in range(periods):
        edges = [[int(a), int(b)] for a, b in rng.integers(0, nodes, (6, 2))]
        data[str(t)] = {
            "index": t,
            "edges": edges,
            "weights": [1] * len(edges),
            "y": [int(v) for v in rng.integers(0, 5, nodes)],
            "X": [[int(rng.integers(0, 9)), float(rng.random())] for _ in range(nodes)],
        }
    return data


def covid_json(periods: int = 5, nodes: int = 4) -> dict:
    rng = np.random.default_rng(1)
    edges = {str(t): [[int(a), int(b)] for a, b in rng.integers(0, nodes, (5, 2))] for t in range(periods)}
    return {
        "time_periods": periods,
        "edge_mapping": {"edge_index": edges, "edge_weight": {t: [1.0] * len(e) for t, e in edges.items()}},
        "y": [[float(v) for v in rng.random(nodes)] for _ in range(periods)],
    }


junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.lists(st.integers(-3, 9), max_size=3),
    st.lists(st.lists(st.integers(-3, 9), max_size=3), max_size=3),
    st.just({}),
)


def paths_of(data, prefix=()):
    """Every (key path) in nested dicts and lists, for picking what to damage."""
    yield prefix
    if isinstance(data, dict):
        for key, value in data.items():
            yield from paths_of(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data[:3]):
            yield from paths_of(value, (*prefix, index))


@st.composite
def damaged(draw, original):
    data = json.loads(json.dumps(original))
    for _ in range(draw(st.integers(1, 3))):
        targets = [p for p in paths_of(data) if p]
        if not targets:
            break
        where = draw(st.sampled_from(targets))
        parent = data
        for key in where[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[where[-1]]  # a missing key (a missing snapshot, a missing field)
        else:
            parent[where[-1]] = draw(junk)  # a value of the wrong type or range
    return data


@given(data=damaged(tennis_json()))
@SETTINGS
def test_twitter_tennis_json_fuzz(tmp_path, data):
    path = tmp_path / "tennis.json"
    path.write_text(json.dumps(data))
    graph = loads_or_refuses(TwitterTennisSource(path=str(path)).load)
    if graph is not None:
        trains(graph)


@given(data=damaged(covid_json()))
@SETTINGS
def test_england_covid_json_fuzz(tmp_path, data):
    path = tmp_path / "covid.json"
    path.write_text(json.dumps(data))
    graph = loads_or_refuses(EnglandCovidSource(path=str(path), lags=2).load)
    if graph is not None:
        trains(graph)


@pytest.mark.parametrize("periods", [None, "abc", 0, -2, 1.5, True, [3]])
def test_time_periods_must_be_a_positive_integer(tmp_path, periods):
    data = tennis_json()
    data["time_periods"] = periods
    path = tmp_path / "tennis.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match="time_periods"):
        TwitterTennisSource(path=str(path)).load()


def test_a_snapshot_without_edges_is_kept(tmp_path):
    data = tennis_json()
    data["2"]["edges"], data["2"]["weights"] = [], []
    path = tmp_path / "tennis.json"
    path.write_text(json.dumps(data))
    graph = TwitterTennisSource(path=str(path)).load()
    assert graph.snapshots[2].num_edges == 0 and graph.snapshots[2].edge_index.shape == (2, 0)
    trains(graph)


# ---- snapshots saved with torch.save -------------------------------------------------------------


@st.composite
def saved_snapshots(draw):
    """A list of PyG ``Data`` as a careless script might save it: node counts, feature widths,
    id ranges, shapes and types of every field drawn, values sometimes NaN, fields sometimes absent."""
    from torch_geometric.data import Data

    snapshots = []
    for _ in range(draw(st.integers(0, 4))):
        n = draw(st.integers(0, 5))
        fields = {}
        x = torch.tensor(draw(st.lists(st.floats(-3, 3), min_size=n * 2, max_size=n * 2))).reshape(n, 2)
        fields["x"] = draw(st.sampled_from([x, x, x, x[:, :1], x.long(), x.reshape(-1), None, torch.full_like(x, math.nan)]))
        count = draw(st.integers(0, 6)) if n else 0
        ids = torch.tensor(
            draw(st.lists(st.integers(0, max(n - 1, 0)), min_size=2 * count, max_size=2 * count)), dtype=torch.long
        )
        edges = ids.reshape(2, count)
        outside = edges.clone()
        if count:
            outside[draw(st.integers(0, 1)), draw(st.integers(0, count - 1))] = draw(st.sampled_from([-1, n]))
        fields["edge_index"] = draw(
            st.sampled_from([edges, edges, edges, outside, ids, edges.float(), edges[:1], torch.empty(2, 0)])
        )
        weights = torch.tensor(draw(st.lists(st.one_of(st.floats(-1, 3), st.just(math.nan)), min_size=count, max_size=count)))
        fields[draw(st.sampled_from(["edge_weight", "edge_attr"]))] = draw(
            st.sampled_from([None, weights, weights[:1], weights.reshape(-1, 1)])
        )
        y = torch.tensor(draw(st.lists(st.floats(-2, 2), min_size=n, max_size=n)))
        fields["y"] = draw(st.sampled_from([y, y, y.reshape(-1, 1), torch.cat([y, y]), y.long(), None]))
        snapshots.append(Data(**{k: v for k, v in fields.items() if v is not None}))
    return snapshots


@given(snapshots=saved_snapshots())
@SETTINGS
def test_saved_snapshots_fuzz(tmp_path, snapshots):
    from dygsched.data.snapshot_formats import SnapshotFileSource

    torch.save(snapshots, tmp_path / "snapshots.pt")
    graph = loads_or_refuses(SnapshotFileSource(str(tmp_path / "snapshots.pt")).load)
    if graph is not None:
        assert graph.num_snapshots == len(snapshots)
        trains(graph)


# ---- any source: the graph itself ---------------------------------------------------------------

bad_values = st.sampled_from([math.nan, math.inf, -math.inf])


@given(
    feature=st.one_of(st.none(), bad_values),
    target=st.one_of(st.none(), bad_values),
    weight=st.one_of(st.none(), bad_values, st.just(-1.0)),
    node_id=st.one_of(st.none(), st.sampled_from([-1, 5, 2**40])),
    classes=st.one_of(st.none(), st.sampled_from([-1, 3, 7])),
)
@SETTINGS
def test_temporal_graph_refuses_what_would_break_training(feature, target, weight, node_id, classes):
    def snapshot() -> Snapshot:
        x = torch.ones(5, 2)
        edge_index = torch.tensor([[0, 1, 2], [1, 2, 3]])
        w = torch.ones(3)
        y = torch.zeros(5, dtype=torch.long) if classes is not None else torch.zeros(5)
        return Snapshot(edge_index, w, x, y, torch.ones(5, dtype=torch.bool))

    snaps = [snapshot(), snapshot()]
    last = snaps[-1]
    if feature is not None:
        last.x[1, 0] = feature
    if target is not None and classes is None:
        last.y[2] = target
    if weight is not None:
        last.edge_weight[0] = weight
    if node_id is not None:
        last.edge_index[1, 2] = node_id
    if classes is not None:
        last.y[0] = classes
    task = Task.CLASSIFICATION if classes is not None else Task.REGRESSION
    broken = (
        any(v is not None for v in (feature, weight, node_id)) or (target is not None and classes is None) or classes in (-1, 7)
    )
    graph = loads_or_refuses(lambda: TemporalGraph("g", tuple(snaps), task, num_classes=4 if classes is not None else 0))
    assert (graph is None) == broken
    if graph is not None:
        trains(graph)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda s: Snapshot(s.edge_index.float(), s.edge_weight, s.x, s.y, s.node_mask), "integer node ids"),
        (lambda s: Snapshot(s.edge_index, s.edge_weight, s.x.long(), s.y, s.node_mask), "floating point"),
        (lambda s: Snapshot(s.edge_index, s.edge_weight, s.x, s.y, s.node_mask.long()), "boolean"),
        (lambda s: Snapshot(s.edge_index, s.edge_weight[:1], s.x, s.y, s.node_mask), "weights for"),
        (lambda s: Snapshot(s.edge_index, s.edge_weight, s.x[:3], s.y, s.node_mask), "shape"),
    ],
)
def test_temporal_graph_types(change, message):
    good = Snapshot(
        torch.tensor([[0, 1], [1, 2]]), torch.ones(2), torch.ones(4, 2), torch.zeros(4), torch.ones(4, dtype=torch.bool)
    )
    with pytest.raises(DataError, match=message):
        TemporalGraph("g", (good, change(good)), Task.REGRESSION)


def tgt_signal_with_nan_features():
    """The library's ``StaticGraphTemporalSignal`` whose second snapshot has a NaN feature, iterated."""
    StaticGraphTemporalSignal = importlib.import_module("torch_geometric_temporal.signal").StaticGraphTemporalSignal

    features = [np.ones((3, 2))] * 3
    features[1] = np.array([[1.0, np.nan], [1, 1], [1, 1]])
    signal = StaticGraphTemporalSignal(np.array([[0, 1], [1, 2]]), np.ones(2), features, [np.arange(3.0)] * 3)
    return {"iterated": [dict(data.to_dict()) for data in signal]}


NAN_SIGNAL = library_case("static_graph_signal-nan-features", tgt_signal_with_nan_features)


@pytest.mark.parametrize("source", SOURCES)
def test_signal_with_nan_features_is_refused(source):
    snapshots = library_outputs(NAN_SIGNAL, source)["iterated"]
    with pytest.raises(DataError, match="snapshot 1 has NaN or infinite features"):
        from_signal([Data(**snapshot) for snapshot in snapshots], "nan")
