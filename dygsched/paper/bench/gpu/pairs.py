"""bench-gpu's five comparisons, each side A (ours) against side B, alternated A B A B over rounds.

* ``tgcn``: TGCN trained by the engine (``sched=psg``, one rank) against the plain loop of
  bench-vs-pygt (``plain.plain_tgcn_epochs``) on the same snapshots and groups;
* ``real``: REAL (``sched=real``, its profiling epoch first) against PSG on the Arxiv-sized graph;
* ``tgn``: the reference TGN (``sched=single``) against the TGN of PyG's temporal modules
  (bench-tgn-pyg's pair) on the Wikipedia-sized stream;
* ``flare``: FlareDTDG's peak GPU memory against Full-History's (``+flare_variant=...``);
* ``sven``: Sven's epoch with its prefetch against without, two ranks sharing the GPU.

Each engine side is a real run (``run(cfg)``, its ranks spawned on CUDA) with a deadline, read
back from its metrics: the median of its steady epochs (after the first, and after any profiling
epoch; on more ranks, the slowest rank's), its host-device synchronisations per step
(``metrics.count_syncs=true``: ``cuda_syncs_per_step`` of its last epoch), its final training
loss, its allocator peak. A plain side runs in this process, its synchronisations counted the same
way on CUDA. A ratio is A over B per round (time) or per epoch (memory), with its lowest and
highest as its spread.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dygsched.commands.gpu_check.runs import deadline
from dygsched.commands.gpu_check.table import Clock, one_line
from dygsched.errors import DygschedError

PAIRS = ("tgcn", "real", "flare", "sven", "tgn")  # the order they run in: a budget cut short loses the last rounds
COMMON = ("seed=0", "checkpoint=false", "progress=false", "overwrite=true", "metrics.count_flops=false")

TINY_SNAPSHOTS = ("dataset=synthetic", "dataset.num_nodes=120", "dataset.num_snapshots=12", "dataset.feature_dim=8")
TINY_STREAM = ("dataset=bipartite", "dataset.num_users=30", "dataset.num_items=10", "dataset.num_events=500")
REAL_PLAN = ("sched.planner.time_limit=10", "+sched.planner.options.epoch_time=100", "+sched.planner.options.workers=1")


@dataclass(frozen=True)
class Workload:
    """One pair's settings at one size: the overrides both sides share, each side's own, the epochs,
    and what the plain side needs (widths, batch)."""

    shared: tuple[str, ...]
    a: tuple[str, ...] = ()
    b: tuple[str, ...] = ()
    epochs: int = 3
    skip: int = 1  # epochs left out of the steady median (the first; and profiling epochs)
    width: int = 64
    batch: int = 600
    neighbours: int = 10


SIZES: dict[str, dict[str, Workload]] = {
    "full": {
        "tgcn": Workload(
            ("dataset=synthetic", "dataset.num_nodes=20000", "dataset.avg_degree=8", "dataset.num_snapshots=16", "window=4"),
            epochs=4,
            width=64,
        ),
        "real": Workload(
            ("dataset=synthetic_arxiv", "dataset.num_snapshots=12", "model=tgcn", "model.num_layers=1"),
            a=("sched=real", "sched.timeline.profile_epochs=1"),
            b=("sched=psg",),
            epochs=3,
            skip=1,
        ),
        "tgn": Workload(("dataset=wikipedia_like",), epochs=3, width=100, batch=600, neighbours=10),
        "flare": Workload(
            ("+experiment=flare", "dataset.num_nodes=30000", "world_size=1"),  # 20 snapshots, windows of 8
            a=("+flare_variant=flare",),
            b=("+flare_variant=full_history",),
            epochs=2,
            skip=0,
        ),
        "sven": Workload(
            ("dataset=bipartite", "dataset.num_users=2000", "dataset.num_items=500", "dataset.num_events=40000")
            + ("model=tgn", "model.memory_dim=100", "model.time_dim=100", "model.neighbours=10")
            + ("sched=sven", "sched.batch_size=300", "world_size=2"),
            a=("sched.prefetch=true",),
            b=("sched.prefetch=false",),
            epochs=3,
        ),
    },
    "tiny": {  # the same code at the tests' sizes (a CPU rehearsal)
        "tgcn": Workload((*TINY_SNAPSHOTS, "window=4"), epochs=2, width=16),
        "real": Workload(
            (*TINY_SNAPSHOTS, "model=tgcn", "model.hidden_channels=16", "model.num_layers=1"),
            a=("sched=real", "sched.timeline.profile_epochs=1", "sched.executor.reuse_path=diff", *REAL_PLAN),
            b=("sched=psg",),
            epochs=3,
            skip=1,
        ),
        "tgn": Workload(TINY_STREAM, epochs=2, width=8, batch=70, neighbours=3),
        "flare": Workload(
            (*TINY_SNAPSHOTS, "dataset.num_nodes=300", "dataset.num_snapshots=20", "model.hidden_channels=16")
            + ("sched=flare", "sched.chunks=4", "window=8", "world_size=1"),
            a=("+flare_variant=flare",),
            b=("+flare_variant=full_history",),
            epochs=2,
            skip=0,
        ),
        "sven": Workload(
            (*TINY_STREAM, "model=tgn", "model.memory_dim=8", "model.time_dim=4", "model.neighbours=3")
            + ("sched=sven", "sched.batch_size=35", "world_size=2"),
            a=("sched.prefetch=true",),
            b=("sched.prefetch=false",),
            epochs=2,
        ),
    },
}


class BenchFailed(DygschedError):
    """One side of a pair did not give its figures (its one-line reason)."""


@dataclass
class Side:
    """What one side gave over the rounds: per round its value (the steady epochs' median time, or
    the epochs' peaks), its synchronisations per step and final loss."""

    label: str
    values: list[float] = field(default_factory=list)  # one per round (time)
    per_epoch: list[float] = field(default_factory=list)  # every steady epoch of every round: time, or memory's peaks
    syncs_per_step: float | None = None
    final_loss: float | None = None


@dataclass
class Setting:
    """Where and how the pairs run: the device, the results folder, the size, the rounds, the deadline of one side."""

    device: str
    folder: Path
    size: str
    rounds: int
    timeout_s: float
    clock: Clock


def _steady(metrics: pd.DataFrame, metric: str, skip: int) -> pd.Series:
    """``metric``'s epoch-level training rows, the largest over ranks per epoch, from epoch ``skip``."""
    rows = metrics[(metrics.iteration == -1) & (metrics.phase == "train") & (metrics.metric == metric) & metrics.value.notna()]
    per_epoch = rows.groupby("epoch")["value"].max().sort_index()
    return per_epoch[per_epoch.index >= skip]


def engine_side(setting: Setting, overrides: Sequence[str], run_id: str, skip: int) -> dict[str, Any]:
    """One run through the engine, with its deadline; its figures read back from its metrics."""
    from dygsched.launch.app import run
    from dygsched.launch.sweeps import checked_points

    point = [
        *overrides,
        *COMMON,
        f"device={setting.device}",
        "metrics.count_syncs=true",
        f"results_dir={setting.folder / 'runs'}",
        f"run_id={run_id}",
    ]
    try:
        with deadline(setting.timeout_s):
            ((checked, cfg),) = checked_points([point])
            summary = run(cfg, overrides=checked)
    except DygschedError as exc:
        raise BenchFailed(f"{run_id}: {one_line(str(exc))}") from None
    except Exception as exc:  # RunTimedOut, or anything the run raised
        raise BenchFailed(f"{run_id}: {type(exc).__name__}: {one_line(str(exc))}") from None
    if not summary or summary.get("status") != "ok":
        raise BenchFailed(f"{run_id}: {one_line(str((summary or {}).get('reason', 'no summary')))}")
    metrics = pd.read_parquet(Path(str(summary["run_dir"])) / "metrics.parquet")
    epochs = _steady(metrics, "epoch_time_s", skip)
    syncs = _steady(metrics, "cuda_syncs_per_step" if setting.device == "cuda" else "device_reads_per_step", 0)
    peak_metric = "gpu_peak_allocated_bytes" if setting.device == "cuda" else "peak_rss_bytes"
    return {
        "epoch_s": float(epochs.median()) if len(epochs) else float("nan"),
        "epochs_s": epochs.tolist(),
        "syncs_per_step": float(syncs.iloc[-1]) if len(syncs) else None,
        "final_loss": summary.get("final_train_loss"),
        "peaks_mb": (_steady(metrics, peak_metric, skip) / 2**20).tolist(),
    }


def plain_side(setting: Setting, work: Callable[[], tuple[list[float], list[float], int]], skip: int) -> dict[str, Any]:
    """A plain loop in this process (``work`` gives its epoch seconds, losses and steps per epoch),
    with the run's deadline; on CUDA its synchronisations counted as the engine's are."""
    import torch

    from dygsched.engine.host_syncs import counting_syncs

    device = torch.device(setting.device)
    try:
        with deadline(setting.timeout_s), counting_syncs(device.type == "cuda", device) as count:
            seconds, losses, steps = work()
    except Exception as exc:
        raise BenchFailed(f"the plain loop: {type(exc).__name__}: {one_line(str(exc))}") from None
    steady = seconds[skip:] or seconds
    total_steps = steps * len(seconds)
    return {
        "epoch_s": statistics.median(steady),
        "epochs_s": list(steady),
        "syncs_per_step": count.count / total_steps if count.kind is not None and total_steps else None,
        "final_loss": losses[-1] if losses else None,
        "peaks_mb": [],
    }


def tgcn_plain(setting: Setting, work: Workload) -> Callable[[], tuple[list[float], list[float], int]]:
    """The plain TGCN loop on the pair's snapshots and training groups, as ``dygsched run`` makes them."""

    def run_plain() -> tuple[list[float], list[float], int]:
        import torch

        from dygsched.data.groups import sliding_groups, split_by_time
        from dygsched.data.loading import load_graph
        from dygsched.launch.compose import compose_run
        from dygsched.paper.bench.gpu.plain import plain_tgcn_epochs

        run = compose_run(list(work.shared))
        graph = load_graph(run.dataset)
        split = split_by_time(sliding_groups(graph.num_snapshots, run.window), run.split.train, run.split.val)
        layers = int(run.model.settings["num_layers"])  # TGCN's own setting (the model class types it)
        seconds, losses = plain_tgcn_epochs(
            graph, split.train, run.optim.learning_rate, work.epochs, work.width, layers, 0, torch.device(setting.device)
        )
        return seconds, losses, len(split.train)

    return run_plain


def tgn_plain(setting: Setting, work: Workload) -> Callable[[], tuple[list[float], list[float], int]]:
    """The TGN of PyG's temporal modules (bench-tgn-pyg's) on the pair's stream and training events."""

    def run_plain() -> tuple[list[float], list[float], int]:
        from dygsched.data.events import EventStream
        from dygsched.data.loading import load_data
        from dygsched.launch.compose import compose_run
        from dygsched.paper.bench.tgn_pyg_baseline import pyg_tgn_epochs

        run = compose_run(list(work.shared))
        stream = load_data(run.dataset)
        if not isinstance(stream, EventStream):
            raise BenchFailed("the tgn pair's dataset gives snapshots, not events")
        train = stream.split(run.split.train, run.split.val).train
        steps: list[int] = []
        seconds, losses = pyg_tgn_epochs(
            stream, train, work.epochs, work.batch, work.width, work.neighbours, 2, 0.0001, 0, setting.device, steps
        )
        return seconds, losses, steps[0] if steps else 0

    return run_plain


def tgn_engine_overrides(work: Workload) -> tuple[str, ...]:
    """The reference TGN with the plain side's widths, batch and learning rate."""
    return (
        "model=tgn",
        f"model.memory_dim={work.width}",
        f"model.time_dim={work.width}",
        f"model.neighbours={work.neighbours}",
        "model.heads=2",
        "sched=single",
        f"sched.batch_size={work.batch}",
        "optim.lr=0.0001",
    )


SideRunner = tuple[str, Callable[[int], dict[str, Any]]]  # a side's label, and the function of the round that runs it


def sides(pair: str, setting: Setting) -> tuple[SideRunner, SideRunner]:
    """The pair's two sides: each a label and a function of the round that runs it."""
    work = SIZES[setting.size][pair]
    epochs = (f"epochs={work.epochs}",)

    def engine(label: str, overrides: tuple[str, ...]) -> SideRunner:
        return label, lambda r: engine_side(setting, (*work.shared, *overrides, *epochs), f"{pair}-{label}-r{r}", work.skip)

    if pair == "tgcn":
        return engine("engine-psg", ("sched=psg", "world_size=1", f"model.hidden_channels={work.width}")), (
            "plain-loop",
            lambda r: plain_side(setting, tgcn_plain(setting, work), work.skip),
        )
    if pair == "tgn":
        return engine("engine-single", (*tgn_engine_overrides(work), "world_size=1")), (
            "pyg-modules",
            lambda r: plain_side(setting, tgn_plain(setting, work), work.skip),
        )
    names = {"real": ("real", "psg"), "flare": ("flare", "full-history"), "sven": ("prefetch", "no-prefetch")}[pair]
    ranks = () if pair in ("sven", "flare") else ("world_size=1",)
    return engine(names[0], (*work.a, *ranks)), engine(names[1], (*work.b, *ranks))


def measure(pair: str) -> str:
    return "peak_mb" if pair == "flare" else "epoch_s"


def run_pair(pair: str, setting: Setting) -> dict[str, Any]:
    """The pair's row: A and B alternated over the rounds (fewer when the budget would not hold
    another round), then the ratio A / B and its spread."""
    (label_a, run_a), (label_b, run_b) = sides(pair, setting)
    a, b = Side(label_a), Side(label_b)
    started = time.monotonic()
    row: dict[str, Any] = {"pair": pair, "a": label_a, "b": label_b, "measure": measure(pair), "status": "ok", "reason": ""}
    rounds = 1 if pair == "flare" else setting.rounds  # memory: one round, its spread over the epochs
    done = 0
    try:
        for r in range(rounds):
            spent = time.monotonic() - started
            if r and setting.clock.left() < spent / r:
                row["reason"] = f"{r} of {rounds} rounds: the budget would not hold another"
                break
            for side, runner in ((a, run_a), (b, run_b)):
                setting.clock.say(f"{pair}: {side.label}, round {r + 1} ...")
                got = runner(r)
                side.values.append(got["epoch_s"])
                side.per_epoch.extend(got["peaks_mb"] if measure(pair) == "peak_mb" else got["epochs_s"])
                side.syncs_per_step = got["syncs_per_step"] if got["syncs_per_step"] is not None else side.syncs_per_step
                side.final_loss = got["final_loss"]
            done = r + 1
    except BenchFailed as exc:
        row.update(status="failed", reason=str(exc))
    row.update(rounds=done, wall_s=time.monotonic() - started)
    row.update(ratio_row(pair, a, b))
    return row


def ratio_row(pair: str, a: Side, b: Side) -> dict[str, Any]:
    """A's and B's figure, the ratio A / B and its spread: for time, per round (the steady epochs'
    medians), or per steady epoch when one round was run; for memory, per epoch."""
    by_round = False
    if measure(pair) == "peak_mb":
        pairs = [x / y for x, y in zip(a.per_epoch, b.per_epoch) if y > 0]
        value_a, value_b = (max(s.per_epoch) if s.per_epoch else float("nan") for s in (a, b))
    else:
        by_round = len(a.values) > 1
        firsts, lasts = (a.values, b.values) if by_round else (a.per_epoch, b.per_epoch)
        pairs = [x / y for x, y in zip(firsts, lasts) if y > 0]
        value_a, value_b = (statistics.median(s.values) if s.values else float("nan") for s in (a, b))
    nan = float("nan")
    return {
        "spread_over": "epochs" if measure(pair) == "peak_mb" or not by_round else "rounds",
        "a_value": value_a,
        "b_value": value_b,
        "ratio": statistics.median(pairs) if pairs else nan,
        "ratio_low": min(pairs) if pairs else nan,
        "ratio_high": max(pairs) if pairs else nan,
        "a_syncs_per_step": a.syncs_per_step,
        "b_syncs_per_step": b.syncs_per_step,
        "a_final_loss": a.final_loss,
        "b_final_loss": b.final_loss,
    }
