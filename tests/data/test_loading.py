"""``load_data``: the kind a strategy trains on, from one config, and ``dataset.snapshot``'s refusals
through the command line (one line, before any rank starts, nothing written)."""

import dataclasses
import os

import pytest

from dygsched.data.dataset_config import DatasetConfig
from dygsched.data.events import EventStream
from dygsched.data.loading import load_data, load_graph
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.errors import ConfigError
from dygsched.launch.compose import compose_run
from tests.cli_process import run_dygsched
from tests.conftest import ROOT
from tests.typed_runs import default_run


def dataset(*overrides: str) -> DatasetConfig:
    return compose_run(list(overrides)).dataset


def test_one_config_gives_a_snapshot_strategy_the_cut_and_an_event_strategy_its_pairs():
    from dygsched.data.loading import for_task

    config = dataset("dataset=collegemsg", "dataset.snapshot=weekly")
    graph, stream = load_data(config), load_data(dataset("dataset=collegemsg"))
    assert isinstance(graph, TemporalGraph) and isinstance(stream, EventStream)  # no snapshot: the stream as it is
    assert graph.num_snapshots == 28 and graph.num_nodes == stream.num_nodes == 1899 and graph.cut == "dataset.snapshot=weekly"
    before_last = stream.t < graph.snapshot_times[-1]  # the events the 28 snapshots hold
    assert sum(float(s.edge_weight.sum()) for s in graph.snapshots) == int(before_last.sum())
    settings = default_run(window=4, split={"train": 0.7, "val": 0.15}, seed=0, epochs=1)
    assert for_task(graph, TemporalGraph, settings) is graph  # node targets: the cut as it is
    pairs = for_task(graph, EventStream, settings)  # an event model: each week's distinct pairs, timed by the week
    assert isinstance(pairs, EventStream) and pairs.num_events == sum(int(s.links.shape[1]) for s in graph.snapshots)
    assert pairs.t.unique().tolist() == [float(t) for t in range(1, 29)]
    split = pairs.split(0.7, 0.15)
    # the groups of 4 split 25 groups 18/4/3: validation scores weeks 22-25, test 26-28
    assert pairs.t[split.val[0]] == 22 and pairs.t[split.test[0]] == 26 and pairs.t[split.val[0] - 1] == 21


def test_the_runs_table_names_the_cut():
    def identity(*overrides: str) -> dict:
        return compose_run(["dataset=collegemsg", *overrides]).identity("run", 1)

    assert identity("dataset.snapshot=weekly")["snapshot"] == "weekly" and identity("dataset.snapshot=3600")["snapshot"] == "3600"
    assert identity()["snapshot"] is None


@pytest.mark.parametrize(
    "overrides, features",
    [
        (["dataset=events", "dataset.snapshot=monthly"], 2),  # an edge list's rows as events
        (["dataset=bipartite", "dataset.num_events=3000", "dataset.edge_dim=4", "dataset.snapshot=daily"], 6),  # generated
    ],
)
def test_every_kind_of_stream_source_can_be_cut(overrides, features):
    graph = load_graph(dataset(*overrides))
    assert graph.num_snapshots >= 3 and graph.snapshot_times is not None and graph.num_features == features


def test_a_source_of_snapshots_is_refused_and_a_stream_without_a_cut_too():
    with pytest.raises(ConfigError, match="gives snapshots already .an edge list: set dataset.kind=events"):
        load_data(dataset("dataset=edgelist", "dataset.snapshot=weekly"))
    synthetic = dataclasses.replace(
        dataset("dataset=synthetic", "dataset.num_nodes=20", "dataset.num_snapshots=4"), snapshot="weekly"
    )
    with pytest.raises(ConfigError, match="dataset 'synthetic' gives snapshots already"):
        load_data(synthetic)
    with pytest.raises(ConfigError, match="cut it with dataset.snapshot=daily"):
        load_graph(dataset("dataset=collegemsg"))


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["dataset=collegemsg", "dataset.snapshot=fortnightly"], "unknown unit (choose from hourly, daily, weekly, monthly"),
        (["dataset=collegemsg", "dataset.snapshot=0"], "dataset.snapshot=0: a snapshot must last a positive"),
        (["dataset=collegemsg", "dataset.snapshot=-3600"], "dataset.snapshot=-3600: a snapshot must last a positive"),
        (["dataset=collegemsg", "dataset.snapshot=monthly"], "into 7 snapshots, fewer than the 9 that window=4 and a 0.7/0.15"),
        (["dataset=collegemsg", "dataset.snapshot=1"], "cuts the timestamps into 16,736,161 snapshots (at most 100,000)"),
        (["dataset=sfhh_events", "dataset.snapshot=hourly"], "snapshots empty between events"),
        (["dataset=synthetic", "dataset.snapshot=weekly"], "dataset=synthetic is not one (it gives snapshots already)"),
        (["dataset=edgelist", "dataset.snapshot=weekly"], "an edge list: set dataset.kind=events"),
    ],
)
def test_the_command_line_refuses_a_bad_cut_in_one_line(tmp_path, overrides, message):
    done = run_dygsched(
        "run",
        *overrides,
        "model=tgcn",
        "sched=psg",
        f"results_dir={tmp_path / 'results'}",
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("dygsched: error: ") and message in lines[0], lines[0]
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
