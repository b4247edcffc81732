"""Link prediction's objective and evaluation on snapshots (``dygsched.engine.link_objective``)."""

import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dygsched.data.link_targets import link_prediction_graph
from dygsched.data.synthetic import SyntheticSource
from dygsched.engine.link_objective import LinkObjective, LinkProtocol
from dygsched.engine.objective import build_split
from dygsched.metrics.link_prediction import mean_reciprocal_rank
from dygsched.models.tgcn import TGCN
from tests.cli_process import run_dygsched
from tests.conftest import TINY_SYNTHETIC
from tests.typed_runs import default_run


def setup(**settings):
    graph = link_prediction_graph(SyntheticSource(num_nodes=40, num_snapshots=8, feature_dim=3).load(), embedding_dim=6)
    run = default_run(window=2, split={"train": 0.6, "val": 0.2}, seed=3, epochs=2, **settings)
    split = build_split(graph, run)
    torch.manual_seed(0)
    objective = LinkObjective(TGCN(3, 6, hidden_channels=8, num_layers=1), LinkProtocol.build(graph, split, run))
    return graph, split, objective


def test_the_loss_is_the_summed_cross_entropy_of_the_pairs_and_their_negatives_per_pair():
    graph, split, objective = setup(link={"negatives": 3})
    group = split.train[1].snapshots(graph)
    last = group[-1]
    z = objective.model(group)
    _, negatives = objective.negatives_of(last)
    u, v = last.links
    positive = objective.decoder(z[u], z[v])
    negative = objective.decoder(z[u].repeat(3, 1), z[negatives.reshape(-1)])
    expected = (F.softplus(-positive).sum() + F.softplus(negative).sum()) / u.numel()
    assert negatives.shape == (3, u.numel())
    assert torch.allclose(objective.loss_from_predictions(z, last, scale=0.5), 0.5 * expected, atol=1e-6)


def test_owned_shares_add_up_to_the_groups_loss():
    graph, split, objective = setup()
    group = split.train[0].snapshots(graph)
    z = objective.model(group)
    owned = torch.arange(graph.num_nodes) % 3 == 0
    whole = objective.loss_from_predictions(z, group[-1])
    parts = objective.loss_from_predictions(z, group[-1], owned=owned) + objective.loss_from_predictions(
        z, group[-1], owned=~owned
    )
    assert torch.allclose(whole, parts, atol=1e-6)


def test_training_negatives_are_drawn_anew_each_epoch_and_the_same_for_every_objective():
    graph, split, objective = setup()
    last = split.train[0].snapshots(graph)[-1]
    objective.start_epoch(0)
    first = objective.negatives_of(last)[0].clone()
    _, _, other = setup()
    other.start_epoch(0)
    assert torch.equal(other.negatives_of(last)[0], first)
    objective.start_epoch(1)
    assert not torch.equal(objective.negatives_of(last)[0], first)
    with pytest.raises(ValueError, match="not a training target"):
        objective.negatives_of(split.test[0].snapshots(graph)[-1])


def test_evaluation_ranks_each_positive_against_its_own_negatives(tmp_path, monkeypatch):
    monkeypatch.setenv("DYGSCHED_CACHE", str(tmp_path))
    graph, split, objective = setup(eval={"one_vs_many": 7})
    evaluation = objective.phase_evaluation("test")
    expected_positive, expected_negative = [], []
    with torch.no_grad():
        for group in split.test:
            snapshots = group.snapshots(graph)
            z = objective.model(snapshots)
            evaluation.add(z, snapshots[-1])
            last = snapshots[-1]
            start, stop = objective.protocol.fixed_rows[last.target_index]
            stored = objective.protocol.fixed["test"].destinations[start:stop]  # [P, 7]
            u, v = last.links
            expected_positive.append(objective.decoder(z[u], z[v]).numpy())
            expected_negative.append(objective.decoder(z[u].repeat_interleave(7, 0), z[stored.reshape(-1)]).view(-1, 7).numpy())
        found = evaluation.metrics(shared=True)
    positive, negative = np.concatenate(expected_positive), np.concatenate(expected_negative)
    assert found["mrr"] == pytest.approx(mean_reciprocal_rank(positive.astype(np.float64), negative.astype(np.float64)))
    assert {"ap", "auc", "mrr", "hits@10"} <= set(found)


def test_stored_negatives_of_another_cut_are_refused_in_one_line(tmp_path):
    env = {**os.environ, "DYGSCHED_CACHE": str(tmp_path / "cache")}
    common = dict(cwd=tmp_path, env=env)
    made = run_dygsched("run", *TINY_SYNTHETIC, "task=link", "eval.one_vs_many=4", "epochs=1", "world_size=1", **common)
    assert made.returncode == 0, made.stderr
    (prefix,) = {str(p).removesuffix("_val_ns.pkl") for p in (tmp_path / "cache" / "negatives").glob("*_val_ns.pkl")}
    other = [*TINY_SYNTHETIC, "dataset.num_snapshots=10", "task=link", f"tgb_negatives={prefix}", "world_size=1"]
    refused = run_dygsched("run", *other, **common)
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 1 and len(lines) == 1 and "has no negatives for event" in lines[0], refused.stderr


UTG = [*TINY_SYNTHETIC, "task=link", "link.embedding_dim=8", "link.procedure=utg", "world_size=1", "optim=sgd", "optim.lr=0.05"]


def test_utgs_procedure_trains_each_window_from_the_state_the_one_before_left(tmp_path):
    from dygsched.data.loading import for_task, load_data
    from dygsched.data.temporal_graph import TemporalGraph
    from dygsched.engine.build import build_model
    from dygsched.engine.checkpoint import load_checkpoint
    from dygsched.engine.objective import group_objective
    from dygsched.engine.worker import seed_everything
    from dygsched.launch.compose import compose_run
    from dygsched.models.inherited_states import InheritedStates

    overrides = [*UTG, "window=2", "epochs=2", f"results_dir={tmp_path}", "run_id=utg"]
    done = run_dygsched("run", *overrides, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run = compose_run(overrides)
    graph = for_task(load_data(run.dataset), TemporalGraph, run)
    split = build_split(graph, run)
    seed_everything(run.seed)
    objective = group_objective(build_model(run.model, graph), graph, split, run)
    optimizer = torch.optim.SGD(objective.parameters(), lr=0.05)
    for epoch in range(2):
        objective.start_epoch(epoch)
        saved: dict = {}  # reset at each epoch's start
        for group in split.train:  # in time order, one step each
            hooks = InheritedStates(objective.model, range(group.start, group.stop), saved)
            optimizer.zero_grad()
            objective(group.snapshots(graph), hooks=hooks).backward()
            optimizer.step()
    trained = load_checkpoint(tmp_path / "utg")["model"]
    for key, value in objective.state_dict().items():
        assert torch.allclose(trained[key], value, atol=1e-5), key


def test_utgs_evaluation_streams_every_snapshot_from_the_first():
    """Streaming is the windows' evaluation with each group stretched back to the first snapshot."""
    from dygsched.engine.snapshot_groups.config import SnapshotGroupConfig
    from dygsched.engine.strategy import Artifacts, RunContext

    graph, split, _ = setup()
    scores = {}
    for procedure in ("utg", "windows"):
        run = default_run(window=2, split={"train": 0.6, "val": 0.2}, seed=3, epochs=1, link={"procedure": procedure})
        strategy = SnapshotGroupConfig().build()
        strategy.setup(RunContext(graph, run, 0, 1, torch.device("cpu"), Artifacts(None, True)))
        torch.manual_seed(0)
        strategy.objective(TGCN(3, 6, hidden_channels=8, num_layers=1))
        if procedure == "windows":  # each test group from the first snapshot on
            strategy.split = type(split)(split.train, split.val, tuple(type(g)(g.index, 0, g.stop) for g in split.test))
        scores[procedure] = strategy.evaluate("test")
    assert scores["utg"] == pytest.approx(scores["windows"], rel=1e-6)


def test_utgs_test_after_validation_continues_from_the_state_validation_left():
    """The test streamed on from where validation stopped gives the numbers of a test streamed from
    the first snapshot; after a training step it streams from the first snapshot again."""
    from dygsched.engine.snapshot_groups.config import SnapshotGroupConfig
    from dygsched.engine.strategy import Artifacts, RunContext

    graph, _, _ = setup()
    run = default_run(window=2, split={"train": 0.6, "val": 0.2}, seed=3, epochs=1, link={"procedure": "utg"})

    def strategy():
        built = SnapshotGroupConfig().build()
        built.setup(RunContext(graph, run, 0, 1, torch.device("cpu"), Artifacts(None, True)))
        torch.manual_seed(0)
        built.objective(TGCN(3, 6, hidden_channels=8, num_layers=1))
        return built

    alone, after = strategy(), strategy()
    from_the_first = alone.evaluate("test")
    after.evaluate("val")
    assert after._streamed is not None and after._streamed[0] == after.split.val[-1].stop
    continued = after.evaluate("test")
    assert after._streamed[0] == after.split.test[-1].stop
    assert continued == pytest.approx(from_the_first, rel=1e-6)
    with torch.no_grad():  # new parameters: the state validation left is stale
        next(after._objective.parameters()).add_(0.5)
    moved = after.evaluate("test")
    reference = strategy()
    with torch.no_grad():
        next(reference._objective.parameters()).add_(0.5)
    assert moved == pytest.approx(reference.evaluate("test"), rel=1e-6) and moved != pytest.approx(continued, rel=1e-6)


def test_event_and_snapshot_models_on_a_cut_stream_score_the_same_pairs_against_the_same_negatives(tmp_path, monkeypatch):
    from dygsched.data.events import EventStream
    from dygsched.data.loading import for_task, load_data
    from dygsched.data.temporal_graph import TemporalGraph
    from dygsched.data.tgb_negatives import read_phase_negatives
    from dygsched.engine.node_memory.negatives import fixed_negatives_prefix
    from dygsched.launch.compose import compose_run

    monkeypatch.setenv("DYGSCHED_CACHE", str(tmp_path))
    dataset = compose_run(["dataset=collegemsg", "dataset.snapshot=weekly"]).dataset
    run = default_run(window=2, split={"train": 0.7, "val": 0.15}, seed=5, epochs=1, task="link", eval={"one_vs_many": 30})
    cut = load_data(dataset)
    graph = for_task(cut, TemporalGraph, run)
    split = build_split(graph, run)
    protocol = LinkProtocol.build(graph, split, run)
    stream = for_task(cut, EventStream, run)
    events = stream.split(run.split.train, run.split.val)
    phases = {"val": events.val, "test": events.test}
    fixed = read_phase_negatives(fixed_negatives_prefix(stream, events, run), stream, phases)
    for phase in ("val", "test"):
        snapshot_pairs = torch.cat([g.snapshots(graph)[-1].links for g in split.phase(phase)], dim=1)
        first, stop = phases[phase]
        assert torch.equal(torch.stack([stream.src[first:stop], stream.dst[first:stop]]), snapshot_pairs)
        assert torch.equal(fixed[phase].destinations, protocol.fixed[phase].destinations)
        assert torch.equal(fixed[phase].present, protocol.fixed[phase].present)
    assert len(list((tmp_path / "negatives").glob("*_test_ns.pkl"))) == 1  # generated once, read by both


def test_evaluation_scores_in_blocks_of_whole_columns_the_same_as_at_once(monkeypatch):
    from dygsched.engine import link_objective

    graph, split, objective = setup()
    z = torch.randn(graph.num_nodes, 6)
    src = torch.randint(0, graph.num_nodes, (7,)).expand(5, 7)
    dst = torch.randint(0, graph.num_nodes, (5, 7))
    whole = objective.score(z, src, dst)
    calls = []
    score = objective.score
    monkeypatch.setattr(objective, "score", lambda *a: calls.append(a[1].shape) or score(*a))
    monkeypatch.setattr(link_objective, "SCORED_AT_ONCE", 10)  # two columns of 5 negatives per call
    assert torch.allclose(objective.score_in_blocks(z, src, dst), whole, atol=1e-6)
    assert calls == [(5, 2), (5, 2), (5, 2), (5, 1)]
    calls.clear()  # one source per column: split with its columns
    assert torch.allclose(objective.score_in_blocks(z, src[0], dst), whole, atol=1e-6)
    assert calls == [(2,), (2,), (2,), (1,)]
