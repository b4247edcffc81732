"""The node-memory strategies' link-prediction protocol: hidden nodes (the inductive split), the settings only it reads.

The metrics themselves: ``tests/metrics/test_link_prediction.py``."""

from __future__ import annotations

import pytest
import torch

from dygsched.engine.gradient_sync import GradientSync
from dygsched.engine.node_memory.config import NodeMemoryConfig
from dygsched.engine.node_memory.single import SingleProcessStrategy
from dygsched.engine.strategy import Artifacts, Epoch, RunContext
from dygsched.errors import ConfigError
from dygsched.models.tgn import TGN
from tests.engine.test_node_memory import INDUCTIVE, NODES, stream


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
    strategy.run_epoch(
        Epoch(0, module, optimizer, GradientSync(module, 1), torch.device("cpu"), 0, 1, lambda s: None, lambda *r: None)
    )
    assert float(strategy.memory.table.read(hidden).memory.abs().sum()) == 0.0  # no write reached a hidden node
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
