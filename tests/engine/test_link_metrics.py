"""Link-prediction metrics of the node-memory strategies: transductive and inductive AP/AUC, TGB's MRR."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dygsched.engine.gradient_sync import GradientSync
from dygsched.engine.node_memory.config import NodeMemoryConfig
from dygsched.engine.node_memory.single import SingleProcessStrategy
from dygsched.engine.node_memory.strategy import EvaluationScores, link_prediction_metrics, mean_reciprocal_rank
from dygsched.engine.strategy import Artifacts, Epoch, Missing, RunContext
from dygsched.errors import ConfigError
from dygsched.models.tgn import TGN
from tests.engine.test_node_memory import INDUCTIVE, NODES, stream


def test_mrr_ranks_each_positive_among_its_own_negatives_ties_counted_half():
    positive = np.array([0.9, 0.5, 0.1])
    negative = np.array([[0.1, 0.2], [0.7, 0.5], [0.3, 0.4]])
    # ranks 1, 1 + 1 + 0.5 = 2.5, 3
    assert mean_reciprocal_rank(positive, negative) == pytest.approx((1 + 1 / 2.5 + 1 / 3) / 3)


def test_inductive_metrics_are_those_of_the_new_endpoints_events_and_missing_without_any():
    rng = np.random.default_rng(0)
    positive, negative = rng.normal(1, 1, 200), rng.normal(0, 1, (200, 1))
    new = np.zeros(200, dtype=bool)
    new[::4] = True
    got = link_prediction_metrics(EvaluationScores(10.0, positive, negative, new), with_mrr=True)
    only_new = link_prediction_metrics(EvaluationScores(0.0, positive[new], negative[new], np.zeros(50, bool)), with_mrr=False)
    assert got["ap_inductive"] == pytest.approx(only_new["ap"]) and got["auc_inductive"] == pytest.approx(only_new["auc"])
    assert got["ap"] != pytest.approx(got["ap_inductive"]) and got["inductive_share"] == pytest.approx(0.25)
    assert got["loss"] == pytest.approx(10.0 / 200) and 0 < got["mrr"] <= 1
    assert isinstance(only_new["ap_inductive"], Missing) and "mrr" not in only_new


def test_training_never_reads_or_writes_a_hidden_nodes_events():
    data = stream()
    strategy = SingleProcessStrategy(NodeMemoryConfig(batch_size=60))
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
    strategy.run_epoch(Epoch(0, module, optimizer, GradientSync(module, 1), torch.device("cpu"), 0, 1, lambda s: None, lambda *r: None))
    assert float(strategy.table.read(hidden).memory.abs().sum()) == 0.0  # no write reached a hidden node
    test = strategy.evaluate("test")
    assert {"ap", "auc", "ap_inductive", "auc_inductive", "mrr", "mrr_inductive"} <= set(test)
    assert 0 < test["inductive_share"] < 1


def test_the_protocol_settings_are_refused_where_they_mean_nothing():
    from dygsched.data.synthetic import SyntheticSource
    from dygsched.engine.build import build_strategy, run_settings
    from dygsched.launch.compose import compose_config

    cfg = compose_config(["sched=psg", "split.new_nodes=0.1"])
    snapshots = SyntheticSource(num_nodes=10, num_snapshots=6, feature_dim=2).load()
    with pytest.raises(ConfigError, match="does not predict links"):
        build_strategy(cfg.sched).check(snapshots, run_settings(cfg), 1)
    cfg = compose_config(["sched=single", "eval_negatives=0"])
    with pytest.raises(ConfigError, match="eval_negatives must be at least 1"):
        build_strategy(cfg.sched).check(stream(), run_settings(cfg), 1)
