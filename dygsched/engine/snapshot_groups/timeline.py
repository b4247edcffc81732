"""When a snapshot-group strategy plans: at once from the cost model, or REAL's three phases.

For ``profile_epochs = P > 0`` (REAL section 3.3) the first ``P`` epochs train with the PSG plan
(its ranks rotated each epoch) and time every group (with ``profile_pairs`` and a reuse engine
that merges groups, every other one trains merged neighbour pairs and times them instead); at the
end of epoch ``P-1`` rank 0 merges the ranks' profiles, fits the cost model, solves the configured
plan on the measured group times and broadcasts it; epochs ``P`` onwards train with it. Nothing
restarts: the model and optimizer carry on. The switch epoch, the solve time and the profile
(``profile.json``, with ``cost_model.json`` for ``dygsched plan``/``simulate``) are recorded.
With ``P = 0`` the plan is solved once, on cost-model times, before the first epoch.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from dygsched.engine import comm
from dygsched.engine.snapshot_groups.config import TimelineConfig
from dygsched.engine.snapshot_groups.profiler import Profiler
from dygsched.engine.strategy import Artifacts, broadcast_from_rank0
from dygsched.errors import ConfigError
from dygsched.planner.plan import Plan
from dygsched.planner.planning import PlannerConfig, load_plan_file, plan_units, unit_times_from_sizes
from dygsched.planner.profile import build_profile, merge
from dygsched.planner.reuse_table import Span, capped_reuse_pairs, pair_profiling_plan, reusable_from_pairs


class Timeline:
    """Plans a strategy's groups and decides, epoch by epoch, which plan trains and whether to profile.

    ``spans``: each training group's ``(start, stop)`` snapshots; ``sizes``: its (nodes, edges), the
    cost model's inputs; ``merges_pairs``: whether the executor trains overlapping groups of a rank
    as one chain (then pair profiling can measure REAL eq. 17's table).
    """

    def __init__(
        self,
        planner: PlannerConfig,
        config: TimelineConfig,
        spans: Sequence[Span],
        sizes: Sequence[tuple[int, int]],
        world_size: int,
        rank: int,
        artifacts: Artifacts,
        merges_pairs: bool = False,
    ) -> None:
        self.planner, self.config = planner, config
        self.spans, self.sizes = list(spans), list(sizes)
        self.world_size, self.rank, self.artifacts = world_size, rank, artifacts
        self.merges_pairs = merges_pairs
        self._profiler: Profiler | None = None

    @property
    def profile_epochs(self) -> int:
        return self.config.profile_epochs

    @property
    def profiles_pairs(self) -> bool:
        """Whether profiling also times merged neighbour pairs (opt-in ``profile_pairs``): it needs the
        reuse table, an engine that merges overlapping groups, capacity 2 and two profiling epochs. A
        pair's saving is the difference of two measured times, so it is only as good as the machine is quiet."""
        return (
            self.config.profile_pairs
            and self.planner.reuse_table
            and self.merges_pairs
            and self.planner.capacity >= 2
            and self.profile_epochs >= 2
        )

    def initial_plan(self) -> Plan[int]:
        """The first plan (rank 0 solves, every rank receives it): the profiling PSG plan, a plan file, or the solved plan."""
        planner = self.planner.for_profiling() if self.profile_epochs else self.planner
        plan = broadcast_from_rank0(self._solve(planner) if self.rank == 0 else None)
        self.artifacts.write_plan(plan, "plan_profiling.json" if self.profile_epochs else "plan.json")
        return plan

    def _solve(
        self,
        planner: PlannerConfig,
        times: Sequence[float] | None = None,
        allreduce: float | None = None,
        reusable: Mapping[int, float] | None = None,
    ) -> Plan[int]:
        if planner.plan_file:
            return load_plan_file(planner.plan_file, list(range(len(self.spans))), self.world_size, planner.capacity)
        if times is None:
            times = unit_times_from_sizes(planner, self.sizes)
        pairs = capped_reuse_pairs(self.spans, times, reusable, planner.costs.reuse_ratio) if planner.reuse_table else None
        return plan_units(planner, times, self.world_size, allreduce, pairs)

    def plan_for(self, epoch: int, plan: Plan[int]) -> Plan[int]:
        """During profiling, rotate the PSG plan's ranks every epoch so each group is timed on
        several ranks: a rank that runs slower (a busier core, a hotter GPU) then does not pass
        for slower groups. With pair profiling, every other profiling epoch trains merged
        neighbour pairs instead, to time them."""
        if epoch >= self.profile_epochs:
            return plan
        if self.profiles_pairs and epoch % 2 == 1:
            return pair_profiling_plan(len(self.spans), self.world_size, (epoch // 2) % 2).rotated(epoch)
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
        return self.config.lr_factor(self.planner.capacity) if epoch >= self.profile_epochs else 1.0

    def state(self, epoch: int, plan: Plan[int]) -> dict[str, Any]:
        """What a checkpoint after ``epoch`` keeps: the plan in use and whether it already replaced the profiling plan."""
        return {"epoch": epoch, "plan": plan.to_dict(), "switched": 0 < self.profile_epochs <= epoch + 1}

    def restore(self, state: Mapping[str, Any]) -> Plan[int]:
        """The plan to continue with from ``state()``, without planning again.

        After the switch the checkpoint holds the solved plan and later epochs do not profile
        (``profiler_for`` is off from ``profile_epochs`` on); stopped during profiling, the run
        continues the profiling epochs with the same PSG plan and switches on schedule.
        """
        plan = cast("Plan[int]", Plan.from_dict(dict(state["plan"])))  # state() wrote a plan of group indexes
        if plan.num_gpus != self.world_size:
            raise ConfigError(
                f"cannot resume: the checkpoint's plan is for {plan.num_gpus} ranks, this run has {self.world_size}"
            )
        if bool(state["switched"]) != (0 < self.profile_epochs <= int(state["epoch"]) + 1):
            raise ConfigError("cannot resume: the checkpoint was written with another sched.timeline.profile_epochs")
        return plan

    def after_epoch(
        self, epoch: int, profiler: Profiler | None, comm_seconds: list[float], record: Callable[[str, str, float], None]
    ) -> Plan[int] | None:
        """At the end of the last profiling epoch: the new plan (every rank), else None."""
        if profiler is None or epoch != self.profile_epochs - 1:
            return None
        gathered = comm.gather_object(profiler.measurements(), dst=0) or []  # every rank's, on rank 0
        plan = None
        if self.rank == 0:
            sizes = dict(enumerate(self.sizes))
            profile = build_profile(
                merge([g["samples"] for g in gathered]),
                sizes,
                merge([g["reusable"] for g in gathered]),
                merge([g["pairs"] for g in gathered]),
            )
            if profile.pair_seconds:  # what merging really saved, rather than the first layer's forward alone
                measured_reusable = reusable_from_pairs(profile.group_seconds, profile.pair_seconds, self.spans)
                profile = replace(profile, reusable_seconds=measured_reusable or profile.reusable_seconds)
            self.artifacts.write_json("profile.json", profile.to_dict())
            self.artifacts.write_json("cost_model.json", profile.to_dict()["cost_model"])
            times = [profile.group_seconds[k] for k in range(len(self.spans))]
            alpha = statistics.median(comm_seconds) if comm_seconds else None
            plan = self._solve(self.planner, times, alpha, profile.reusable_seconds or None)
            self.artifacts.write_plan(plan)
            record("plan", "switch_epoch", epoch + 1)
            record("plan", "solve_time_s", plan.solve_time_s)
            record("plan", "predicted_epoch_time_s", plan.predicted_epoch_time)
            record("plan", "profile_fit_r2", profile.r2)
        return broadcast_from_rank0(plan)
