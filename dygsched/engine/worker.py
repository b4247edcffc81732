"""One rank's whole run: the process group, the model and optimizer, the epochs, metrics and checkpoints.

Everything that differs between strategies happens behind ``Strategy`` (``dygsched.engine.strategy``):
this module builds the configured one (``cfg.sched``, a ``_target_``), hands it the data and the
rank's place, and drives its epochs. It imports no strategy.
"""

from __future__ import annotations

import logging
import os
import random
import re
import signal
import socket
import time
import traceback
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from omegaconf import OmegaConf

from dygsched.data.loading import DynamicData, instantiate_component, load_data
from dygsched.engine.checkpoint import capture_rng, find_resume, load_checkpoint, mark_failed, restore_rng, save_checkpoint
from dygsched.engine.distributed import (
    DistEnv,
    abandon_process_group,
    init_process_group,
    peak_memory,
    pick_device,
    reset_peak_memory,
)
from dygsched.engine.gradient_sync import DEFAULT_BUCKET_BYTES, GradientSync
from dygsched.engine.strategy import (
    Artifacts,
    Epoch,
    IterationStats,
    MetricValue,
    Missing,
    RunContext,
    RunSettings,
    Strategy,
    broadcast_from_rank0,
)
from dygsched.errors import ConfigError, DygschedError
from dygsched.metrics.atomic import remove_stale_temporaries, write_json
from dygsched.metrics.log import configure_logging
from dygsched.metrics.recorder import MetricRecorder
from dygsched.metrics.run_folder import RunFolder, new_run_id
from dygsched.models.flops import count_conv_flops

log = logging.getLogger("dygsched")
WAIT_IN_COMM = "grad_sync.overlap=true: the wait for the slowest rank is inside comm_s"


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def run_settings(cfg: Mapping[str, Any]) -> RunSettings:
    return RunSettings(
        window=int(cfg["window"]),
        train_fraction=float(cfg["split"]["train"]),
        val_fraction=float(cfg["split"]["val"]),
        seed=int(cfg["seed"]),
        epochs=int(cfg["epochs"]),
    )


def build_strategy(sched_cfg: Mapping[str, Any]) -> Strategy:
    """The strategy ``conf/sched/<name>.yaml`` names (its ``_target_`` and nested blocks)."""
    if "_target_" not in sched_cfg:
        raise ConfigError(f"sched '{sched_cfg.get('name')}' names no _target_ strategy")
    strategy = instantiate_component({**sched_cfg, "_convert_": "all"}, f"strategy (sched={sched_cfg.get('name')})")
    if not isinstance(strategy, Strategy):
        raise ConfigError(f"sched '{sched_cfg.get('name')}' is not a dygsched Strategy")
    return strategy


def build_model(model_cfg: Mapping[str, Any], data: DynamicData) -> torch.nn.Module:
    params = {k: v for k, v in model_cfg.items() if k != "name"}
    return instantiate_component(params, "model", **data.model_dims())


def build_optimizer(optim_cfg: Mapping[str, Any], params: Any) -> torch.optim.Optimizer:
    """``cfg.optim``: an optimizer class (``_target_``) and its settings, e.g. Adam with ``lr``."""
    settings = {k: v for k, v in optim_cfg.items() if k != "name"}
    return instantiate_component(settings, "optimizer", params=params)


def run_identity(cfg: Mapping[str, Any], run_id: str, world_size: int) -> dict[str, Any]:
    """What names a run in its summary and the runs table, known before it trains."""
    return {
        "run_id": run_id,
        "dataset": cfg["dataset"]["name"],
        "model": cfg["model"]["name"],
        "sched": cfg["sched"]["name"],
        "world_size": world_size,
        "epochs": int(cfg["epochs"]),
        "seed": int(cfg["seed"]),
    }


class _EpochTotals:
    """Sums one rank's iteration stats over an epoch, recording each iteration as rows too."""

    def __init__(self, recorder: MetricRecorder, epoch: int, measures_wait: bool, progress: Any = None) -> None:
        self.recorder, self.epoch, self.progress = recorder, epoch, progress
        self.measures_wait = measures_wait
        self.busy = self.wait = self.comm = self.loss_sum = 0.0
        self.units = 0
        self.bytes: dict[str, int] = {}

    def __call__(self, stats: IterationStats) -> None:
        rec, e, i = self.recorder, self.epoch, stats.iteration
        for metric, value in (("busy_s", stats.busy_s), ("wait_s", stats.wait_s), ("comm_s", stats.comm_s), ("units", stats.units)):
            if metric == "wait_s" and not self.measures_wait:
                rec.add_missing(e, "train", metric, WAIT_IN_COMM, iteration=i)
            else:
                rec.add(e, "train", metric, value, iteration=i)
        if stats.units:
            rec.add(e, "train", "loss", stats.loss_sum / stats.units, iteration=i)
        self.busy += stats.busy_s
        self.wait += stats.wait_s
        self.comm += stats.comm_s
        self.loss_sum += stats.loss_sum
        self.units += stats.units
        for kind, count in stats.bytes.items():
            self.bytes[kind] = self.bytes.get(kind, 0) + count
        if self.progress is not None:
            self.progress.update(1)


def train_rank(cfg: Mapping[str, Any], env: DistEnv, data: DynamicData | None = None, mark_failure: bool = False) -> dict[str, Any] | None:
    """Run on every rank; rank 0 writes the run folder and returns the summary, others return None.

    A rank that fails writes its reason to ``failure-rank<r>.txt`` in the run folder and abandons
    its process group without the collective teardown (its peers may be dead), so the process can
    exit at once; peers blocked in a collective fail within ``dist_timeout_s`` at the latest. With
    ``mark_failure`` (no parent process watches the ranks: torchrun, SLURM) rank 0 also marks the
    run failed, with the earliest reason any rank wrote.
    """
    where = _RunPlace(RunFolder(cfg["results_dir"], cfg["run_id"]) if cfg.get("run_id") else None)
    device = None
    try:
        device = pick_device(str(cfg["device"]), env.local_rank)
        init_process_group(env, device, float(cfg["dist_timeout_s"]))
        result = train_in_group(cfg, env, device, data, where)
    except BaseException as exc:
        if mark_failure and env.rank == 0:
            _finish_before_stopping()
        if where.folder is not None:
            try:
                where.folder.write_failure(env.rank, failure_text(exc))
                if mark_failure and env.rank == 0:
                    rank, reason = where.folder.failures()[0]
                    mark_failed(where.folder, run_identity(cfg, where.folder.run_id, env.world_size), f"rank {rank}: {reason}")
            except Exception:  # reporting the failure must not replace it
                pass
        abandon_process_group(device)
        raise
    dist.destroy_process_group()
    return result


def _finish_before_stopping() -> None:
    """Ignore SIGTERM from here on: the launcher stopping the ranks must not cut the failure report short."""
    try:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except ValueError:  # not the main thread
        pass


def failure_text(exc: BaseException) -> str:
    """One line of reason, then the traceback for anything that is not a user-facing error."""
    if isinstance(exc, DygschedError):
        return str(exc)
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    message = re.sub(r"^\[[^\]]*\]\s*", "", message)  # gloo's "[/path/file.cc:78] " prefix
    message = message.split(". This is typically caused")[0]  # and its generic advice
    if "Timed out" in message or "timed out" in message:
        message = f"a collective timed out: another rank is stuck or gone ({message})"
    elif "Connection closed by peer" in message or "Connection reset by peer" in message:
        message = f"lost the connection to another rank: it died ({message})"
    reason = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return f"{reason}\n\n{traceback.format_exc()}"


@dataclass
class _RunPlace:
    """The run folder, once this rank knows it (it is broadcast by rank 0 when not given)."""

    folder: RunFolder | None


def _start(cfg: Mapping[str, Any], world_size: int) -> tuple[str, str, dict[str, Any] | None]:
    """Rank 0: the run's results folder and id, and the checkpoint it resumes (if any)."""
    resume_dir = find_resume(cfg)
    if resume_dir is None:
        run_id = cfg.get("run_id") or new_run_id(cfg["dataset"]["name"], cfg["model"]["name"], cfg["sched"]["name"])
        return str(cfg["results_dir"]), str(run_id), None
    state = load_checkpoint(resume_dir)
    if int(state["world_size"]) != world_size:
        raise ConfigError(f"cannot resume {resume_dir.name}: it ran on {state['world_size']} ranks, this run has {world_size}")
    return str(resume_dir.parent), resume_dir.name, state


def _record(recorder: MetricRecorder, epoch: int, phase: str, metric: str, value: MetricValue) -> None:
    if isinstance(value, Missing):
        recorder.add_missing(epoch, phase, metric, value.reason)
    else:
        recorder.add(epoch, phase, metric, value)


def train_in_group(
    cfg: Mapping[str, Any], env: DistEnv, device: torch.device, data: DynamicData | None, where: _RunPlace
) -> dict[str, Any] | None:
    """The run, in a process group this rank already joined."""
    rank, world_size, is_main = env.rank, env.world_size, env.rank == 0
    configure_logging(bool(cfg.get("progress", True)) and is_main)
    start = _start(cfg, world_size) if is_main else None
    resumed_rows: list[tuple] = list(start[2].pop("rows")) if start and start[2] else []  # rank 0 keeps every rank's rows
    results_dir, run_id, resumed = broadcast_from_rank0(start)
    folder = where.folder = RunFolder(results_dir, run_id)
    if is_main:
        folder.create(OmegaConf.to_yaml(OmegaConf.create(dict(cfg, run_id=run_id, results_dir=results_dir))))
        if resumed:  # what a killed writer of the interrupted run may have left
            remove_stale_temporaries(folder.path)
    _record_ranks(folder, rank, world_size, device)
    if data is None:
        data = load_data(cfg["dataset"])
    recorder = MetricRecorder(run_id, rank)
    if resumed:
        recorder.missing.update(resumed.get("missing", {}))

    settings = run_settings(cfg)
    strategy = build_strategy(cfg["sched"])
    strategy.setup(RunContext(data, settings, rank, world_size, device, Artifacts(folder, is_main)))
    if resumed:
        strategy.load_state_dict(resumed["strategy"])
    first_epoch = int(resumed["epoch"]) + 1 if resumed else 0

    seed_everything(settings.seed)
    module = strategy.objective(build_model(cfg["model"], data))
    if resumed:
        module.load_state_dict(resumed["model"])
    module = module.to(device)
    optimizer = build_optimizer(cfg["optim"], module.parameters())
    sync_cfg = cfg.get("grad_sync") or {}
    sync = GradientSync(
        module, world_size, int(float(sync_cfg.get("bucket_mb", DEFAULT_BUCKET_BYTES / 2**20)) * 2**20), bool(sync_cfg.get("overlap", False))
    )
    if resumed:
        optimizer.load_state_dict(resumed["optimizer"])
        restore_rng(resumed["rng"][rank], device)  # last: the generators continue where the checkpoint left them
    base_lrs = [group["lr"] for group in optimizer.param_groups]
    checkpointing = bool(cfg.get("checkpoint", True))
    count_flops = bool((cfg.get("metrics") or {}).get("count_flops", True))
    show = bool(cfg.get("progress", True)) and is_main

    epochs = settings.epochs
    for epoch in range(first_epoch, epochs):
        for group, base in zip(optimizer.param_groups, base_lrs, strict=True):
            group["lr"] = base * strategy.lr_multiplier(epoch)
        with ExitStack() as stack:
            bar = stack.enter_context(_progress_bar(epoch, epochs)) if show else None
            totals = _EpochTotals(recorder, epoch, not sync.overlap, bar)
            peak_resettable = reset_peak_memory(device)
            flops = stack.enter_context(count_conv_flops(module)) if count_flops else None
            record = lambda phase, metric, value, e=epoch: _record(recorder, e, phase, metric, value)  # noqa: E731
            run = Epoch(epoch, module, optimizer, sync, device, rank, world_size, totals, record, flops)
            start_time = time.perf_counter()
            measured = strategy.run_epoch(run)
            epoch_time = time.perf_counter() - start_time
        conv_flops: MetricValue = flops.total if flops is not None else Missing("metrics.count_flops=false")
        peak: MetricValue = peak_memory(device) if peak_resettable else Missing("this system cannot reset the peak memory counter per epoch")

        loss_sum = torch.tensor([totals.loss_sum, float(totals.units)], dtype=torch.float64, device=device)
        if world_size > 1:
            dist.all_reduce(loss_sum)
        train_loss = float(loss_sum[0] / loss_sum[1].clamp(min=1))
        for metric, value in (
            ("epoch_time_s", epoch_time),
            ("busy_s", totals.busy),
            ("wait_s", totals.wait if not sync.overlap else Missing(WAIT_IN_COMM)),
            ("comm_s", totals.comm),
            ("peak_mem_bytes", peak),
            ("conv_flops", conv_flops),
            *((f"bytes_{kind}", count) for kind, count in totals.bytes.items()),
            *measured.items(),
        ):
            _record(recorder, epoch, "train", metric, value)
        val = strategy.evaluate("val")
        test = strategy.evaluate("test")
        if is_main:
            recorder.add(epoch, "train", "loss", train_loss)
            for phase, results in (("val", val), ("test", test)):
                for metric, value in results.items():
                    recorder.add(epoch, phase, metric, value)
            shown = "  ".join(f"val_{k} {v:.4f}" for k, v in val.items() if k != "loss" or len(val) == 1)
            log.info("epoch %d/%d  train_loss %.4f  %s  time %.2fs", epoch + 1, epochs, train_loss, shown, epoch_time)

        # End of the epoch: rank 0 collects every rank's new rows (and RNG states), then checkpoints.
        save_start = time.perf_counter()
        gathered = _gather_to_rank0((recorder.take(), recorder.missing, capture_rng(device) if checkpointing else None), world_size, is_main)
        if is_main:
            resumed_rows.extend(row for part, _, _ in gathered for row in part)
            for _, missing, _ in gathered:
                recorder.missing.update(missing)
            if checkpointing:
                state = {
                    "epoch": epoch,
                    "world_size": world_size,
                    "run_id": run_id,
                    "model": module.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "strategy": strategy.state_dict(),
                    "rng": [rng for _, _, rng in gathered],
                    "rows": resumed_rows,
                    "missing": dict(recorder.missing),
                }
                size = save_checkpoint(folder.path, state)
                recorder.add(epoch, "train", "checkpoint_s", time.perf_counter() - save_start)
                recorder.add(epoch, "train", "checkpoint_bytes", size)

    sync.close()
    gathered = _gather_to_rank0((recorder.take(), recorder.missing, None), world_size, is_main)
    if not is_main:
        return None
    resumed_rows.extend(row for part, _, _ in gathered for row in part)
    for _, missing, _ in gathered:
        recorder.missing.update(missing)
    info = {
        **run_identity(cfg, run_id, world_size),
        "status": "ok",
        "window": settings.window,
        **strategy.describe(),
        "missing": dict(sorted(recorder.missing.items())),
    }
    return folder.finish(MetricRecorder.frame(resumed_rows), info)


class _progress_bar:
    """A progress bar over an epoch's optimizer steps on rank 0's terminal (shown only in a
    terminal, and only once an epoch has run for two seconds)."""

    def __init__(self, epoch: int, epochs: int) -> None:
        self.epoch, self.epochs = epoch, epochs

    def __enter__(self) -> Any:
        from tqdm import tqdm

        self.bar = tqdm(desc=f"epoch {self.epoch + 1}/{self.epochs}", unit="step", delay=2.0, leave=False, disable=None)
        return self.bar

    def __exit__(self, *exc: Any) -> None:
        self.bar.close()


def _gather_to_rank0(value: Any, world_size: int, is_main: bool) -> list[Any]:
    if world_size == 1:
        return [value]
    gathered: list[Any] = [None] * world_size if is_main else []
    dist.gather_object(value, gathered if is_main else None, dst=0)
    return gathered


def _record_ranks(folder: RunFolder, rank: int, world_size: int, device: torch.device) -> None:
    """``ranks.json``: where each rank runs (host, process id, device), for finding a lost one."""
    me = {"rank": rank, "host": socket.gethostname(), "pid": os.getpid(), "device": str(device)}
    gathered = _gather_to_rank0(me, world_size, rank == 0)
    if rank == 0:
        write_json(folder.path / "ranks.json", gathered)
