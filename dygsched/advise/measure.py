"""Profiling on the device at hand: a family's real steps, timed, on one rank, for a bounded time.

Each family is profiled by running a strategy of it for a few optimizer steps in this process, on
one rank and without a process group (every collective then returns at once), through the same
``Strategy.run_epoch`` and ``Epoch.finish_iteration`` a run uses: the step's wall time from one
optimizer step's end to the next's is a step in the run's units. The worker's per-step callback is
where the step budget ends the epoch early (``_Enough``). A snapshot-group strategy trains the plan
given here instead of its own: groups picked across the size range (and merged pairs for REAL's
reuse, consecutive pairs for BLAD's pipeline), so a few steps span the cost curve. The first step of
each family pays its warm-up (allocations, REAL's fitted cost curves, numba's compilation) and is
dropped. One step per family runs under a dispatch mode that counts the kernels it launches.

Memory per step is the GPU allocator's peak on a GPU and the process's peak resident set on a CPU
(both reset before each step, as the worker resets them before each epoch).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from dygsched.advise.cases import BLAD, DISTDY, FLARE, NODE_MEMORY_FAMILIES, REUSE, SEQUENTIAL, StrategyCase
from dygsched.advise.profile import DeviceInfo, StepSample
from dygsched.data.dataset_config import DatasetConfig
from dygsched.data.kinds import DynamicData
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.engine.build import build_model, build_optimizer, build_strategy
from dygsched.engine.distributed import gpu_peak_allocated, peak_rss, reset_memory_peaks
from dygsched.engine.gradient_sync import GradientSync
from dygsched.engine.strategy import Artifacts, Epoch, IterationStats, RunContext, Strategy
from dygsched.engine.worker import seed_everything
from dygsched.planner.plan import Plan, SolverStatus
from dygsched.typed_config import Part

WARMUP_STEPS = 1
MIN_TIMED_STEPS = 4  # the budget ends a family only after these many timed steps past the warm-up
COUNTED_STEP = 2  # the step run under the kernel counter (its time is not a step's): after two timed steps


class _Enough(Exception):
    """The step budget is spent: ends the profiled epoch."""


class KernelCounter(TorchDispatchMode):
    """Counts the operators dispatched to a device backend (each one kernel on a GPU)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.count += 1
        return func(*args, **(kwargs or {}))


# ---- the device ------------------------------------------------------------------------------------


def host_bandwidth_gbps(megabytes: int = 128, repeats: int = 3) -> float:
    """Host memory bandwidth as a copy reads and writes it (GB/s), the best of ``repeats``."""
    source = torch.ones(megabytes * 2**20 // 4)
    target = torch.empty_like(source)
    best = math.inf
    for _ in range(repeats + 1):
        start = time.perf_counter()
        target.copy_(source)
        best = min(best, time.perf_counter() - start)
    return 2 * source.numel() * 4 / best / 1e9


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "CPU"


def describe_device(device: torch.device) -> DeviceInfo:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    bandwidth = host_bandwidth_gbps()
    if device.type == "cuda":
        properties = torch.cuda.get_device_properties(device)
        return DeviceInfo("cuda", str(properties.name), cores, int(properties.total_memory), bandwidth)
    memory = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")) if hasattr(os, "sysconf") else 0
    return DeviceInfo("cpu", cpu_name(), cores, memory, bandwidth)


def memory_now(device: torch.device) -> int:
    """What the process holds now: the GPU allocator's bytes, or the resident set."""
    if device.type == "cuda":
        return int(torch.cuda.memory_allocated(device))
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def release_freed_memory() -> None:
    """Hand what the process freed back to the system (so the resident set before a family's set-up is
    what it holds, not what earlier families left in the allocator's free lists)."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the resident set keeps what was freed
        pass


def _baseline_rank(index: int, dataset: DatasetConfig, model: Part, out: str, ranks_pairs: bool) -> None:  # pragma: no cover
    """A fresh process as a rank is from its second epoch on: the worker's modules, the data, the
    model, and the library code its first epoch's end touched (``touch_epoch_end``)."""
    del index
    import dygsched.engine.worker  # noqa: F401 (what a rank imports)
    from dygsched.data.loading import load_data

    torch.set_num_threads(1)
    data = load_data(dataset)
    built = build_model(model, data)
    touch_epoch_end(built, ranks_pairs, Path(out).parent)
    del built
    Path(out).write_text(json.dumps({"rss": memory_now(torch.device("cpu"))}))


def touch_epoch_end(model: torch.nn.Module, ranks_pairs: bool, folder: Path) -> None:
    """What a rank's first epoch's end brings into its resident set, and every later epoch's peak
    keeps: the evaluation's ranking metrics (scikit-learn's, with SciPy: about 68 MB in a rank forked
    from the launcher's fork server, measured) where it scores pairs or labels, the epoch's rows
    written as Parquet (pyarrow's writer), the checkpoint's serialisation. Each on a tiny input:
    what stays is the code and the modules, not the data."""
    import io

    import numpy as np

    from dygsched.metrics.atomic import write_parquet
    from dygsched.metrics.recorder import MetricRecorder

    if ranks_pairs:
        from dygsched.metrics.link_prediction import ranking_metrics

        ranking_metrics(np.array([1.0, 0.2]), np.array([0.5, 0.1]))
    recorder = MetricRecorder("baseline", 0)
    recorder.add(1, "train", "loss", 0.5)
    write_parquet(folder / "rows.parquet", MetricRecorder.frame(recorder.take()))
    torch.save(model.state_dict(), io.BytesIO())


def rank_baseline_bytes(
    dataset: DatasetConfig, model: Part, ranks_pairs: bool, timeout_s: float = 120.0, start_method: str = "spawn"
) -> int:
    """The resident set of a process that imported what a rank imports, loaded the data, built the
    model and touched what its first epoch's end touches (``ranks_pairs``: its evaluation scores
    pairs or labels by AP and AUC): where a CPU rank's peak starts in its second and later epochs
    (this process holds every strategy's configuration besides). ``start_method`` as the launcher
    starts its ranks: a rank forked from the local launcher's fork server (``forkserver``) holds only
    the library pages it touched, a fresh interpreter (``spawn``) every page its imports touched (for
    TGCN on Twitter-Tennis, 470 MB against a forked rank's 378 MB peak over a whole epoch)."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as folder:
        out = str(Path(folder) / "rss.json")
        context = mp.start_processes(
            _baseline_rank, args=(dataset, model, out, ranks_pairs), nprocs=1, start_method=start_method, join=False
        )
        deadline = time.monotonic() + timeout_s
        while not context.join(timeout=0.5):
            if time.monotonic() > deadline:
                for process in context.processes:
                    process.kill()
                raise TimeoutError("measuring a rank's resident set took too long")
        return int(json.loads(Path(out).read_text())["rss"])


def _peak(device: torch.device, resettable: bool) -> int | None:
    gpu = gpu_peak_allocated(device)
    if gpu is not None:
        return gpu
    return peak_rss() if resettable else None


# ---- steps -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepPlan:
    """What a profiled step trains and what its size features are: ``units`` (a snapshot-group
    plan's groups, trained by the one rank), its ``features`` and a ``label``."""

    units: tuple[int, ...]
    features: tuple[float, ...]
    label: str


@dataclass
class _Steps:
    """The records of one profiled run, one entry per step in the order the plan gives them (the
    step that ran under the kernel counter is NaN seconds and no memory: its time is not a step's)."""

    seconds: list[float]
    memory: list[int | None]
    kernels: int | None = None
    counted_index: int | None = None  # which step ``kernels`` counted

    def kernels_per_unit(self, plans: Sequence[StepPlan]) -> float | None:
        """The kernels one unit of work launched: the counted step's count over the units its plan trained."""
        if self.kernels is None or self.counted_index is None:
            return None
        units = len(plans[self.counted_index].units) if self.counted_index < len(plans) else 1
        return self.kernels / max(units, 1)


def fresh_strategy(case: StrategyCase, **changes: Any) -> Strategy:
    """A new strategy of ``case``'s settings (``changes`` to its flat config, e.g. a smaller batch)."""
    return build_strategy(replace(case.run.sched, **changes) if changes else case.run.sched)


@contextmanager
def _threads(count: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_steps(
    strategy: Strategy,
    case: StrategyCase,
    data: DynamicData,
    device: torch.device,
    steps: int,
    budget_s: float,
    plan: Sequence[tuple[int, ...]] | None = None,
    epoch_index: int = 0,
    count_kernels_at: int = COUNTED_STEP,
    before_epoch: Callable[[Strategy], None] | None = None,
) -> tuple[Strategy, _Steps]:
    """Up to ``steps`` steps (and ``budget_s`` seconds) of ``strategy`` on one rank, each step's wall
    time and peak memory. ``plan``: a snapshot-group strategy trains these units, one step each."""
    settings = case.run
    strategy.setup(RunContext(data, settings, 0, 1, device, Artifacts(None, True)))
    seed_everything(settings.seed)
    module = strategy.objective(build_model(case.run.model, data)).to(device)
    optimizer = build_optimizer(case.run.optim, module.parameters())
    sync = GradientSync(module, 1)
    if plan is not None:
        cast(Any, strategy).plan = Plan(
            iterations=tuple((tuple(units),) for units in plan),
            num_gpus=1,
            capacity=max(len(units) for units in plan),
            predicted_epoch_time=0.0,
            lower_bound=0.0,
            solver="advise-profile",
            solver_status=SolverStatus.HEURISTIC,
            solve_time_s=0.0,
        )
    if before_epoch is not None:
        before_epoch(strategy)
    record = _Steps([], [])
    resettable = reset_memory_peaks(device)
    counter: KernelCounter | None = None
    started = time.perf_counter()
    clock = [time.perf_counter()]

    def finished(stats: IterationStats) -> None:
        nonlocal counter
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds = time.perf_counter() - clock[0]
        if counter is not None:  # this step ran under the counter: its count, not its time
            counter.__exit__(None, None, None)
            record.kernels, counter = counter.count, None
            record.counted_index = len(record.seconds)
            record.seconds.append(math.nan)  # it keeps its place: the next step's time is the next plan's
            record.memory.append(None)
        else:
            record.seconds.append(seconds)
            record.memory.append(_peak(device, resettable))
        timed = sum(1 for s in record.seconds if math.isfinite(s))
        if timed >= steps or (time.perf_counter() - started > budget_s and timed >= WARMUP_STEPS + MIN_TIMED_STEPS):
            raise _Enough
        if timed == count_kernels_at and record.kernels is None:
            counter = KernelCounter()
            counter.__enter__()
        reset_memory_peaks(device)
        clock[0] = time.perf_counter()

    epoch = Epoch(epoch_index, module, optimizer, sync, device, 0, 1, finished, lambda *_: None)
    try:
        strategy.run_epoch(epoch)
    except _Enough:
        pass
    finally:
        if counter is not None:
            counter.__exit__(None, None, None)
    return strategy, record


def optimizer_step_s(case: StrategyCase, data: DynamicData, device: torch.device, repeats: int = 7) -> tuple[float, int]:
    """The optimizer's step and the gradients' clearing, alone (seconds, the fastest of ``repeats``),
    and the parameters' bytes."""
    strategy = fresh_strategy(case)
    strategy.setup(RunContext(data, case.run, 0, 1, device, Artifacts(None, True)))
    module = strategy.objective(build_model(case.run.model, data)).to(device)
    parameters = [p for p in module.parameters() if p.requires_grad]
    optimizer = build_optimizer(case.run.optim, parameters)
    sync = GradientSync(module, 1)
    seconds = []
    for _ in range(repeats + 1):
        for parameter in parameters:
            parameter.grad = torch.randn_like(parameter)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        optimizer.step()
        sync.zero_grad()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds.append(time.perf_counter() - start)
    # the fastest: on a machine other processes load, the rest is their time (the step's own is its floor)
    return min(seconds[1:]), sum(p.numel() * p.element_size() for p in parameters)


def samples_of(family: str, threads: int, record: _Steps, plans: Sequence[StepPlan]) -> list[StepSample]:
    """The timed steps after the warm-up, each with its plan's features; a step trained twice (the
    snapshot families train each picked step twice) is its faster time and its larger peak."""
    best: dict[tuple[str, int], StepSample] = {}
    for index, (seconds, memory) in enumerate(zip(record.seconds, record.memory)):
        if index < WARMUP_STEPS or index >= len(plans) or not (math.isfinite(seconds) and seconds > 0):
            continue
        step = plans[index]
        sample = StepSample(family, threads, step.features, seconds, memory, units=len(step.units), label=step.label)
        key = (step.label, len(step.units))
        if key in best:
            seen = best[key]
            peaks = [m for m in (seen.memory_bytes, memory) if m is not None]
            sample = replace(seen, seconds=min(seen.seconds, seconds), memory_bytes=max(peaks) if peaks else None)
        best[key] = sample
    return list(best.values())


def spread(order: Sequence[int], count: int) -> list[int]:
    """``count`` positions of ``order`` evenly from first to last."""
    if len(order) <= count:
        return list(order)
    return [order[round(i * (len(order) - 1) / (count - 1))] for i in range(count)]


def snapshot_plans(graph: TemporalGraph, case: StrategyCase, family: str, count: int) -> list[StepPlan]:
    """Groups across the size range (by nodes plus edges), the median one first as the warm-up;
    REAL's reuse adds merged neighbour pairs, BLAD's pipeline trains consecutive pairs (and one
    group alone, the step whose kernels are counted)."""
    from dygsched.advise.snapshot_groups import groups_of

    _, sizes = groups_of(graph, case)
    order = sorted(range(len(sizes)), key=lambda k: (sizes[k][0] + sizes[k][1], k))
    picked = spread(order, count)
    warm = order[len(order) // 2]

    def single(k: int) -> StepPlan:
        return StepPlan((k,), (float(sizes[k][0]), float(sizes[k][1])), str(k))

    def pair(k: int) -> StepPlan:
        j = min(k + 1, len(sizes) - 1)
        k = j - 1
        return StepPlan((k, j), (float(sizes[k][0] + sizes[j][0]), float(sizes[k][1] + sizes[j][1])), f"{k}+{j}")

    if len(sizes) < 2 and family in (REUSE, BLAD):
        timed = list(map(single, picked))
    elif family == BLAD:
        # the counted step is one group: with two, the second group's load and first-layer aggregation
        # run on the pipeline's own thread, where a dispatch mode (thread-local) does not see its kernels
        plans = [pair(warm), *map(pair, picked), *map(pair, picked)]
        plans.insert(COUNTED_STEP, single(warm))
        return plans
    else:
        timed = list(map(single, picked))
        if family == REUSE:
            timed += [pair(k) for k in spread(order, max(2, count // 2))]
    # each step twice (``samples_of`` keeps the faster): one slow step of a loaded machine does not bend the curve
    return [single(warm), *timed, *timed]


def profile_family(
    family: str,
    case: StrategyCase,
    data: DynamicData,
    device: torch.device,
    threads: int,
    steps: int,
    budget_s: float,
) -> tuple[list[StepSample], float | None, dict[str, float]]:
    """``family``'s samples at ``threads`` threads, the kernels one unit of a step launched, and facts measured on the way."""
    facts: dict[str, float] = {}
    with _threads(threads):
        if family in (SEQUENTIAL, REUSE, BLAD):
            graph = cast(TemporalGraph, data)
            plans = snapshot_plans(graph, case, family, max(2, steps - 1))
            epoch_index = int(cast(Any, case.strategy).timeline_config.profile_epochs)
            _, record = run_steps(
                fresh_strategy(case), case, data, device, len(plans), budget_s, [p.units for p in plans], epoch_index
            )
            return samples_of(family, threads, record, plans), record.kernels_per_unit(plans), facts
        if family == FLARE:
            return _profile_flare(case, cast(TemporalGraph, data), device, threads, steps, budget_s)
        if family == DISTDY:
            return _profile_distdy(case, cast(TemporalGraph, data), device, threads, steps, budget_s)
        if family in NODE_MEMORY_FAMILIES:
            return _profile_node_memory(case, data, device, threads, steps, budget_s)
    raise ValueError(f"unknown family {family!r}")


def _profile_flare(
    case: StrategyCase, graph: TemporalGraph, device: torch.device, threads: int, steps: int, budget_s: float
) -> tuple[list[StepSample], float | None, dict[str, float]]:
    from dygsched.advise.flare import Counter, window_features
    from dygsched.engine.flare import FlareStrategy

    strategy, record = run_steps(fresh_strategy(case), case, graph, device, steps, budget_s)
    flare = cast(FlareStrategy, strategy)
    counter = Counter(graph, flare.partition, flare.config, case.run.seed, epoch=0)
    windows = [g for segment in flare.epoch_windows(0) for g in segment]
    plans = [StepPlan((g.index,), window_features(counter, g, flare.config, case.run.window), str(g.index)) for g in windows]
    start = time.perf_counter()
    flare.start_epoch(1)  # the epoch's shuffle and renumbering, warm
    facts = {"flare_epoch_start_s": time.perf_counter() - start}
    return samples_of(FLARE, threads, record, plans), record.kernels_per_unit(plans), facts


def _profile_distdy(
    case: StrategyCase, graph: TemporalGraph, device: torch.device, threads: int, steps: int, budget_s: float
) -> tuple[list[StepSample], float | None, dict[str, float]]:
    from dygsched.advise.distdy import counts_for, step_features
    from dygsched.engine.distdy import DistDyStrategy

    strategy = cast(DistDyStrategy, fresh_strategy(case))
    counts = counts_for(strategy, graph, case.run, 1)
    plans = [StepPlan((i,), step_features(c), str(i)) for i, c in enumerate(counts)]
    _, record = run_steps(strategy, case, graph, device, steps, budget_s)
    return samples_of(DISTDY, threads, record, plans), record.kernels_per_unit(plans), {}


def _profile_node_memory(
    case: StrategyCase, data: DynamicData, device: torch.device, threads: int, steps: int, budget_s: float
) -> tuple[list[StepSample], float | None, dict[str, float]]:
    """The node-memory loop on one rank at its batch size and at half of it (its curve's two points)."""
    from dygsched.data.events import EventStream

    stream = cast(EventStream, data)
    settings = case.run
    batch = int(cast(Any, case.strategy).config.batch_size)
    events = stream.split(settings.split.train, settings.split.val, settings.split.by).train
    samples: list[StepSample] = []
    kernels = None
    facts: dict[str, float] = {}
    for size in dict.fromkeys((batch, max(1, batch // 2))):
        plans = [
            StepPlan((i,), (float(min(size, events[1] - events[0] - i * size)),), str(i))
            for i in range(math.ceil((events[1] - events[0]) / size))
        ]
        strategy, record = run_steps(fresh_strategy(case, batch_size=size), case, data, device, max(3, steps // 2), budget_s / 2)
        samples += samples_of(case.family, threads, record, plans)
        kernels = kernels or record.kernels_per_unit(plans)
        table = getattr(getattr(strategy, "memory", None), "table", None)
        facts.setdefault("node_state_bytes", float(getattr(table, "nbytes", 0.0)))
    return samples, kernels, facts


# ---- facts about the model and data ----------------------------------------------------------------------


def model_facts(case: StrategyCase, data: DynamicData, device: torch.device) -> dict[str, float]:
    """What the prices read of the model and the data (``Profile.facts``)."""
    from dygsched.data.events import EventStream
    from dygsched.models.dgnn import DGNN
    from dygsched.models.memory_base import MemoryModel

    seed_everything(case.run.seed)
    model = build_model(case.run.model, data)
    facts: dict[str, float] = {}
    if isinstance(model, DGNN) and isinstance(data, TemporalGraph):
        facts.update(_state_bytes(model, data.num_nodes))
        facts.update(_halo_widths(model, data))
    if isinstance(model, MemoryModel) and isinstance(data, EventStream):
        facts.update(
            memory_dim=float(model.memory_dim),
            mail_dim=float(model.mail_dim),
            mailbox_size=float(model.mailbox_size),
            value_bytes=float(next(model.parameters()).element_size()),
            embedding_neighbours=float(model.embedding_neighbours),
            mail_neighbours=float(model.mail_neighbours),
        )
    if hasattr(model, "hidden_channels") and isinstance(data, TemporalGraph) and case.family == DISTDY:
        facts.update(
            distdy_row_bytes=float(data.num_features * data.snapshots[0].x.element_size()),
            distdy_embedding_bytes=float(int(cast(Any, model).hidden_channels) * 4),
        )
    return facts


def _state_bytes(model: Any, nodes: int) -> dict[str, float]:
    """The bytes of ESDG's state message for ``nodes`` nodes, as a line in the node count."""
    sizes = []
    for count in (nodes, max(1, nodes // 2)):
        with torch.no_grad():
            states = model.initial_states(count, torch.device("cpu"), torch.float32)
        sizes.append(sum(t.numel() * t.element_size() for state in states for t in state))
    per_node = (sizes[0] - sizes[1]) / max(nodes - max(1, nodes // 2), 1)
    return {"state_bytes_per_node": float(per_node), "state_bytes_fixed": float(sizes[0] - per_node * nodes)}


class _WidthRecorder:
    """The partition operations of one rank, recording the width of every computed tensor a layer
    reads with its halo (each an exchange on several ranks) and every sum over ranks."""

    def __init__(self, features: torch.Tensor) -> None:
        self.features, self.sums = features, 0
        self.widths: list[int] = []

    def with_halo(self, x: torch.Tensor) -> torch.Tensor:
        if x is not self.features:
            self.widths.append(int(x.shape[1]) * x.element_size())
        return x

    def owned(self, out: Any) -> Any:
        return out

    def sum_over_ranks(self, x: torch.Tensor) -> torch.Tensor:
        self.sums += 1
        return x


def _halo_widths(model: Any, graph: TemporalGraph) -> dict[str, float]:
    """One snapshot's forward with recording partition operations: FlareDTDG's halo exchanges per full
    block, the bytes of one halo row over them, and its sums over ranks (batch norms' statistics)."""
    from dygsched.models.dgnn import DGNNLayer, State
    from dygsched.models.hooks import PLAIN, DelegatingHooks

    if not all(getattr(layer, "partitionable", False) for layer in getattr(model, "layers", [])):
        return {}
    snapshot = graph.snapshots[0]
    recorder = _WidthRecorder(snapshot.x)

    class Recording(DelegatingHooks):
        def spatial(self, depth: int, t: int, layer: DGNNLayer, x: torch.Tensor, shot: Any, state: State | None) -> Any:
            return layer.spatial_partitioned(x, shot, state, recorder)

    model.train()
    with torch.no_grad():
        model.unroll([snapshot], hooks=Recording(PLAIN))
    return {
        "halo_exchanges": float(len(recorder.widths)),
        "halo_row_bytes": float(sum(recorder.widths)),
        "rank_sums": float(recorder.sums),
    }
