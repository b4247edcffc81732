"""Snapshot-group strategies: PSG, ESDG, BLAD, DyGNeX and REAL are this one strategy, configured.

Units of work are sliding groups of ``window`` consecutive snapshots, split by time into train,
validation and test; a training sample is a group predicting its last snapshot's targets. The
strategies differ in

* ``planner`` (``PlannerConfig``): which groups a rank trains in which iteration (PSG: one per
  rank in time order; BLAD: consecutive pairs round-robin; DyGNeX and REAL: balanced cross-group
  plans, REAL with its reuse table);
* ``timeline`` (``TimelineConfig``): planning at once from the cost model, or REAL's profile-then-
  switch phases;
* ``executor`` (a ``GroupExecutor``): how a rank trains its groups of an iteration (one after
  another, REAL's reuse engine, BLAD's two-stage pipeline, ESDG's snapshots split over ranks).

The loop here is shared: per plan iteration the executor trains, the time it took less what it
spent waiting on and talking to other ranks is ``busy_s``, and ``Epoch.finish_iteration`` takes the
optimizer step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import torch
from torch import nn

from dygsched.data.groups import SnapshotGroup
from dygsched.data.kinds import DynamicData
from dygsched.data.temporal_graph import Task, TemporalGraph
from dygsched.engine.objective import PhaseEvaluation, build_split, check_task, group_objective
from dygsched.engine.run_config import RunConfig
from dygsched.engine.snapshot_groups.config import SnapshotGroupConfig, TimelineConfig
from dygsched.engine.snapshot_groups.executor import EpochRun, GroupExecutor, SequentialExecutor, fetch
from dygsched.engine.snapshot_groups.streams import pinned_graph
from dygsched.engine.snapshot_groups.timeline import Timeline
from dygsched.engine.strategy import Epoch, IterationStats, MetricValue, RunContext, Strategy
from dygsched.engine.timing import timed
from dygsched.errors import ConfigError, ScheduleError
from dygsched.models.dgnn import DGNN, State
from dygsched.models.inherited_states import InheritedStates
from dygsched.planner.plan import Plan
from dygsched.planner.planning import PlannerConfig, load_plan_file


class SnapshotGroupStrategy(Strategy):
    """Sliding snapshot groups, planned onto ranks and iterations, trained by an executor."""

    data_kind = TemporalGraph
    predicts_links = True  # under task=link (dygsched.engine.link_objective)
    link_procedures = ("windows", "utg")  # utg: one window after another, each from the state the one before left

    def __init__(self, config: SnapshotGroupConfig) -> None:
        super().__init__(config)
        self.planner: PlannerConfig = config.planner
        self.timeline_config: TimelineConfig = config.timeline
        executor = config.executor.build()
        if not isinstance(executor, GroupExecutor):
            raise ConfigError(f"sched={config.name}: sched.executor '{config.executor.target}' is not a GroupExecutor")
        self.executor: GroupExecutor = executor
        self.exact = executor.exact
        self.plan: Plan[int] | None = None
        self._last_epoch = -1
        # UTG's evaluation: where the last phase streamed to, the state it left there, and the parameters' versions
        self._streamed: tuple[int, list[State | None], tuple[int, ...]] | None = None

    def check(self, data: DynamicData, settings: RunConfig, world_size: int) -> None:
        super().check(data, settings, world_size)
        assert isinstance(data, TemporalGraph)
        split = build_split(data, settings)
        check_task(data, split, settings)
        if settings.link.procedure == "utg" and data.task is Task.LINK and not self.trains_in_time_order(world_size):
            raise ConfigError(
                f"link.procedure=utg carries each window's state into the next (UTG's training), so the windows train one "
                f"after another in time order: sched=psg at world_size=1 does, sched={self.name} at {world_size} rank(s) does not"
            )
        self.executor.check(settings.window, world_size, self.timeline_config.profile_epochs)
        if world_size > len(split.train):
            raise ConfigError(
                f"world_size={world_size} is larger than the {len(split.train)} training groups: some ranks would never train"
            )
        try:
            if self.planner.plan_file:
                load_plan_file(self.planner.plan_file, list(range(len(split.train))), world_size, self.planner.capacity)
            self.planner.check(world_size)
        except ScheduleError as exc:
            raise ConfigError(f"sched={self.name}: {exc}") from None

    def trains_in_time_order(self, world_size: int) -> bool:
        """Whether every iteration trains one group, in time order, one after another (PSG on one rank)."""
        return (
            world_size == 1
            and type(self.executor) is SequentialExecutor
            and self.planner.solver == "psg"
            and self.planner.capacity == 1
            and not self.planner.plan_file
        )

    @property
    def carries_states(self) -> bool:
        """UTG's procedure (``link.procedure=utg``) on a link graph."""
        return self.settings.link.procedure == "utg" and self.graph.task is Task.LINK

    def check_model(self, model: nn.Module) -> None:
        if isinstance(model, DGNN):
            try:
                self.executor.check_model(model)
            except ConfigError as exc:
                raise ConfigError(f"sched={self.name}: {exc}") from None

    def setup(self, run: RunContext) -> None:
        assert isinstance(run.data, TemporalGraph)
        self.graph = pinned_graph(run.data, run.device)  # page-locked on CUDA: the groups' copies are asynchronous
        self.split = build_split(self.graph, run.settings)
        self.rank, self.world_size, self.device = run.rank, run.world_size, run.device
        self.settings = run.settings
        groups = self.split.train
        self.timeline = Timeline(
            self.planner,
            self.timeline_config,
            [(g.start, g.stop) for g in groups],
            [g.work(self.graph) for g in groups],
            run.world_size,
            run.rank,
            run.artifacts,
            merges_pairs=self.executor.merges_pairs,
        )

    def objective(self, model: nn.Module) -> nn.Module:
        # the snapshot models are DGNNs
        self._objective = group_objective(cast(DGNN, model), self.graph, self.split, self.settings)
        return self._objective

    def run_epoch(self, epoch: Epoch) -> Mapping[str, MetricValue]:
        if self.plan is None:
            self.plan = self.timeline.initial_plan()
        plan = self.timeline.plan_for(epoch.index, self.plan)
        self._objective.start_epoch(epoch.index)
        profiler = self.timeline.profiler_for(epoch.index)
        run = EpochRun(
            self._objective,
            self.graph,
            self.split.train,
            plan.iterations,
            self.rank,
            self.world_size,
            self.device,
            epoch,
            profiler,
            inherited={} if self.carries_states else None,  # the states reset at each epoch's start
        )
        comm_seconds = []
        epoch.expect_steps(len(plan.iterations), "iteration")
        with self.executor.epoch_scope(run):
            for i, iteration in enumerate(plan.iterations):
                stats = IterationStats(iteration=i)
                with timed(self.device) as step:
                    self.executor.train_iteration(run, iteration, stats)
                stats.busy_from(step)
                epoch.finish_iteration(stats)
                comm_seconds.append(stats.comm_s)
        self.plan = self.timeline.after_epoch(epoch.index, profiler, comm_seconds, epoch.record) or self.plan
        self._last_epoch = epoch.index
        return self.executor.epoch_metrics()

    def evaluate(self, phase: str) -> dict[str, MetricValue]:
        """The task's loss and metrics over every group of ``phase``, sharded over ranks."""
        objective = self._objective
        objective.eval()
        evaluation = objective.phase_evaluation(phase)
        groups = self.split.phase(phase)
        with torch.no_grad():
            if self.carries_states:  # UTG's: every snapshot in order from the first, scoring the next one's pairs
                self._stream(evaluation, groups)
                objective.train()
                return evaluation.metrics(shared=True)
            for group in groups[self.rank :: self.world_size]:
                snapshots, _ = fetch(self.graph, group, self.device)
                evaluation.add(objective.model(snapshots), snapshots[-1])
        objective.train()
        return evaluation.metrics()

    def _stream(self, evaluation: PhaseEvaluation, groups: tuple[SnapshotGroup, ...]) -> None:
        """UTG's evaluation (``link.procedure=utg``): the snapshots in order, each group's last output
        scored. It starts from the first snapshot, or, where the phase streamed just before under the
        same parameters ended at or before this one's first output (test after validation, as the
        worker calls them), from the state that one left: the same numbers, and the test's time is the
        test snapshots' own, as UTG times it."""
        model = self._objective.model
        version = tuple(p._version for p in self._objective.parameters())
        start, saved = 0, {}
        left = self._streamed
        if left is not None and left[2] == version and left[0] <= groups[0].stop - 1:
            start, saved = left[0], {left[0]: left[1]}
        stop = groups[-1].stop
        snapshots, _ = fetch(self.graph, SnapshotGroup(-1, start, stop), self.device)
        hooks = InheritedStates(model, range(start, stop), saved)
        model.unroll(snapshots, hooks=hooks)
        for group in groups:
            evaluation.add(model.readout(hooks.outputs[group.stop - 1 - start]), snapshots[group.stop - 1 - start])
        self._streamed = (stop, saved[stop], version)

    def lr_multiplier(self, epoch: int) -> float:
        return self.timeline.lr_multiplier(epoch)

    def describe(self) -> dict[str, Any]:
        facts: dict[str, Any] = {
            "num_snapshots": self.graph.num_snapshots,
            "num_nodes": self.graph.num_nodes,
            "training_units": len(self.split.train),
        }
        if self.plan is not None:
            facts.update(plan_iterations=self.plan.num_iterations, plan_predicted_epoch_time=self.plan.predicted_epoch_time)
            unmeasured = self._plan_not_in_seconds()
            if (
                unmeasured is not None
            ):  # not comparable with epoch_time_s: missing, with why, never a figure that reads as seconds
                facts.update(plan_predicted_epoch_time=None, missing={"plan_predicted_epoch_time": unmeasured})
        return facts

    def _plan_not_in_seconds(self) -> str | None:
        """Why the plan's predicted epoch time is not in this run's seconds, or None when it is: only a
        plan solved on the group times its profiling epochs measured (``sched.timeline.profile_epochs``)
        predicts seconds; the cost model's times (PSG, and any plan solved before the first epoch) are
        relative sizes, and a plan file's are whatever its author wrote."""
        if self.planner.plan_file:
            return "the plan was read from sched.planner.plan_file, whose times are not this run's"
        if self.timeline_config.profile_epochs == 0 or self._last_epoch < self.timeline_config.profile_epochs - 1:
            return (
                "the plan was solved on the cost model's group sizes, not on measured seconds "
                "(sched.timeline.profile_epochs > 0 solves it on profiled times)"
            )
        return None

    def state_dict(self) -> dict[str, Any]:
        if self.plan is None:
            return {}
        return self.timeline.state(self._last_epoch, self.plan)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state:
            self.plan = self.timeline.restore(state)
            self._last_epoch = int(state["epoch"])
