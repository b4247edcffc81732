"""REAL's three-phase timeline (section 3.3): train with PSG at once while profiling, then switch.

For ``sched.profile_epochs = P > 0`` the first ``P`` epochs train with the PSG plan (its ranks
rotated each epoch) and time every group (with measured type II reuse, every other one trains
merged neighbour pairs and times them instead: ``planning.profiles_pairs``); at the end of epoch ``P-1`` rank 0 merges the ranks' profiles, fits the cost model, solves
the configured plan on the measured group times and broadcasts it; epochs ``P`` onwards train with
it. Nothing restarts: the model and optimizer carry on. The switch epoch, the solve time and the
profile (``profile.json``, with ``cost_model.json`` for ``dygsched plan``/``simulate``) are recorded.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import torch.distributed as dist

from dygsched.data.groups import SnapshotGroup
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.engine.planning import lr_factor, make_plan, pair_profiling_plan, profiles_pairs, profiling_config, reusable_from_pairs
from dygsched.engine.profiler import Profiler, build_profile, merge
from dygsched.errors import ConfigError
from dygsched.metrics.atomic import write_json
from dygsched.metrics.recorder import MetricRecorder
from dygsched.metrics.run_folder import RunFolder
from dygsched.sched.plan import Plan


def broadcast_from_rank0(value: Any) -> Any:
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


@dataclass
class Timeline:
    sched_cfg: Mapping[str, Any]
    graph: TemporalGraph
    train_groups: tuple[SnapshotGroup, ...]
    world_size: int
    rank: int
    folder: RunFolder
    _profiler: Profiler | None = field(default=None, init=False, repr=False)

    @property
    def profile_epochs(self) -> int:
        return max(0, int(self.sched_cfg.get("profile_epochs", 0) or 0))

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def initial_plan(self) -> Plan:
        cfg = profiling_config(self.sched_cfg) if self.profile_epochs else self.sched_cfg
        plan = broadcast_from_rank0(make_plan(cfg, self.graph, self.train_groups, self.world_size) if self.is_main else None)
        if self.is_main:  # the profiling plan is kept beside the plan that replaces it
            self.folder.write_plan(plan.to_dict(), "plan_profiling.json" if self.profile_epochs else "plan.json")
        return plan

    def plan_for(self, epoch: int, plan: Plan) -> Plan:
        """During profiling, rotate the PSG plan's ranks every epoch so each group is timed on
        several ranks: a rank that runs slower (a busier core, a hotter GPU) then does not pass
        for slower groups. When the plan will use measured type II reuse (``profiles_pairs``),
        every other profiling epoch trains merged neighbour pairs instead, to time them."""
        if epoch >= self.profile_epochs:
            return plan
        if profiles_pairs(self.sched_cfg) and epoch % 2 == 1:
            return pair_profiling_plan(len(self.train_groups), self.world_size, (epoch // 2) % 2).rotated(epoch)
        return plan.rotated(epoch)

    def profiler_for(self, epoch: int) -> Profiler | None:
        """One profiler for all profiling epochs, so each group's time is a median over them.

        (A run resumed during profiling measures only the profiling epochs it still runs.)
        """
        if epoch >= self.profile_epochs:
            return None
        if self._profiler is None:
            self._profiler = Profiler()
        return self._profiler

    def lr_multiplier(self, epoch: int) -> float:
        return lr_factor(self.sched_cfg) if epoch >= self.profile_epochs else 1.0

    def state(self, epoch: int, plan: Plan) -> dict[str, Any]:
        """What a checkpoint after ``epoch`` keeps: the plan in use and whether it already replaced the profiling plan."""
        return {"epoch": epoch, "plan": plan.to_dict(), "switched": 0 < self.profile_epochs <= epoch + 1}

    def restore(self, state: Mapping[str, Any]) -> Plan:
        """The plan to continue with from ``state()``, without planning again.

        After the switch the checkpoint holds the solved plan and later epochs do not profile
        (``profiler_for`` is off from ``profile_epochs`` on); stopped during profiling, the run
        continues the profiling epochs with the same PSG plan and switches on schedule.
        """
        plan = Plan.from_dict(dict(state["plan"]))
        if plan.num_gpus != self.world_size:
            raise ConfigError(f"cannot resume: the checkpoint's plan is for {plan.num_gpus} ranks, this run has {self.world_size}")
        if bool(state["switched"]) != (0 < self.profile_epochs <= int(state["epoch"]) + 1):
            raise ConfigError("cannot resume: the checkpoint was written with another sched.profile_epochs")
        return plan

    def after_epoch(self, epoch: int, profiler: Profiler | None, comm_seconds: list[float], recorder: MetricRecorder) -> Plan | None:
        """At the end of the last profiling epoch: the new plan (every rank), else None."""
        if profiler is None or epoch != self.profile_epochs - 1:
            return None
        gathered: list[Any] = [None] * self.world_size if self.is_main else []
        measured = {"samples": dict(profiler.samples), "reusable": dict(profiler.reusable), "pairs": dict(profiler.pairs)}
        dist.gather_object(measured, gathered if self.is_main else None, dst=0)
        plan = None
        if self.is_main:
            sizes = {k: group.work(self.graph) for k, group in enumerate(self.train_groups)}
            profile = build_profile(
                merge([g["samples"] for g in gathered]), sizes, merge([g["reusable"] for g in gathered]), merge([g["pairs"] for g in gathered])
            )
            if profile.pair_seconds:  # what merging really saved, rather than the first layer's forward alone
                measured_reusable = reusable_from_pairs(profile.group_seconds, profile.pair_seconds, self.train_groups)
                profile = replace(profile, reusable_seconds=measured_reusable or profile.reusable_seconds)
            write_json(self.folder.path / "profile.json", profile.to_dict())
            write_json(self.folder.path / "cost_model.json", profile.to_dict()["cost_model"])
            times = [profile.group_seconds[k] for k in range(len(self.train_groups))]
            alpha = statistics.median(comm_seconds) if comm_seconds else None
            plan = make_plan(self.sched_cfg, self.graph, self.train_groups, self.world_size, times, alpha, profile.reusable_seconds)
            self.folder.write_plan(plan.to_dict())
            recorder.add(epoch, "plan", "switch_epoch", epoch + 1)
            recorder.add(epoch, "plan", "solve_time_s", plan.solve_time_s)
            recorder.add(epoch, "plan", "predicted_epoch_time_s", plan.predicted_epoch_time)
            recorder.add(epoch, "plan", "profile_fit_r2", profile.r2)
        return broadcast_from_rank0(plan)
