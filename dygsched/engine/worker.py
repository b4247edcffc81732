"""One rank's whole run: the process group, the model and optimizer, the epochs, metrics and checkpoints.

Everything that differs between strategies happens behind ``Strategy`` (``dygsched.engine.strategy``):
this module builds the configured one (``run.sched``, its configuration class, through
``dygsched.engine.build``), hands it the data and the rank's place, and drives its epochs. It reads
the run's settings as the typed ``RunConfig`` the launcher hands every rank. It imports no strategy.
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
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import OmegaConf

import dygsched.engine.comm as comm
from dygsched.data.kinds import DynamicData
from dygsched.data.loading import for_task, load_data
from dygsched.data.task_names import data_counts, describe_task, inapplicable_settings
from dygsched.engine.build import build_model, build_optimizer, build_strategy
from dygsched.engine.checkpoint import (
    capture_rng,
    find_resume,
    load_checkpoint,
    mark_failed,
    restore_rng,
    resumed_rows,
    save_checkpoint,
)
from dygsched.engine.distributed import (
    DistEnv,
    abandon_process_group,
    close_process_group,
    gpu_peak_allocated,
    init_process_group,
    peak_rss,
    pick_device,
    reset_memory_peaks,
)
from dygsched.engine.gradient_sync import GradientSync
from dygsched.engine.host_syncs import counting_syncs
from dygsched.engine.run_config import RunConfig
from dygsched.engine.strategy import (
    Artifacts,
    Epoch,
    IterationStats,
    MetricValue,
    Missing,
    RunContext,
    Strategy,
    broadcast_from_rank0,
)
from dygsched.engine.timing import Region
from dygsched.errors import ConfigError, DygschedError
from dygsched.metrics.atomic import remove_stale_temporaries, write_json
from dygsched.metrics.early_stop import EarlyStopping, default_mode, parse_metric, watched_metric
from dygsched.metrics.log import configure_logging
from dygsched.metrics.progress import StepBar
from dygsched.metrics.recorder import EVAL_TIME, MetricRecorder
from dygsched.metrics.run_folder import PhaseRecord, RunFolder, new_run_id
from dygsched.models.flops import count_conv_flops

log = logging.getLogger("dygsched")
WAIT_IN_COMM = "grad_sync.overlap=true: the wait for the slowest rank is inside comm_s"


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class _EpochTotals:
    """Sums one rank's iteration stats over an epoch, recording each iteration as rows too.

    A step's loss may still be on the device (``IterationStats.add_loss``): the losses are kept as
    they come and read on the host once, when the epoch is over (``settle_losses``), so no step
    waits for the device to report its loss."""

    def __init__(self, recorder: MetricRecorder, epoch: int, measures_wait: bool, progress: StepBar | None = None) -> None:
        self.recorder, self.epoch, self.progress = recorder, epoch, progress
        self.measures_wait = measures_wait
        self.busy = self.wait = self.comm = self.loss_sum = 0.0
        self.units = self.steps = 0
        self.bytes: dict[str, int] = {}
        self._losses: list[tuple[int, int, float | torch.Tensor]] = []  # (iteration, units, loss sum) per step

    def __call__(self, stats: IterationStats) -> None:
        rec, e, i = self.recorder, self.epoch, stats.iteration
        for metric, value in (
            ("busy_s", stats.busy_s),
            ("wait_s", stats.wait_s),
            ("comm_s", stats.comm_s),
            ("units", stats.units),
        ):
            if metric == "wait_s" and not self.measures_wait:
                rec.add_missing(e, "train", metric, WAIT_IN_COMM, iteration=i)
            else:
                rec.add(e, "train", metric, value, iteration=i)
        self._losses.append((i, stats.units, stats.loss_sum))
        self.busy += stats.busy_s
        self.wait += stats.wait_s
        self.comm += stats.comm_s
        self.units += stats.units
        self.steps += 1
        for kind, count in stats.bytes.items():
            self.bytes[kind] = self.bytes.get(kind, 0) + count
        if self.progress is not None:
            self.progress.advance()

    def settle_losses(self) -> None:
        """Read the epoch's step losses on the host, all at once, and record each step's mean loss."""
        sums = [value for _, _, value in self._losses]
        tensors = [value for value in sums if isinstance(value, torch.Tensor)]
        if tensors:  # one read of every step's loss still on the device
            read = iter(torch.stack([t.to(tensors[0].device, torch.float64) for t in tensors]).tolist())
            sums = [next(read) if isinstance(value, torch.Tensor) else value for value in sums]
        for (iteration, units, _), loss_sum in zip(self._losses, sums, strict=True):
            if units:  # a rank that only helped (its share summed below) has no loss of its own
                self.recorder.add(self.epoch, "train", "loss", float(loss_sum) / units, iteration=iteration)
            self.loss_sum += float(loss_sum)
        self._losses.clear()


def train_rank(
    run: RunConfig,
    env: DistEnv,
    data: DynamicData | None = None,
    mark_failure: bool = False,
    strategy: Strategy | None = None,
) -> dict[str, Any] | None:
    """Run on every rank; rank 0 writes the run folder and returns the summary, others return None.
    ``run``: the run's typed configuration. ``data`` and ``strategy``: what this process already
    loaded and built (else built here from ``run``).

    A rank that fails writes its reason to ``failure-rank<r>.txt`` in the run folder and abandons
    its process group without the collective teardown (its peers may be dead), so the process can
    exit at once; peers blocked in a collective fail within ``dist_timeout_s`` at the latest. With
    ``mark_failure`` (no parent process watches the ranks: torchrun, SLURM) rank 0 also marks the
    run failed, with the earliest reason any rank wrote.
    """
    where = _RunPlace(RunFolder(Path(run.results_dir), run.run_id) if run.run_id else None, env.rank)
    device = None
    # NCCL's watchdog tears the communicators down and aborts the rank on a failed or timed-out collective
    os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
    try:
        where.enter("joining the process group")
        device = pick_device(run.device, env.local_rank)
        init_process_group(env, device, float(run.dist_timeout_s), run.dist_backend or "auto")
        result = train_in_group(run, env, device, data, where, strategy)
    except BaseException as exc:
        reports = mark_failure and where.reports_the_run()
        if reports:
            _finish_before_stopping()
        if where.folder is not None:
            try:
                where.folder.write_failure(env.rank, failure_text(exc))
                if reports:
                    cause = where.folder.first_cause() or f"rank {env.rank}: {failure_text(exc).splitlines()[0]}"
                    mark_failed(where.folder, run.identity(where.folder.run_id, env.world_size), cause)
            except Exception:  # reporting the failure must not replace it
                pass
        where.close()
        abandon_process_group(device)
        raise
    close_process_group()
    where.close()
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
    if isinstance(exc, OSError) and exc.errno is not None and exc.filename:  # a write that failed: the disk's own words
        return f"cannot write {exc.filename}: {exc.strerror}\n\n{traceback.format_exc()}"
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
    """The run folder, once this rank knows it (it is broadcast by rank 0 when not given), and the
    phase this rank is in, kept in the folder (``PhaseRecord``) for whoever reports its death."""

    folder: RunFolder | None
    rank: int = 0
    record: PhaseRecord | None = None

    def enter(self, phase: str) -> None:
        if self.record is None and self.folder is not None:
            try:
                self.record = PhaseRecord(self.folder, self.rank)
            except OSError:  # a folder that cannot be written: the failure says so elsewhere
                return
        if self.record is not None:
            self.record.enter(phase)

    def close(self) -> None:
        if self.record is not None:
            self.record.close()
            self.record = None

    def reports_the_run(self) -> bool:
        """Whether this rank marks the run failed where no launcher watches the ranks: rank 0, or the
        lowest rank alive when every rank below it was killed by a signal (NCCL's abort)."""
        if self.rank == 0:
            return True
        if self.folder is None:
            return False
        killed = {rank for _, rank, _ in self.folder.signal_deaths()}
        return all(rank in killed for rank in range(self.rank))


@dataclass(frozen=True)
class RunStart:
    """Where a run writes and what it continues: ``run`` with its results folder, id and ``resume``
    resolved (``resume``: the run folder it continues, else ``None``), and that folder's checkpoint."""

    run: RunConfig
    resumed: dict[str, Any] | None

    @property
    def folder(self) -> RunFolder:
        return RunFolder(Path(self.run.results_dir), str(self.run.run_id))


def start_run(run: RunConfig, world_size: int) -> RunStart:
    """The one place a run's folder and resume are resolved (the launcher before it starts the ranks,
    rank 0 of a job no launcher process watches): the run ``resume=`` names or finds, on as many ranks
    as it ran on, else the ``run_id`` given, else a new one."""
    resume_dir = find_resume(run)
    if resume_dir is None:
        run_id = run.run_id or new_run_id(str(run.dataset.name), str(run.model.name), str(run.sched.name))
        return RunStart(run.replace(run_id=str(run_id), resume=None), None)
    state = load_checkpoint(resume_dir)
    if int(state["world_size"]) != world_size:
        raise ConfigError(f"cannot resume {resume_dir.name}: it ran on {state['world_size']} ranks, this run has {world_size}")
    return RunStart(run.replace(results_dir=str(resume_dir.parent), run_id=resume_dir.name, resume=str(resume_dir)), state)


def timed_evaluation(strategy: Strategy, phase: str) -> tuple[Mapping[str, MetricValue], float]:
    """``strategy.evaluate(phase)`` and its wall time on this rank. The host clock reads finished work:
    ``evaluate`` returns host numbers, so every device kernel it queued has run when it returns."""
    began = time.perf_counter()
    results = strategy.evaluate(phase)
    return results, time.perf_counter() - began


def _record(recorder: MetricRecorder, epoch: int, phase: str, metric: str, value: MetricValue) -> None:
    if isinstance(value, Missing):
        recorder.add_missing(epoch, phase, metric, value.reason)
    else:
        recorder.add(epoch, phase, metric, value)


def train_in_group(
    run: RunConfig,
    env: DistEnv,
    device: torch.device,
    data: DynamicData | None,
    where: _RunPlace,
    strategy: Strategy | None = None,
) -> dict[str, Any] | None:
    """The run, in a process group this rank already joined; rank 0 returns the summary."""
    rank_run = _RankRun(run, env, device, data, where, strategy)
    for epoch in range(rank_run.first_epoch, rank_run.run.epochs):
        if rank_run.stopped_early:  # a resumed run that had stopped already
            break
        rank_run.train_epoch(epoch)
        rank_run.end_epoch(epoch)
        if rank_run.stopped_early:  # every rank holds rank 0's decision (``_observe``)
            break
    return rank_run.finish()


def train_in_joined_group(
    run: RunConfig, env: DistEnv, device: torch.device, data: DynamicData | None = None
) -> dict[str, Any] | None:
    """One run in a process group this rank joined before and keeps after it (runs one after another
    in one group, as the GPU check trains its strategies): ``train_in_group`` in the folder ``run``
    names (``results_dir``, ``run_id``), its phase kept there and a failure's reason written there as
    ``train_rank`` writes it; the exception then propagates (the caller decides what becomes of the
    group). Rank 0 returns the summary."""
    where = _RunPlace(RunFolder(Path(run.results_dir), run.run_id) if run.run_id else None, env.rank)
    try:
        return train_in_group(run, env, device, data, where)
    except BaseException as exc:
        if where.folder is not None:
            where.folder.write_failure(env.rank, failure_text(exc))  # never raises
        raise
    finally:
        where.close()


class _RankRun:
    """One rank's run: set up (folder, strategy, model, optimizer, resume), then epoch by epoch."""

    def __init__(
        self,
        run: RunConfig,
        env: DistEnv,
        device: torch.device,
        data: DynamicData | None,
        where: _RunPlace,
        strategy: Strategy | None,
    ) -> None:
        self.run, self.device = run, device
        self.rank, self.world_size, self.is_main = env.rank, env.world_size, env.rank == 0
        configure_logging(run.progress and self.is_main)
        start = start_run(run, self.world_size) if self.is_main else None
        if start is not None:  # before any rank knows the folder, so before any can fail into it
            start.folder.forget_old_failures()
        shared = (start.run.results_dir, start.run.run_id, start.resumed) if start is not None else None
        results_dir, self.run_id, resumed = broadcast_from_rank0(shared)
        self.folder = where.folder = RunFolder(results_dir, self.run_id)
        self.where = where
        self.rows: list[tuple[Any, ...]] = []  # rank 0 keeps every rank's rows
        if self.is_main:
            self.folder.create(
                OmegaConf.to_yaml(OmegaConf.create(run.replace(run_id=self.run_id, results_dir=results_dir).to_container()))
            )
            if resumed:  # the completed epochs' rows, and nothing a killed writer of the interrupted run left
                self.rows = resumed_rows(self.folder, resumed)
                remove_stale_temporaries(self.folder.path)
        _record_ranks(self.folder, self.rank, self.world_size, device)
        where.enter("loading the data")
        self.strategy = strategy if strategy is not None else build_strategy(run.sched)  # its data kind: a stream or its cut
        loaded = data if data is not None else load_data(run.dataset)
        data = for_task(loaded, self.strategy.data_kind, self.run)  # a no-op where the launcher did it
        self.described = {"task": describe_task(data, run.dataset), **data_counts(data)}  # the summary's words
        self.inapplicable = inapplicable_settings(data)
        self.recorder = MetricRecorder(self.run_id, self.rank)
        where.enter(f"the setup of sched={self.strategy.name} (partitioning, planning)")
        self.strategy.setup(RunContext(data, self.run, self.rank, self.world_size, device, Artifacts(self.folder, self.is_main)))
        seed_everything(self.run.seed)
        self.module = self.strategy.objective(build_model(run.model, data))
        if resumed:
            self.strategy.load_state_dict(resumed["strategy"])
            self.module.load_state_dict(resumed["model"])
            self.recorder.missing.update(resumed.get("missing", {}))
        self.module = self.module.to(device)
        self.optimizer = build_optimizer(run.optim, self.module.parameters())
        bucket_bytes = int(float(run.grad_sync.bucket_mb) * 2**20)
        self.sync = GradientSync(
            self.module, self.world_size, bucket_bytes, run.grad_sync.overlap, self.strategy.gradient_staleness
        )
        if resumed:
            self.optimizer.load_state_dict(resumed["optimizer"])
            restore_rng(resumed["rng"][self.rank], device)  # last: the generators continue where the checkpoint left them
        self.first_epoch = int(resumed["epoch"]) + 1 if resumed else 0
        self.early_stop = _early_stopping(run)
        if resumed and self.early_stop is not None and resumed.get("early_stop"):
            self.early_stop.load_state_dict(resumed["early_stop"])
        self.base_lrs = [group["lr"] for group in self.optimizer.param_groups]
        self.checkpointing = run.checkpoint
        self.count_flops = run.metrics.count_flops
        self.count_syncs = run.metrics.count_syncs
        self.show_progress = run.progress and self.is_main

    def train_epoch(self, epoch: int) -> None:
        """The strategy's epoch, timed, then the epoch's metrics and evaluation."""
        self.where.enter(f"training, epoch {epoch + 1} of {self.run.epochs}")
        for group, base in zip(self.optimizer.param_groups, self.base_lrs, strict=True):
            group["lr"] = base * self.strategy.lr_multiplier(epoch)
        record = partial(_record, self.recorder, epoch)
        with ExitStack() as stack:
            bar = stack.enter_context(StepBar(f"epoch {epoch + 1}/{self.run.epochs}")) if self.show_progress else None
            totals = _EpochTotals(self.recorder, epoch, not self.sync.overlap, bar)
            rss_resettable = reset_memory_peaks(self.device)
            flops = stack.enter_context(count_conv_flops(self.module)) if self.count_flops else None
            run = Epoch(
                epoch,
                self.module,
                self.optimizer,
                self.sync,
                self.device,
                self.rank,
                self.world_size,
                totals,
                record,
                flops,
                on_expected=bar.expect if bar is not None else None,
            )
            epoch_region = Region(self.device)  # finished work: on CUDA, events on the current stream
            with counting_syncs(self.count_syncs, self.device, self.module) as syncs:
                measured = self.strategy.run_epoch(run)
            epoch_time = epoch_region.stop().seconds
        totals.settle_losses()  # the steps' losses, read once the epoch's work is queued
        # Read after the timed region: counting never waits for the device inside it.
        conv_flops: MetricValue = flops.total if flops is not None else Missing("metrics.count_flops=false")
        if any(getattr(module, "graph_convolutions", True) is False for module in self.module.modules()):
            conv_flops = Missing("the model has no graph convolutions (a memory-based continuous-time model)")
        # Each memory figure under its own name: the GPU allocator's peak only where there is one (a
        # CPU run has no such figure, so no row), the process's peak resident set wherever Linux resets it.
        memory: dict[str, MetricValue] = {
            "peak_rss_bytes": peak_rss()
            if rss_resettable
            else Missing("this system cannot reset the process's peak resident set per epoch")
        }
        gpu_peak = gpu_peak_allocated(self.device)
        if gpu_peak is not None:
            memory["gpu_peak_allocated_bytes"] = gpu_peak
        for metric, value in (
            ("epoch_time_s", epoch_time),
            ("busy_s", totals.busy),
            ("wait_s", totals.wait if not self.sync.overlap else Missing(WAIT_IN_COMM)),
            ("comm_s", totals.comm),
            *memory.items(),
            ("conv_flops", conv_flops),
            *syncs.metrics(totals.steps),
            *((f"bytes_{kind}", count) for kind, count in totals.bytes.items()),
            *measured.items(),
        ):
            record("train", metric, value)

        loss_sum = torch.tensor([totals.loss_sum, float(totals.units)], dtype=torch.float64, device=self.device)
        comm.all_reduce(loss_sum)
        train_loss: MetricValue = (
            float(loss_sum[0] / loss_sum[1]) if loss_sum[1] > 0 else Missing("no training step (a model without parameters)")
        )
        self.where.enter(f"evaluation, epoch {epoch + 1} of {self.run.epochs}")
        (val, val_s), (test, test_s) = timed_evaluation(self.strategy, "val"), timed_evaluation(self.strategy, "test")
        if self.is_main:
            record("train", "loss", train_loss)
            for phase, results, seconds in (("val", val, val_s), ("test", test, test_s)):
                for metric, value in results.items():
                    record(phase, metric, value)
                record(phase, EVAL_TIME, seconds)
            shown = "  ".join(
                f"val_{k} {v:.4f}"
                for k, v in val.items()
                if (k != "loss" or len(val) == 1) and "inductive" not in k and not isinstance(v, Missing)
            )
            log.info(
                "epoch %d/%d  train_loss %s  %s  time %.2fs",
                epoch + 1,
                self.run.epochs,
                f"{train_loss:.4f}" if not isinstance(train_loss, Missing) else "-",
                shown,
                epoch_time,
            )
        self._observe(epoch, val)

    @property
    def stopped_early(self) -> bool:
        return self.early_stop is not None and self.early_stop.stopped

    def _observe(self, epoch: int, val: Mapping[str, MetricValue]) -> None:
        """Rank 0 feeds the epoch's validation metric to the early stop and every rank takes its
        state, so all ranks stop after the same epoch."""
        if self.early_stop is None:
            return
        if self.is_main:
            try:  # checked before the run: a name missing from one epoch's metrics reads as not measured
                value = val.get(watched_metric(self.early_stop.metric, val))
            except ConfigError:
                value = None
            self.early_stop.observe(epoch, None if value is None or isinstance(value, Missing) else float(value))
            if self.early_stop.stopped:
                log.info("stopping early after epoch %d: %s", epoch + 1, self.early_stop.reason())
        state = broadcast_from_rank0(self.early_stop.state_dict() if self.is_main else None) if self.world_size > 1 else None
        if state is not None:
            self.early_stop.load_state_dict(state)

    def _collect(self, with_rng: bool) -> tuple[list[tuple[Any, ...]], list[Any]]:
        """Rank 0 collects every rank's new rows and missing-metric reasons (and RNG states);
        returns the new rows (on rank 0) and the RNG states."""
        rng = capture_rng(self.device) if with_rng else None
        gathered = _gather_to_rank0((self.recorder.take(), self.recorder.missing, rng), self.world_size, self.is_main)
        new_rows = [row for part, _, _ in gathered for row in part]
        if self.is_main:
            self.rows.extend(new_rows)
            for _, missing, _ in gathered:
                self.recorder.missing.update(missing)
        return new_rows, [rng for _, _, rng in gathered]

    def end_epoch(self, epoch: int) -> None:
        """Collect the epoch's rows on rank 0, write them, then the checkpoint and its own rows.

        The other ranks wait for rank 0's writes on the store (``comm.wait_for_rank``), as for its
        other solo work: a checkpoint that takes longer than ``dist_timeout_s`` to write must not
        time out their next collective (under NCCL its watchdog would abort healthy ranks)."""
        self.where.enter(f"saving the metrics and checkpoint, epoch {epoch + 1} of {self.run.epochs}")
        save_start = time.perf_counter()
        if self.checkpointing:
            self.strategy.collect_for_checkpoint()  # every rank: a strategy's per-rank state to rank 0
        new_rows, rngs = self._collect(self.checkpointing)
        try:
            if self.is_main:
                self._save(epoch, new_rows, rngs, save_start)
        finally:  # a failed write too lets the others on, to fail in their next collective as a lost rank's peers do
            comm.wait_for_rank(0)

    def _save(self, epoch: int, new_rows: list[tuple[Any, ...]], rngs: list[Any], save_start: float) -> None:
        """Rank 0's writes at an epoch's end: the epoch's rows, then the checkpoint and its own rows."""
        self.folder.save_epoch_rows(MetricRecorder.frame(new_rows), f"epoch-{epoch:05d}")
        if not self.checkpointing:
            return
        state = {
            "epoch": epoch,
            "world_size": self.world_size,
            "run_id": self.run_id,
            "model": self.module.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "strategy": self.strategy.state_dict(),
            "rng": rngs,
            "missing": dict(self.recorder.missing),
            "early_stop": self.early_stop.state_dict() if self.early_stop is not None else None,
        }
        size = save_checkpoint(self.folder.path, state)
        # The checkpoint's own cost, saved at once: a resume from this checkpoint keeps these rows.
        saving = MetricRecorder(self.run_id, self.rank)
        saving.add(epoch, "train", "checkpoint_s", time.perf_counter() - save_start)
        saving.add(epoch, "train", "checkpoint_bytes", size)
        self.rows.extend(saving.rows)
        self.folder.save_epoch_rows(MetricRecorder.frame(saving.rows), f"epoch-{epoch:05d}-checkpoint")

    def finish(self) -> dict[str, Any] | None:
        """Rank 0 writes the metrics and the summary and returns the summary; other ranks return None."""
        self.where.enter("writing the results")
        self.sync.close()
        self._collect(with_rng=False)
        if not self.is_main:
            return None
        described = self.strategy.describe()
        info = {
            **self.run.identity(self.run_id, self.world_size),
            "status": "ok",
            **self.described,
            "window": self.run.window,
            **described,
            "dist_backend": comm.backend(),  # the process group's backend, e.g. cpu:gloo,cuda:nccl
            "missing": dict(sorted({**described.get("missing", {}), **self.recorder.missing}.items())),
        }
        for setting in self.inapplicable:  # e.g. link prediction's negatives on a node regression run: not in its row
            info.pop(setting, None)
        if self.early_stop is not None:
            info["early_stop"] = self.early_stop.describe()
        return self.folder.finish(MetricRecorder.frame(self.rows), info)


def _early_stopping(run: RunConfig) -> EarlyStopping | None:
    """The run's early stop (``early_stop.*``, checked before the run started), or ``None`` when off."""
    config = run.early_stop
    if config.metric is None or config.patience is None:
        return None
    mode = config.mode or default_mode(parse_metric(config.metric))
    return EarlyStopping(str(config.metric), int(config.patience), mode)


def _gather_to_rank0(value: Any, world_size: int, is_main: bool) -> list[Any]:
    if world_size == 1:
        return [value]
    gathered = comm.gather_object(value, dst=0)
    return gathered if gathered is not None else []


def _record_ranks(folder: RunFolder, rank: int, world_size: int, device: torch.device) -> None:
    """``ranks.json``: where each rank runs (host, process id, device, the process group's backend), for finding a lost one."""
    me = {"rank": rank, "host": socket.gethostname(), "pid": os.getpid(), "device": str(device), "dist_backend": comm.backend()}
    gathered = _gather_to_rank0(me, world_size, rank == 0)
    if rank == 0:
        write_json(folder.path / "ranks.json", gathered)
