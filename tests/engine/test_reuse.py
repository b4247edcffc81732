"""REAL's reuse engine in training: the same parameters and losses as plain execution, less work."""

import dataclasses
import json

import pytest
import torch
import torch.distributed as dist

from dygsched.data.diffmap import build_diff_maps
from dygsched.data.groups import sliding_groups
from dygsched.data.synthetic import SyntheticSource
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.engine.objective import GroupObjective
from dygsched.engine.snapshot_groups import SequentialExecutor
from dygsched.engine.snapshot_groups import reuse as reuse_module
from dygsched.engine.snapshot_groups.profiler import Profiler
from dygsched.engine.snapshot_groups.reuse import Chain, ReuseExecutor, plan_chains
from dygsched.engine.strategy import Missing
from dygsched.errors import ConfigError
from dygsched.models.evolvegcn_o import EvolveGCNO
from dygsched.models.flops import count_conv_flops
from dygsched.models.gat_lstm import GATLSTM
from dygsched.models.gclstm import GCLSTM
from dygsched.models.mpnn_lstm import MPNNLSTM
from dygsched.models.tgcn import TGCN
from dygsched.models.wdgcn import WDGCN
from tests.cli_process import run_dygsched
from tests.conftest import TINY_SYNTHETIC
from tests.harness import run_ranks, train_epoch
from tests.models.snapshots import EXACT64, graph_in_float64

# Overlapping groups share a rank in iterations 0 and 2 (type II); iteration 1 leaves rank 1 idle.
ITERATIONS = (((0, 1), (2,)), ((3,), ()), ((4, 6), (5, 7)))
MODELS = {
    "tgcn": lambda: TGCN(
        4, 1, hidden_channels=8, num_layers=2
    ),  # aggregates first: A X, then the changed rows projected (case 2)
    "tgcn_projects_first": lambda: TGCN(
        4, 1, hidden_channels=8, num_layers=2, project_first=True
    ),  # the projection once per chain (case 1)
    "wdgcn": lambda: WDGCN(4, 1, hidden_channels=8, num_layers=1),
    "gat_lstm": lambda: GATLSTM(4, 1, hidden_channels=8, num_layers=2, heads=2),
    "evolvegcn_o": lambda: EvolveGCNO(4, 1, hidden_channels=8, num_layers=1),
    "mpnn_lstm": lambda: MPNNLSTM(4, 1, hidden_channels=8, num_layers=1, dropout=0.0),
}


CHURN_SNAPSHOT = 5  # its edges are relabelled: almost all change, so it is kept whole, not as a diff


def changing_features(graph: TemporalGraph) -> TemporalGraph:
    """The synthetic graph with a few feature rows changing between snapshots, and one snapshot
    whose edges all change (stored whole: the engine must rebuild and convolve it in full)."""
    snapshots = []
    relabel = torch.randperm(graph.num_nodes, generator=torch.Generator().manual_seed(5))
    for t, snapshot in enumerate(graph.snapshots):
        x = snapshot.x.clone()
        x[t % 7 :: 11] += 0.25 * t
        edge_index = relabel[snapshot.edge_index] if t == CHURN_SNAPSHOT else snapshot.edge_index
        snapshots.append(dataclasses.replace(snapshot, x=x, edge_index=edge_index))
    return dataclasses.replace(graph, snapshots=tuple(snapshots))


def graphs():
    """In float64, as the models are: reuse sums the same messages in another order than recomputing
    does, which float32 rounds differently on each CPU kernel set; float64 keeps that at ~1e-15."""
    graph = graph_in_float64(SyntheticSource(num_nodes=60, num_snapshots=11, feature_dim=4, change_rate=0.1, seed=3).load())
    return {"static": graph, "changing": changing_features(graph)}


def train_once(executor, make_model, graph, profiler=None, iterations=ITERATIONS):
    groups = sliding_groups(graph.num_snapshots, 4)
    torch.manual_seed(0)
    objective = GroupObjective(make_model().double(), graph.task)
    optimizer = torch.optim.SGD(objective.parameters(), lr=0.1)
    with count_conv_flops(objective) as flops:
        seen = train_epoch(executor, objective, graph, groups, iterations, optimizer, profiler)
    params = {k: v.detach().clone() for k, v in objective.state_dict().items()}
    # GCN normalisation is kept per graph by every executor (dygsched.models.gcn_normalization): what
    # reuse removes is the projection and aggregation work
    return params, seen, flops.total - flops.by_kind["normalize"]


def _rank(rank, out):
    results = {}
    for graph_name, graph in graphs().items():
        for name, make_model in MODELS.items():
            plain, plain_stats, plain_flops = train_once(SequentialExecutor(), make_model, graph)
            for path in ("diff", "full", "adaptive"):
                reused, stats, flops = train_once(ReuseExecutor(reuse=True, reuse_path=path), make_model, graph)
                worst = max(float((reused[k] - v).abs().max() / v.abs().max().clamp(min=1e-6)) for k, v in plain.items())
                loss_gap = max(
                    abs(float(a.loss_sum) - float(b.loss_sum)) / max(abs(float(a.loss_sum)), 1e-6)
                    for a, b in zip(plain_stats, stats)
                )
                results[f"{graph_name}/{name}/{path}"] = {
                    "param_rel_err": worst,
                    "loss_rel_err": loss_gap,
                    "flops_plain": plain_flops,
                    "flops_reuse": flops,
                }
    # the order the engine picks from its timed costs is the order it runs, exactly, in either case
    graph = graphs()["changing"]
    for name in ("tgcn", "wdgcn"):
        plain, _, _ = train_once(SequentialExecutor(), MODELS[name], graph)
        for project_first in (True, False):
            reuse_module.choose_projection_first = lambda chains, costs, choice=project_first: choice
            executor = ReuseExecutor(reuse=True, reuse_path="adaptive")
            reused, _, flops = train_once(executor, MODELS[name], graph)
            results[f"order/{name}/{project_first}"] = {
                "param_rel_err": max(
                    float((reused[k] - v).abs().max() / v.abs().max().clamp(min=1e-6)) for k, v in plain.items()
                ),
                "reuse_case": executor.epoch_metrics()["reuse_case"],
                "flops_reuse": flops,
            }
    # a profiling epoch (PSG plan) with reuse records each group's reusable seconds
    profiler = Profiler()
    psg = tuple(((2 * i,), (2 * i + 1,)) for i in range(4))
    train_once(ReuseExecutor(reuse=True), MODELS["tgcn"], graphs()["static"], profiler, psg)
    results["profiled_groups"] = sorted(profiler.reusable)
    results["reusable_positive"] = all(v > 0 for runs in profiler.reusable.values() for v in runs)
    gathered = [None, None]
    dist.all_gather_object(gathered, results["profiled_groups"])
    results["profiled_groups"] = sorted(g for groups in gathered for g in groups)
    if rank == 0:
        with open(out, "w") as out_file:
            json.dump(results, out_file)


@pytest.fixture(scope="module")
def distributed_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("reuse") / "results.json"
    run_ranks(_rank, (str(out),))
    return json.loads(out.read_text())


@pytest.mark.parametrize("graph_name", ["static", "changing"])
@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("path", ["diff", "full", "adaptive"])
def test_reuse_trains_the_same_parameters_and_losses(distributed_results, graph_name, model, path):
    result = distributed_results[f"{graph_name}/{model}/{path}"]
    assert result["param_rel_err"] < EXACT64["rtol"]
    assert result["loss_rel_err"] < EXACT64["rtol"]


@pytest.mark.parametrize("model", list(MODELS))
def test_reuse_counts_fewer_convolution_flops(distributed_results, model):
    result = distributed_results[f"static/{model}/diff"]
    assert 0 < result["flops_reuse"] < result["flops_plain"]


def test_profiling_with_reuse_measures_reusable_seconds(distributed_results):
    assert distributed_results["profiled_groups"] == list(range(8))  # every group, on one rank or the other
    assert distributed_results["reusable_positive"]


def test_the_changing_graph_keeps_its_churned_snapshot_whole():
    kept = build_diff_maps(graphs()["changing"]).diffs
    # the churned snapshot, and the next one, whose edges change back
    assert [t for t in range(1, len(kept)) if kept[t].is_full] == [CHURN_SNAPSHOT, CHURN_SNAPSHOT + 1]


def test_chains_merge_overlapping_groups_only_with_type_two():
    groups = sliding_groups(12, 4)
    mine = (5, 0, 1)
    assert plan_chains([groups[k] for k in mine], mine, share=True) == [Chain(0, 5, (0, 1)), Chain(5, 9, (5,))]
    assert plan_chains([groups[k] for k in mine], mine, share=False) == [Chain(0, 4, (0,)), Chain(1, 5, (1,)), Chain(5, 9, (5,))]


def test_unknown_reuse_path_is_a_config_error():
    with pytest.raises(ConfigError, match="reuse_path"):
        ReuseExecutor(reuse=True, reuse_path="sometimes")


def test_a_model_without_a_reusable_convolution_is_refused_only_when_reuse_is_on():
    """GC-LSTM convolves its hidden state, never its input: REAL's reuse has nothing to compute once,
    so the strategy refuses it before any rank starts; with reuse off it trains as any model."""
    model = GCLSTM(4, 1, hidden_channels=8, num_layers=1)
    with pytest.raises(ConfigError, match=r"GCLSTMLayer has none to reuse .*: set sched.executor.reuse=false"):
        ReuseExecutor(reuse=True).check_model(model)
    ReuseExecutor(reuse=False).check_model(model)
    ReuseExecutor(reuse=True).check_model(TGCN(4, 1, hidden_channels=8, num_layers=1))


def run_cli(tmp_path, name, *overrides):
    result = run_dygsched("run", *overrides, f"results_dir={tmp_path / 'results'}", f"run_id={name}", timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return json.loads((tmp_path / "results" / name / "summary.json").read_text())


def assert_same_training(on, off):
    assert on["final_train_loss"] == pytest.approx(off["final_train_loss"], rel=1e-5)
    assert on["eval"]["value"] == pytest.approx(off["eval"]["value"], rel=1e-5)
    assert on["conv_flops_per_epoch"] < off["conv_flops_per_epoch"]


@pytest.mark.slow  # two full runs (the distributed test above checks every model in the fast suite)
def test_reuse_switch_keeps_losses_on_synthetic(tmp_path):
    common = [
        *TINY_SYNTHETIC,
        "model.num_layers=2",
        "sched=greedy",
        "sched.timeline.profile_epochs=0",
        "epochs=2",
        "world_size=2",
    ]
    on = run_cli(tmp_path, "on", *common)
    off = run_cli(tmp_path, "off", *common, "sched.executor.reuse=false")
    assert_same_training(on, off)


@pytest.mark.slow  # two GAT-LSTM runs on the real data, over a minute on 2 cores: `make test-slow`
def test_reuse_switch_keeps_losses_on_twitter_tennis(tmp_path, shipped_data):
    common = [
        "dataset=twitter_tennis",
        f"dataset.path={shipped_data / 'twitter_tennis_rg17.json'}",
        "model=gat_lstm",
        "model.hidden_channels=16",
        "model.num_layers=1",
        "sched=greedy",
        "sched.timeline.profile_epochs=0",
        "epochs=2",
        "world_size=2",
        "progress=false",
    ]
    on = run_cli(tmp_path, "on", *common)
    off = run_cli(tmp_path, "off", *common, "sched.executor.reuse=false")
    assert_same_training(on, off)


def test_pinning_a_diff_map_pins_its_kept_full_graph_too(monkeypatch):
    from dygsched.engine.snapshot_groups.reuse import _pinned

    pinned = []
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self: pinned.append(self) or self.clone())
    diffs = build_diff_maps(graphs()["changing"]).diffs
    whole = diffs[CHURN_SNAPSHOT]
    copy = _pinned(whole)
    assert copy.is_full and copy.full_graph.equal(whole.full_graph)
    assert any(t is whole.full_graph.keys for t in pinned)  # the nested graph's tensors were pinned
    assert copy.full_graph.keys is not whole.full_graph.keys


def test_tgcn_projecting_first_reuses_its_projection_too(distributed_results):
    """With ``in > 3 out`` TGCN reuses its folded projection with the aggregation (REAL case 1): the
    counted saving is larger than where it aggregates first and reuses ``A X`` alone."""
    ratio = {
        m: distributed_results[f"static/{m}/diff"]["flops_plain"] / distributed_results[f"static/{m}/diff"]["flops_reuse"]
        for m in ("tgcn", "tgcn_projects_first")
    }
    assert ratio["tgcn_projects_first"] > ratio["tgcn"]


@pytest.mark.parametrize("model", ["tgcn", "wdgcn"])
def test_the_engine_runs_the_order_its_costs_choose(distributed_results, model):
    """REAL 4.1.2's two cases, picked by the engine (here forced either way): both train exactly as
    without reuse, the epoch records which case ran, and the cases count different work."""
    cases = {first: distributed_results[f"order/{model}/{first}"] for first in ("True", "False")}
    for result in cases.values():
        assert result["param_rel_err"] < EXACT64["rtol"]
    assert cases["True"]["reuse_case"] == 1 and cases["False"]["reuse_case"] == 2
    assert cases["True"]["flops_reuse"] != cases["False"]["flops_reuse"]


def test_a_configured_order_is_not_chosen_and_says_so():
    assert isinstance(ReuseExecutor().epoch_metrics()["reuse_case"], Missing)  # no reuse ran
    assert TGCN(4, 1, hidden_channels=8, project_first=True).layers[0].projection_widths() is None
    assert TGCN(4, 1, hidden_channels=8).layers[0].projection_widths() == (4, 24)
    assert GATLSTM(4, 1, hidden_channels=8, heads=2).layers[0].projection_widths() is None  # attention scores projected rows
