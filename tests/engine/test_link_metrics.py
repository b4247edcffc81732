"""The node-memory strategies' link-prediction protocol: hidden nodes (the inductive split), the settings only it reads.

The metrics themselves: ``tests/metrics/test_link_prediction.py``."""

from __future__ import annotations

import pytest
import torch

from dygsched.engine.gradient_sync import GradientSync
from dygsched.engine.node_memory.config import SingleProcessConfig
from dygsched.engine.node_memory.strategy import NodeMemoryStrategy
from dygsched.engine.strategy import Artifacts, Epoch, RunContext
from dygsched.errors import ConfigError
from dygsched.models.tgn import TGN
from tests.engine.test_node_memory import INDUCTIVE, NODES, stream
from tests.typed_runs import changed


def test_training_never_reads_or_writes_a_hidden_nodes_events():
    data = stream()
    strategy = NodeMemoryStrategy(SingleProcessConfig(batch_size=60))
    strategy.check(data, INDUCTIVE, 1)
    strategy.setup(RunContext(data, INDUCTIVE, 0, 1, torch.device("cpu"), Artifacts(None, True)))
    module = strategy.objective(TGN(NODES, 1, memory_dim=8, time_dim=4, neighbours=3, heads=2, dropout=0.0))
    hidden = strategy.new_nodes.hidden
    assert hidden.numel() == 8
    for batch in strategy.batches("train"):
        inputs = strategy.inputs(batch)
        assert not torch.isin(torch.cat([inputs.src, inputs.dst]), hidden).any()
        sampled = inputs.neighbours.nodes[inputs.neighbours.mask]
        assert not torch.isin(sampled, hidden).any()  # their training events make no neighbours either
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    strategy.run_epoch(
        Epoch(0, module, optimizer, GradientSync(module, 1), torch.device("cpu"), 0, 1, lambda s: None, lambda *r: None)
    )
    assert float(strategy.memory.table.read(hidden).memory.abs().sum()) == 0.0  # no write reached a hidden node
    test = strategy.evaluate("test")
    assert {"ap", "auc", "ap_inductive", "auc_inductive", "mrr", "mrr_inductive"} <= set(test)
    assert 0 < test["inductive_share"] < 1


def test_the_protocol_settings_are_refused_where_they_mean_nothing():
    from dygsched.data.link_targets import link_prediction_graph
    from dygsched.data.synthetic import SyntheticSource
    from dygsched.engine.build import build_strategy
    from dygsched.launch.compose import compose_run

    run = compose_run(["sched=psg", "split.new_nodes=0.1"])
    snapshots = SyntheticSource(num_nodes=10, num_snapshots=6, feature_dim=2).load()
    with pytest.raises(ConfigError, match=r"^split.new_nodes set link prediction's evaluation, and this run trains node targets"):
        build_strategy(run.sched).check(snapshots, run, 1)
    run = compose_run(["sched=psg", "task=link", "split.new_nodes=0.1"])
    links = link_prediction_graph(snapshots, 4)
    with pytest.raises(ConfigError, match=r"^split.new_nodes split or score event streams; snapshot link prediction splits"):
        build_strategy(run.sched).check(links, run, 1)
    run = compose_run(["sched=single", "eval_negatives=0"])
    with pytest.raises(ConfigError, match="eval_negatives must be at least 1"):
        build_strategy(run.sched).check(stream(), run, 1)


def trained(settings, batch_size=60):
    data = stream()
    strategy = NodeMemoryStrategy(SingleProcessConfig(batch_size=batch_size))
    strategy.check(data, settings, 1)
    strategy.setup(RunContext(data, settings, 0, 1, torch.device("cpu"), Artifacts(None, True)))
    module = strategy.objective(TGN(NODES, 1, memory_dim=8, time_dim=4, neighbours=3, heads=2, dropout=0.0))
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    strategy.run_epoch(
        Epoch(0, module, optimizer, GradientSync(module, 1), torch.device("cpu"), 0, 1, lambda s: None, lambda *r: None)
    )
    return strategy


def test_one_run_is_scored_under_every_sampler_and_each_metric_names_its_own():
    samplers = {"negatives": ["random", "historical", "inductive"], "negative_pool": "destinations"}
    settings = changed(INDUCTIVE, eval=samplers, split={"by": "time"})
    strategy = trained(settings)
    test = strategy.evaluate("test")
    for label in ("random-destinations", "historical", "inductive"):
        assert {f"ap[{label}]", f"mrr[{label}]", f"hits@10[{label}]", f"ap_inductive[{label}]"} <= set(test)
    assert "ap" not in test  # no unlabelled figure that could be compared across rules
    assert test["inductive_share[historical]"] == test["inductive_share[inductive]"]  # the same events
    assert test["ap[historical]"] != test["ap[random-destinations]"]
    batch = strategy.batches("test")[0]
    assert strategy.inputs(batch, "historical").negative_sources and not strategy.inputs(batch, "random").negative_sources


def test_the_default_rule_keeps_its_metric_names_and_evaluation_replays_the_same_figures():
    strategy = trained(INDUCTIVE)
    first = strategy.evaluate("test")
    assert {"ap", "mrr", "hits@10", "hits@10_inductive"} <= set(first)
    assert strategy.evaluate("val")["ap"] == strategy.evaluate("val")["ap"]


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["eval.negatives=adversarial"], "eval.negatives must name samplers among random, historical, inductive"),
        (["eval.negative_pool=sources", "eval.negatives=historical"], "eval.negative_pool must be one of all, destinations"),
        (["eval.hits_k=0"], "eval.hits_k must be at least 1"),
        (["split.by=days"], "split.by must be one of events, time"),
        (["eval.inductive=sideways"], "eval.inductive must be one of in_phase, apart"),
        (["eval.average=median"], "eval.average must be one of pooled, per_batch"),
        (["split.new_nodes=0.1", "split.new_nodes_draw=mine"], "split.new_nodes_draw must be one of ours, dyglib"),
        (["eval.inductive=apart", "tgb_negatives=anything.npz"], "eval.inductive=apart draws its own negatives"),
    ],
)
def test_bad_evaluation_settings_are_one_line_before_training(overrides, message):
    from dygsched.engine.build import build_strategy
    from dygsched.launch.compose import compose_run

    with pytest.raises(ConfigError, match=message):
        run = compose_run(["sched=single", *overrides])
        build_strategy(run.sched).check(stream(), run, 1)


def test_new_node_events_are_scored_apart_from_the_state_before_the_phase_as_dyglib_does():
    """``eval.inductive=apart``: the phase's pass is untouched; the *_inductive figures come from a
    second pass over the new-node events alone, whose memory absorbs only them and whose negatives
    come from them alone; the state is then the end of the phase again."""
    settings = changed(
        INDUCTIVE, eval={"negatives": ["random", "historical"], "negative_pool": "destinations"}, split={"by": "time"}
    )
    torch.manual_seed(0)
    in_phase = trained(settings, batch_size=15)
    torch.manual_seed(0)
    apart = trained(changed(settings, eval={"inductive": "apart"}), batch_size=15)
    assert in_phase.evaluate("val")["ap[historical]"] == apart.evaluate("val")["ap[historical]"]
    before_test = apart.memory.table.snapshot()
    together, alone = in_phase.evaluate("test"), apart.evaluate("test")
    for label in ("random-destinations", "historical"):
        assert alone[f"ap[{label}]"] == together[f"ap[{label}]"]  # the phase's own pass is the same
        assert alone[f"inductive_share[{label}]"] == together[f"inductive_share[{label}]"]
        assert alone[f"ap_inductive[{label}]"] != together[f"ap_inductive[{label}]"]  # a pass of its own
        assert 0.0 < alone[f"ap_inductive[{label}]"] <= 1.0 and f"mrr_inductive[{label}]" in alone
    assert torch.equal(apart.memory.table.memory, in_phase.memory.table.memory)  # back at the end of test

    events = apart.new_node_events["test_new"]
    start, stop = apart.split.test
    assert events.numel() and bool(apart.new_nodes.inductive(apart.stream.src[events], apart.stream.dst[events]).all())
    assert events.numel() < stop - start  # only the events with a new endpoint
    alone_src, alone_dst = apart.stream.src[events], apart.stream.dst[events]
    pools = []
    for batch in apart.batches("test_new"):
        random = apart.inputs(batch, "random")
        negatives = random.roots[2 * batch.events :]
        assert bool(torch.isin(negatives, alone_dst).all())  # random destinations among the new-node events' own
        historical = apart.inputs(batch, "historical")
        n, edges = batch.events, set(zip(alone_src.tolist(), alone_dst.tolist()))
        sources, destinations = historical.roots[(2 + 4) * n :], historical.roots[2 * n : (2 + 4) * n]
        t = apart.stream.t[events[batch.start : batch.stop]]
        pool = apart.new_node_negatives["test_new"].edges.pool_of("historical", float(t[0]), float(t[-1]), "test_new")
        assert set(zip((pool // NODES).tolist(), (pool % NODES).tolist())) <= edges  # the pool: theirs alone
        drawn = set(zip(sources.tolist(), destinations.tolist()))
        assert drawn & edges or pool.size == 0
        pools.append(pool.size)
    assert max(pools) > 0

    # replayed from the state before test, the pass writes only the new-node events' endpoints
    apart.memory.table.restore(before_test)
    apart._stream_through("test_new")
    rewritten = (apart.memory.table.memory != before_test[0]).any(dim=1).nonzero().flatten()
    assert rewritten.numel() and bool(torch.isin(rewritten, torch.cat([alone_src, alone_dst])).all())


def test_an_inductive_sampler_without_edges_new_after_training_and_a_flat_time_split_are_refused():

    import numpy as np

    from dygsched.data.events import events_from_arrays

    # the same four edges over and over: none is first seen after training
    repeated = events_from_arrays("loop", np.tile([0, 1, 2, 3], 50), np.tile([1, 2, 3, 0], 50), np.arange(200.0))
    settings = changed(INDUCTIVE, split={"new_nodes": 0.0}, eval={"negatives": "inductive"})
    with pytest.raises(ConfigError, match="eval.negatives=inductive draws edges first seen after training"):
        NodeMemoryStrategy(SingleProcessConfig(batch_size=20)).check(repeated, settings, 1)
    flat = events_from_arrays("flat", np.arange(200) % 7, (np.arange(200) + 1) % 7, np.zeros(200))
    with pytest.raises(ConfigError, match="split.by=time leaves"):
        NodeMemoryStrategy(SingleProcessConfig(batch_size=20)).check(flat, changed(INDUCTIVE, split={"by": "time"}), 1)
