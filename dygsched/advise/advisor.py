"""The advisor: profile the families the strategies need, then price every strategy on every GPU count.

``profile_cases`` runs the bounded profiling (``measure``) once per family and CPU thread count the
targets need; ``targets`` turns the request (GPU counts, nodes, link, GPU, memory) into one
``Target`` per GPU count; ``predict`` prices each strategy there with its family's module, after the
strategy's own check of the data on that many ranks (a strategy that cannot run there gets its
one-line reason instead of a number). ``Advice`` (``advice.py``) ranks and reports them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch

from dygsched.advise import distdy as distdy_pricing
from dygsched.advise import flare, node_memory, snapshot_groups
from dygsched.advise.cases import BLAD, DISTDY, FLARE, NODE_MEMORY, NODE_MEMORY_FAMILIES, REUSE, SEQUENTIAL, StrategyCase
from dygsched.advise.hardware import LOCAL, GPUProfile, compute_scale, gpu_named, link_named
from dygsched.advise.local_link import measure_local_link
from dygsched.advise.measure import (
    describe_device,
    memory_now,
    model_facts,
    optimizer_step_s,
    profile_family,
    rank_baseline_bytes,
    release_freed_memory,
)
from dygsched.advise.pricing import Prediction, Target, rank_threads_here, refused
from dygsched.advise.profile import Profile, StepSample, fingerprint
from dygsched.data.events import EventStream
from dygsched.data.kinds import DynamicData
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.errors import ConfigError, DygschedError

HERE = "here"  # --gpu here: the device the profile measured
# Which strategy of a family profiles it (the first present), so a family's steps are its plainest member's.
PROFILED_BY = {SEQUENTIAL: ("psg", "dygnex_g", "dygnex_l", "esdg"), REUSE: ("greedy",), NODE_MEMORY: ("single", "depcache")}


@dataclass(frozen=True)
class Request:
    """What the user asks: ``gpus`` (rank counts), over ``nodes`` machines, joined by ``link``
    (a table name, ``local`` or GB/s), of GPU ``gpu`` (``here``: the profiled device), each with
    ``gpu_memory`` bytes (``None``: the GPU's, or this device's)."""

    gpus: tuple[int, ...]
    nodes: int = 1
    link: str | None = None
    gpu: str = HERE
    gpu_memory: int | None = None
    plan_time_limit: float = snapshot_groups.PLAN_TIME_LIMIT_S

    def __post_init__(self) -> None:
        if not self.gpus or any(isinstance(g, bool) or not isinstance(g, int) or g < 1 for g in self.gpus):
            raise ConfigError(f"--gpus needs GPU counts of 1 or more, got {', '.join(map(str, self.gpus)) or 'none'}")
        if self.nodes < 1:
            raise ConfigError(f"--nodes must be 1 or more, got {self.nodes}")
        if self.gpu != HERE:
            gpu_named(self.gpu)
        if self.link is not None:
            link_named(self.link, None) if self.link.lower() != LOCAL else None

    @property
    def target_gpu(self) -> GPUProfile | None:
        return None if self.gpu == HERE else gpu_named(self.gpu)

    def cpu_ranks(self, device_kind: str) -> bool:
        """Whether the ranks are CPU processes (a CPU profiled, no GPU named)."""
        return device_kind == "cpu" and self.target_gpu is None

    def link_name(self, device_kind: str) -> str:
        """The link asked for, or the default: this machine's own between CPU ranks on one node,
        NVLink between the GPUs of one node, InfiniBand between nodes."""
        if self.link is not None:
            return self.link
        if self.nodes > 1:
            return "infiniband"
        return LOCAL if self.cpu_ranks(device_kind) else "nvlink"

    def threads(self, cores: int, device_kind: str) -> list[int]:
        """The CPU thread counts the ranks of these targets run with (what profiling must measure)."""
        if not self.cpu_ranks(device_kind):
            return [rank_threads_here(1, cores)]
        return sorted({rank_threads_here(math.ceil(g / self.nodes), cores) for g in self.gpus}, reverse=True)


def representative(cases: Sequence[StrategyCase], family: str) -> StrategyCase:
    """The case whose steps profile ``family``."""
    members = [c for c in cases if c.family == family]
    for name in PROFILED_BY.get(family, ()):
        for case in members:
            if case.name == name:
                return case
    return members[0]


Progress = Callable[[str], None]


def profile_cases(
    cases: Sequence[StrategyCase],
    data_of: Callable[[StrategyCase], DynamicData],
    device: torch.device,
    request: Request,
    steps: int = 8,
    budget_s: float = 8.0,
    progress: Progress | None = None,
    rank_start: str = "spawn",
) -> Profile:
    """Measure every family the ``cases`` need, at the thread counts the request's targets run with;
    ``rank_start``: how the run's launcher starts a CPU rank (``spawn`` or ``forkserver``), which the
    rank's resident set before training is measured in."""
    started = time.perf_counter()
    say = progress or (lambda _: None)
    info = describe_device(device)
    first = cases[0]
    if device.type == "cuda":
        baseline = 0  # the GPU allocator's peak counts tensors alone: each family's own
    else:
        say("measuring a rank's resident set before training")
        ranks_pairs = isinstance(data_of(first), EventStream) or first.run.task == "link"  # evaluated by AP and AUC
        baseline = rank_baseline_bytes(first.run.dataset, first.run.model, ranks_pairs, start_method=rank_start)
    samples: list[StepSample] = []
    family_memory: dict[str, int] = {}
    kernels: dict[str, float] = {}
    facts: dict[str, float] = {}
    step_s: dict[int, float] = {}
    families = list(dict.fromkeys(c.family for c in cases))
    thread_counts = request.threads(info.cores, info.kind)
    parameter_bytes = 0
    for family in families:
        case = representative(cases, family)
        data = data_of(case)
        facts.update(model_facts(case, data, device))
        for threads in thread_counts:
            say(f"profiling {family} ({case.name}) on {threads} thread(s)")
            release_freed_memory()
            family_memory.setdefault(family, memory_now(device))
            measured, counted, found = profile_family(family, case, data, device, threads, steps, budget_s)
            # after the family's steps, not before: the first work at a new thread count pays the thread
            # pool's waking (on a loaded 2-core machine, Adam's step took 80-200 ms at 2 threads after a
            # 1-thread phase, against under 1 ms warm), and the fastest over families (the same optimizer)
            with _threads(threads):
                seconds, parameter_bytes = optimizer_step_s(case, data, device)
                step_s[threads] = min(step_s.get(threads, seconds), seconds)
            if not measured:
                raise DygschedError(f"profiling {family} ({case.name}) timed no step: the data gives it too few units")
            samples += measured
            facts.update(found)
            if counted:  # per unit of work, from the units the counted step itself trained
                kernels.setdefault(family, counted)
    link = None
    if request.link_name(info.kind).lower() == LOCAL and max(request.gpus) > 1:
        say("measuring the link between two ranks of this machine")
        link = measure_local_link()
    settings = first.run
    return Profile(
        dataset=str(settings.dataset.name),
        model=str(settings.model.name),
        task=str(settings.task or "default"),
        fingerprint=case_fingerprint(first),
        device=info,
        parameter_bytes=parameter_bytes,
        samples=tuple(samples),
        optimizer_step_s=step_s,
        baseline_memory_bytes=baseline,
        family_memory_bytes=family_memory,
        local_link=link,
        facts=facts,
        kernel_counts=kernels,
        seconds=time.perf_counter() - started,
    )


class _threads:
    def __init__(self, count: int) -> None:
        self.count, self.before = count, torch.get_num_threads()

    def __enter__(self) -> None:
        torch.set_num_threads(self.count)

    def __exit__(self, *exc: Any) -> None:
        torch.set_num_threads(self.before)


def case_fingerprint(case: StrategyCase) -> str:
    """The settings a profile answers for: the model's, the data's, the window and the task."""
    run = case.run
    return fingerprint(run.model.params, run.dataset.params, {"window": run.window, "task": run.task, "optim": run.optim.params})


def check_profile(profile: Profile, case: StrategyCase, families: Sequence[str], threads: Sequence[int]) -> None:
    """A profile given with ``--profile`` must be of this model and data, and hold every family needed."""
    run = case.run
    if profile.model != run.model.name or profile.fingerprint != case_fingerprint(case):
        raise ConfigError(
            f"the profile was measured for model={profile.model} on dataset={profile.dataset} (settings {profile.fingerprint}), "
            f"not model={run.model.name} on dataset={run.dataset.name} with these settings ({case_fingerprint(case)}): "
            "measure this one with --profile-only"
        )
    missing = [family for family in families if family not in profile.families()]
    if missing:
        raise ConfigError(
            f"the profile has no steps of {', '.join(missing)} (it measured {', '.join(sorted(profile.families())) or 'none'}): "
            "measure again with --profile-only for these strategies"
        )
    del threads  # a missing thread count is read at the nearest one measured (Profile.of)


def targets(profile: Profile, request: Request) -> list[Target]:
    """One target per GPU count of the request."""
    device = profile.device
    gpu = request.target_gpu
    scale = compute_scale(device.kind, device.name, device.host_bandwidth_gbps, gpu)
    link = link_named(request.link_name(device.kind), profile.local_link) if max(request.gpus) > 1 else None
    cpu_ranks = request.cpu_ranks(device.kind)
    out = []
    for count in request.gpus:
        if request.gpu_memory is not None:
            memory = request.gpu_memory
        elif gpu is not None:
            memory = gpu.memory_bytes
        elif cpu_ranks:  # the ranks of a node share its memory
            memory = device.memory_bytes // max(1, math.ceil(count / request.nodes))
        else:
            memory = device.memory_bytes
        chosen = link if link is not None else link_named("nvlink")  # one rank moves nothing: any link prices it
        out.append(Target(count, request.nodes, chosen, scale, int(memory), cpu_ranks, device.cores, gpu.name if gpu else ""))
    return out


def applicability(case: StrategyCase, data: DynamicData, ranks: int) -> str:
    """Why ``case`` cannot run on ``ranks`` ranks (its own check of the data), or ``""``."""
    try:
        case.strategy.check(data, case.run, ranks)
    except DygschedError as exc:
        return str(exc)
    return ""


def price(case: StrategyCase, data: DynamicData, profile: Profile, target: Target, time_limit: float) -> Prediction:
    """``case`` on ``target``, by its family's module."""
    from dygsched.engine.distdy import DistDyStrategy
    from dygsched.engine.flare import FlareStrategy
    from dygsched.engine.node_memory.strategy import NodeMemoryStrategy

    settings = case.run
    if case.family in (SEQUENTIAL, REUSE, BLAD):
        return snapshot_groups.price(case, cast(TemporalGraph, data), profile, target, time_limit)
    if case.family == FLARE:
        return flare.price(case.name, cast(FlareStrategy, case.strategy), cast(TemporalGraph, data), settings, profile, target)
    if case.family == DISTDY:
        strategy = cast(DistDyStrategy, case.strategy)
        return distdy_pricing.price(case.name, strategy, cast(TemporalGraph, data), settings, profile, target)
    if case.family in NODE_MEMORY_FAMILIES:
        return node_memory.price(
            case.name, cast(NodeMemoryStrategy, case.strategy), cast(EventStream, data), settings, profile, target
        )
    raise ValueError(f"no price for family {case.family}")


def predict(
    cases: Sequence[StrategyCase],
    data_of: Callable[[StrategyCase], DynamicData],
    profile: Profile,
    request: Request,
    progress: Progress | None = None,
) -> list[Prediction]:
    """Every strategy on every GPU count of the request (a refusal where it cannot run there)."""
    say = progress or (lambda _: None)
    out = []
    for target in targets(profile, request):
        say(f"pricing {len(cases)} strategies on {target.gpus} GPU(s)")
        for case in cases:
            data = data_of(case)
            reason = applicability(case, data, target.gpus)
            if reason:
                out.append(refused(case.name, case.family, target.gpus, reason))
                continue
            try:
                out.append(price(case, data, profile, target, request.plan_time_limit))
            except DygschedError as exc:
                out.append(refused(case.name, case.family, target.gpus, str(exc)))
    return out


def families_needed(cases: Sequence[StrategyCase]) -> list[str]:
    return list(dict.fromkeys(c.family for c in cases))


Facts = Mapping[str, float]
