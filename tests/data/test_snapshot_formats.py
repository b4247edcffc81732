"""Snapshots saved with ``torch.save`` (a list of PyG ``Data``, PyTorch Geometric Temporal's
signals), written here and read back exactly; files holding anything else refused in one line."""

from __future__ import annotations

import importlib
import io
import os
import sys
import types

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from dygsched.data.snapshot_formats import SnapshotFileSource
from dygsched.data.temporal_graph import Task, TemporalGraph
from dygsched.errors import DataError
from tests.pgt_references import SOURCES, assert_same_outputs, library_case, library_outputs

NODES, FEATURES, STEPS = 6, 3, 4
SIGNALS = "torch_geometric_temporal.signal"


def arrays(seed: int = 0) -> list[dict[str, np.ndarray]]:
    """Per snapshot: edges (a different set each time, one snapshot without any), weights, features, targets."""
    rng = np.random.default_rng(seed)
    snapshots = []
    for t in range(STEPS):
        count = 0 if t == 2 else 5 + t
        snapshots.append(
            {
                "edge_index": rng.integers(0, NODES, size=(2, count)),
                "edge_weight": rng.uniform(0.1, 2.0, size=count).astype(np.float32),
                "x": rng.normal(size=(NODES, FEATURES)).astype(np.float32),
                "y": rng.normal(size=NODES).astype(np.float32),
            }
        )
    return snapshots


def as_data(snapshot: dict[str, np.ndarray], **renamed) -> Data:
    values = {renamed.get(key, key): torch.from_numpy(value) for key, value in snapshot.items()}
    return Data(**values)


def load(path, **options) -> TemporalGraph:
    return SnapshotFileSource(str(path), **options).load()


def assert_same(graph: TemporalGraph, expected: list[dict[str, np.ndarray]]) -> None:
    assert graph.num_snapshots == len(expected) and graph.task is Task.REGRESSION
    for snapshot, want in zip(graph.snapshots, expected):
        assert torch.equal(snapshot.edge_index, torch.from_numpy(want["edge_index"]).long())
        assert torch.equal(snapshot.edge_weight, torch.from_numpy(want["edge_weight"]))
        assert torch.equal(snapshot.x, torch.from_numpy(want["x"]))
        assert torch.equal(snapshot.y, torch.from_numpy(want["y"]))
        assert snapshot.node_mask.all()


@pytest.mark.parametrize("container", [list, tuple])
def test_a_list_of_data_snapshots_reads_back_exactly(tmp_path, container):
    expected = arrays()
    torch.save(container(as_data(s) for s in expected), tmp_path / "snapshots.pt")
    assert_same(load(tmp_path / "snapshots.pt"), expected)


def test_the_weight_is_edge_weight_else_a_one_column_edge_attr_else_one(tmp_path, caplog):
    expected = arrays()
    one_column = [as_data({**s, "edge_weight": s["edge_weight"][:, None]}, edge_weight="edge_attr") for s in expected]
    torch.save(one_column, tmp_path / "attr.pt")
    assert_same(load(tmp_path / "attr.pt"), expected)

    wide = [
        Data(
            edge_index=torch.from_numpy(s["edge_index"]),
            edge_attr=torch.ones(s["edge_index"].shape[1], 2),
            x=torch.from_numpy(s["x"]),
            y=torch.from_numpy(s["y"]),
        )
        for s in expected
    ]
    torch.save(wide, tmp_path / "wide.pt")
    with caplog.at_level("INFO", logger="dygsched"):
        graph = load(tmp_path / "wide.pt")
    assert "not a weight" in caplog.text
    assert all(torch.equal(s.edge_weight, torch.ones(s.num_edges)) for s in graph.snapshots)


def test_snapshots_with_fewer_nodes_have_the_missing_ones_masked(tmp_path):
    small = Data(edge_index=torch.tensor([[0, 1], [1, 0]]), x=torch.ones(2, FEATURES), y=torch.tensor([1.0, 2.0]))
    large = Data(edge_index=torch.tensor([[3], [4]]), x=torch.full((5, FEATURES), 2.0), y=torch.arange(5.0))
    torch.save([large, small, large], tmp_path / "growing.pt")
    graph = load(tmp_path / "growing.pt")
    assert graph.num_nodes == 5
    middle = graph.snapshots[1]
    assert middle.node_mask.tolist() == [True, True, False, False, False]
    assert middle.x[2:].eq(0).all() and middle.y.tolist() == [1.0, 2.0, 0.0, 0.0, 0.0]
    assert torch.equal(middle.edge_index, small.edge_index) and graph.snapshots[0].node_mask.all()


def test_a_snapshot_without_edges_may_be_written_as_a_float_empty_tensor(tmp_path):
    empty = Data(edge_index=torch.empty(2, 0), x=torch.ones(3, 2), y=torch.zeros(3))  # torch.empty is float
    torch.save([empty, Data(edge_index=torch.tensor([[0], [2]]), x=torch.ones(3, 2), y=torch.zeros(3))], tmp_path / "empty.pt")
    first = load(tmp_path / "empty.pt").snapshots[0]
    assert first.edge_index.dtype == torch.long and first.num_edges == 0 and first.edge_weight.numel() == 0


def test_integer_targets_are_classes_when_asked(tmp_path):
    snapshots = [Data(edge_index=torch.tensor([[0], [1]]), x=torch.ones(3, 2), y=torch.tensor([0, 2, 1])) for _ in range(3)]
    torch.save(snapshots, tmp_path / "classes.pt")
    graph = load(tmp_path / "classes.pt", task="classification")
    assert graph.task is Task.CLASSIFICATION and graph.num_classes == 3
    assert graph.snapshots[0].y.dtype == torch.long
    assert load(tmp_path / "classes.pt").snapshots[0].y.tolist() == [0.0, 2.0, 1.0]  # regression: numbers


# ---- PyTorch Geometric Temporal's signals --------------------------------------------------------


def signal_arguments(kind: str, expected: list[dict[str, np.ndarray]]) -> tuple[list, list, list, list]:
    """The library's constructor arguments for ``kind``, and the snapshots its iterator gives."""
    edges, weights = [s["edge_index"] for s in expected], [s["edge_weight"] for s in expected]
    features, targets = [s["x"] for s in expected], [s["y"] for s in expected]
    if kind == "StaticGraphTemporalSignal":
        return edges[0], weights[0], features, targets
    if kind == "DynamicGraphStaticSignal":
        return edges, weights, features[0], targets
    return edges, weights, features, targets


def as_iterated(kind: str, expected: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
    if kind == "StaticGraphTemporalSignal":
        return [{**s, "edge_index": expected[0]["edge_index"], "edge_weight": expected[0]["edge_weight"]} for s in expected]
    if kind == "DynamicGraphStaticSignal":
        return [{**s, "x": expected[0]["x"]} for s in expected]
    return expected


KINDS = ["DynamicGraphTemporalSignal", "StaticGraphTemporalSignal", "DynamicGraphStaticSignal"]


def tgt_saved_signal(kind: str) -> dict:
    """What the library's ``torch.save(signal)`` writes for the ``kind`` signal over ``arrays()``
    (the file's bytes), and the snapshots its iterator gives."""
    signal = getattr(importlib.import_module(SIGNALS), kind)(*signal_arguments(kind, arrays()))
    buffer = io.BytesIO()
    torch.save(signal, buffer)
    return {
        "file": torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8),
        "iterated": [dict(d.to_dict()) for d in signal],
    }


def same_saved_signal(live: dict, recorded: dict, where: str) -> None:
    """The recorded file holds what the live library saves: the same class and attributes once
    unpickled (not the same bytes: torch's archive layout may change between versions), and the
    iterator gives the same snapshots."""
    assert_same_outputs(live["iterated"], recorded["iterated"], f"{where}['iterated']")
    a, b = (torch.load(io.BytesIO(bytes(saved["file"].numpy())), weights_only=False) for saved in (live, recorded))
    assert type(a) is type(b), (
        f"{where}: the recorded file holds a {type(b).__qualname__}, the library saves a {type(a).__qualname__}"
    )
    assert vars(a).keys() == vars(b).keys(), (
        f"{where}: the recorded signal's attributes are {sorted(vars(b))}, not {sorted(vars(a))}"
    )
    for key, value in vars(a).items():
        assert same_value(value, vars(b)[key]), (
            f"{where}: the recorded signal's {key} is not the library's: re-record the references"
        )


def same_value(a, b) -> bool:
    """Equal attributes of a signal: arrays of one dtype and equal values, lists of them, or plain values."""
    if isinstance(a, list | tuple):
        return isinstance(b, list | tuple) and len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    return type(a) is type(b) and a == b


SAVED_SIGNALS = {kind: library_case(f"saved-{kind}", lambda k=kind: tgt_saved_signal(k), same_saved_signal) for kind in KINDS}


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("kind", KINDS)
def test_the_librarys_signals_read_back_as_its_iterator_gives_them(tmp_path, kind, source):
    from dygsched.data.pgt import from_signal

    theirs = library_outputs(SAVED_SIGNALS[kind], source)
    expected = arrays()
    (tmp_path / "signal.pt").write_bytes(bytes(theirs["file"].numpy()))  # the library's own torch.save
    graph = load(tmp_path / "signal.pt")
    assert_same(graph, as_iterated(kind, expected))
    library = from_signal([Data(**snapshot) for snapshot in theirs["iterated"]], "library")  # the iterator's Data
    for ours, snapshot in zip(graph.snapshots, library.snapshots, strict=True):
        assert torch.equal(ours.edge_index, snapshot.edge_index) and torch.equal(ours.edge_weight, snapshot.edge_weight)
        assert torch.equal(ours.x, snapshot.x) and torch.equal(ours.y, snapshot.y)


@pytest.fixture
def without_pgt(monkeypatch):
    """A process where ``import torch_geometric_temporal`` fails, and a ``save(kind, ...)`` that
    writes what the library's ``torch.save(signal)`` writes: its module path, its class name, its
    attributes."""
    for name in [m for m in sys.modules if m.startswith("torch_geometric_temporal")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "torch_geometric_temporal", None)

    def save(kind: str, path, *arguments) -> None:
        module_name = f"{SIGNALS}.{''.join('_' + c.lower() if c.isupper() else c for c in kind).lstrip('_')}"
        module = types.ModuleType(module_name)
        cls = type(kind, (), {"__module__": module_name})
        module.__dict__[kind] = cls
        names = {
            "DynamicGraphTemporalSignal": ("edge_indices", "edge_weights", "features", "targets"),
            "StaticGraphTemporalSignal": ("edge_index", "edge_weight", "features", "targets"),
            "DynamicGraphStaticSignal": ("edge_indices", "edge_weights", "feature", "targets"),
        }[kind]
        signal = cls()
        signal.__dict__.update(zip(names, arguments), additional_feature_keys=[], snapshot_count=len(arguments[3]))
        with pytest.MonkeyPatch.context() as patch:  # the library's modules, for pickle to find the class by name
            for name in ("torch_geometric_temporal", SIGNALS):
                patch.setitem(sys.modules, name, types.ModuleType(name))
            patch.setitem(sys.modules, module_name, module)
            torch.save(signal, path)

    return save


@pytest.mark.parametrize("kind", KINDS)
def test_signals_read_without_pytorch_geometric_temporal(tmp_path, without_pgt, kind):
    expected = arrays(seed=1)
    without_pgt(kind, tmp_path / "signal.pt", *signal_arguments(kind, expected))
    with pytest.raises(ImportError):
        import torch_geometric_temporal  # noqa: F401
    assert_same(load(tmp_path / "signal.pt"), as_iterated(kind, expected))


# ---- bad input ------------------------------------------------------------------------------------


def edges(*pairs) -> torch.Tensor:
    return torch.tensor(pairs).T.reshape(2, -1)


def snapshot(edge_index=None, x=None, y=None, **extra) -> Data:
    return Data(
        edge_index=edges((0, 1)) if edge_index is None else edge_index,
        x=torch.ones(3, 2) if x is None else x,
        y=torch.zeros(3) if y is None else y,
        **extra,
    )


BAD = {
    "a dict": (
        {"weights": torch.zeros(2), "epoch": 3},
        "holds a dict with keys 'weights', 'epoch', not a list of torch_geometric Data",
    ),
    "a tensor": (torch.zeros(4, 2), "holds a Tensor of shape [4, 2]"),
    "strings": (["a", "b", "c"], "holds a list of 3 str"),
    "a mixture": ([snapshot(), torch.zeros(1)], "holds a list of 1 Data and 1 Tensor"),
    "no snapshots": ([], "holds an empty list"),
    "one Data": (snapshot(), "holds a Data, not a list"),
    "events": (None, "holds a TemporalData (an event stream: dataset=stream reads it)"),
    "edge_index of one row": ([snapshot(edge_index=torch.tensor([0, 1, 2]))], "snapshot 0 has edge_index of shape [3]"),
    "float edge_index": (
        [snapshot(), snapshot(edge_index=torch.tensor([[0.0], [1.0]]))],
        "snapshot 1 has edge_index of shape [2, 1] and type torch.float32",
    ),
    "an edge beyond num_nodes": (
        [snapshot(), snapshot(edge_index=edges((0, 3)))],
        "snapshot 1 has edges between nodes 0 .. 3, outside its 3 nodes",
    ),
    "a negative id": ([snapshot(edge_index=edges((-1, 0)))], "outside its 3 nodes"),
    "feature widths differ": ([snapshot(), snapshot(x=torch.ones(3, 5))], "snapshot 1 has 5 features per node, snapshot 0 has 2"),
    "no features": ([Data(edge_index=edges((0, 1)), y=torch.zeros(3), num_nodes=3)], "snapshot 0 has no x"),
    "no targets": ([Data(edge_index=edges((0, 1)), x=torch.ones(3, 2))], "snapshot 0 has no y"),
    "targets for other nodes": ([snapshot(y=torch.zeros(4))], "targets y of shape [4] for 3 nodes"),
    "complex targets": ([snapshot(y=torch.zeros(3, dtype=torch.complex64))], "targets y of type torch.complex64"),
    "text features": ([snapshot(x="abc")], "snapshot 0: x is a str, not an array of numbers"),
    "weights for other edges": ([snapshot(edge_weight=torch.ones(2))], "edge_weight of shape [2] for 1 edges"),
    "NaN features": ([snapshot(x=torch.full((3, 2), float("nan")))], "NaN or infinite features"),
    "negative weights": ([snapshot(edge_weight=torch.tensor([-1.0]))], "edge weights that are not finite non-negative"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_files_are_refused_in_one_line(tmp_path, case):
    from torch_geometric.data import TemporalData

    content, message = BAD[case]
    if content is None:
        content = TemporalData(src=torch.tensor([0]), dst=torch.tensor([1]), t=torch.tensor([0]))
    torch.save(content, tmp_path / "bad.pt")
    with pytest.raises(DataError) as refused:
        load(tmp_path / "bad.pt")
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_classification_needs_integer_targets(tmp_path):
    torch.save([snapshot(y=torch.tensor([0.5, 1.0, 0.0]))], tmp_path / "float.pt")
    with pytest.raises(DataError, match="task=classification needs integer targets"):
        load(tmp_path / "float.pt", task="classification")
    torch.save([Data(edge_index=torch.zeros(2, 0), x=torch.ones(0, 2), y=torch.zeros(0, dtype=torch.long))], tmp_path / "none.pt")
    with pytest.raises(DataError, match="at least 2 classes"):  # no targets: no classes
        load(tmp_path / "none.pt", task="classification")
    with pytest.raises(DataError, match="unknown task 'ranking'"):
        load(tmp_path / "float.pt", task="ranking")


@pytest.mark.parametrize(
    "content, message",
    [
        (b"src,dst,t\n0,1,2\n", "not a file written by torch.save"),
        (b"PK\x03\x04 cut short", "a damaged or unreadable torch.save file"),
    ],
)
def test_files_torch_save_did_not_write(tmp_path, content, message):
    (tmp_path / "bad.pt").write_bytes(content)
    with pytest.raises(DataError, match=message):
        load(tmp_path / "bad.pt")
    with pytest.raises(DataError, match="file not found"):
        load(tmp_path / "missing.pt")
    with pytest.raises(DataError, match="is a folder"):
        load(tmp_path)


class RunsACommand:
    """What an attacker would save: unpickling it calls ``os.system``."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


class Fake(Data):
    """A ``Data`` subclass: a class the reader does not know, even though it looks like snapshots."""


@pytest.mark.parametrize("make", [lambda cmd: [RunsACommand(cmd)], lambda cmd: {"snapshots": [snapshot(), RunsACommand(cmd)]}])
def test_a_file_that_would_run_code_is_refused_without_running_it(tmp_path, make):
    marker = tmp_path / "ran"
    torch.save(make(f"touch {marker}"), tmp_path / "payload.pt")
    with pytest.raises(DataError, match=r"refused: it asks for (posix|nt)\.system") as refused:
        load(tmp_path / "payload.pt")
    assert "\n" not in str(refused.value) and not marker.exists()
    torch.save([Fake(x=torch.ones(2, 1), y=torch.zeros(2), edge_index=edges((0, 1)))], tmp_path / "subclass.pt")
    with pytest.raises(DataError, match=r"refused: it asks for \S*test_snapshot_formats\.Fake"):
        load(tmp_path / "subclass.pt")


# ---- a run --------------------------------------------------------------------------------------


def test_a_run_trains_on_a_saved_signal(tmp_path, without_pgt):
    """``dygsched run dataset=snapshots`` end to end, on a signal written without the library."""
    import json

    from dygsched.launch.run_command import main

    rng = np.random.default_rng(0)
    steps = 8
    without_pgt(
        "DynamicGraphTemporalSignal",
        tmp_path / "signal.pt",
        [rng.integers(0, 20, size=(2, 40)) for _ in range(steps)],
        [rng.uniform(size=40) for _ in range(steps)],
        [rng.normal(size=(20, 4)) for _ in range(steps)],
        [rng.normal(size=20) for _ in range(steps)],
    )
    overrides = [
        "dataset=snapshots",
        f"dataset.path={tmp_path / 'signal.pt'}",
        "model=tgcn",
        "model.hidden_channels=8",
        "model.num_layers=1",
        "sched=psg",
        "world_size=1",
        "epochs=1",
        "window=2",
        "progress=false",
        "checkpoint=false",
        f"results_dir={tmp_path / 'results'}",
    ]
    assert main(overrides) == 0
    (summary,) = (tmp_path / "results").glob("*/summary.json")
    result = json.loads(summary.read_text())
    assert result["status"] == "ok" and result["dataset"] == "snapshots"
