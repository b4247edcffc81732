"""A toy strategy that exists only in the tests: every rank trains every group, on its own nodes.

It shows what adding a strategy takes: this module (the strategy and its configuration class,
``NodeShardConfig``, which names it), one config file (``tests/conf/sched/node_shard.yaml``) and the
contract tests, nothing else. Its units are
``(group, shard)`` pairs, planned as one group per iteration with shard ``r`` on rank ``r``; rank
``r`` owns the nodes whose id is ``r`` modulo the number of ranks and scores only those, divided by
every existing node, so the ranks' losses add up to the group's and the step is single-process
training's, one group per step. Its task is the objective's (``group_objective``): node targets, or
link prediction under ``task=link``, whose owned pairs are those with an owned source.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn

from dygsched.data.temporal_graph import TemporalGraph
from dygsched.engine.objective import build_split, group_objective
from dygsched.engine.strategy import Epoch, IterationStats, MetricValue, RunContext, Strategy
from dygsched.engine.strategy_config import StrategyConfig
from dygsched.planner.plan import Plan, SolverStatus


@dataclass(frozen=True)
class NodeShardConfig(StrategyConfig):
    """The toy strategy has no settings of its own: its configuration names it."""

    strategy: ClassVar[str] = "tests.engine.node_shard_strategy:NodeShardStrategy"

    name: str = "node_shard"


class NodeShardStrategy(Strategy):
    data_kind = TemporalGraph
    predicts_links = True

    def __init__(self, config: NodeShardConfig) -> None:
        super().__init__(config)
        self.done = -1

    def setup(self, run: RunContext) -> None:
        assert isinstance(run.data, TemporalGraph)
        self.graph, self.rank, self.world_size, self.settings = run.data, run.rank, run.world_size, run.settings
        self.split = build_split(self.graph, run.settings)
        cells = [tuple(((k, r),) for r in range(run.world_size)) for k in range(len(self.split.train))]
        self.plan = Plan(tuple(cells), run.world_size, 1, 0.0, 0.0, self.name, SolverStatus.HEURISTIC, 0.0)
        self.owned = torch.arange(self.graph.num_nodes) % run.world_size == run.rank
        run.artifacts.write_plan(self.plan)

    def objective(self, model: nn.Module) -> nn.Module:
        self.loss = group_objective(model, self.graph, self.split, self.settings)  # type: ignore[arg-type]
        return self.loss

    def run_epoch(self, epoch: Epoch) -> Mapping[str, MetricValue]:
        self.loss.start_epoch(epoch.index)
        for i, iteration in enumerate(self.plan.iterations):
            ((group, shard),) = iteration[self.rank]
            assert shard == self.rank
            stats = IterationStats(iteration=i, units=1 if self.rank == 0 else 0)
            start = time.perf_counter()
            loss = self.loss(self.split.train[group].snapshots(self.graph), owned=self.owned)
            epoch.backward(loss, final=True)
            stats.add_loss(loss)  # the ranks' partial losses add up to the group's
            stats.busy_s = time.perf_counter() - start
            epoch.finish_iteration(stats)
        self.done = epoch.index
        return {}

    def evaluate(self, phase: str) -> dict[str, MetricValue]:
        evaluation = self.loss.phase_evaluation(phase)
        with torch.no_grad():
            for group in self.split.phase(phase)[self.rank :: self.world_size]:
                snapshots = group.snapshots(self.graph)
                evaluation.add(self.loss.model(snapshots), snapshots[-1])
        return evaluation.metrics()

    def describe(self) -> dict[str, Any]:
        return {"training_units": sum(len(cell) for it in self.plan.iterations for cell in it)}

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.done}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.done = int(state["epoch"])
