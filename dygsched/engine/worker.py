"""One rank's whole run: set up, receive the plan, train and evaluate, hand metrics to rank 0."""

from __future__ import annotations

import gc
import os
import random
import re
import signal
import socket
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from omegaconf import OmegaConf

from dygsched.data.groups import Split, sliding_groups, split_by_time
from dygsched.data.loading import instantiate_component, load_graph
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.engine.checkpoint import capture_rng, find_resume, load_checkpoint, mark_failed, restore_rng, save_checkpoint
from dygsched.engine.distributed import DistEnv, abandon_process_group, init_process_group, peak_memory_bytes, pick_device
from dygsched.engine.evaluate import evaluate
from dygsched.engine.executor import EpochRun, IterationStats, wrap_ddp
from dygsched.engine.objective import GroupObjective
from dygsched.engine.timeline import Timeline, broadcast_from_rank0
from dygsched.errors import ConfigError, DygschedError
from dygsched.metrics.atomic import remove_stale_temporaries, write_json
from dygsched.metrics.recorder import MetricRecorder
from dygsched.metrics.run_folder import RunFolder, new_run_id
from dygsched.sched.plan import Plan


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def build_split(cfg: Mapping[str, Any], graph: TemporalGraph) -> Split:
    groups = sliding_groups(graph.num_snapshots, int(cfg["window"]))
    return split_by_time(groups, float(cfg["split"]["train"]), float(cfg["split"]["val"]))


def build_model(model_cfg: Mapping[str, Any], graph: TemporalGraph) -> torch.nn.Module:
    params = {k: v for k, v in model_cfg.items() if k != "name"}
    return instantiate_component(params, "model", in_channels=graph.num_features, out_channels=graph.out_channels)


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


def run_info(cfg: Mapping[str, Any], run_id: str, world_size: int, graph: TemporalGraph, plan: Plan, status: str) -> dict[str, Any]:
    return {
        **run_identity(cfg, run_id, world_size),
        "status": status,
        "num_snapshots": graph.num_snapshots,
        "num_nodes": graph.num_nodes,
        "window": int(cfg["window"]),
        "plan_iterations": plan.num_iterations,
        "plan_predicted_epoch_time": plan.predicted_epoch_time,
    }


class _EpochTotals:
    """Sums one rank's iteration stats over an epoch, recording each iteration as rows too."""

    def __init__(self, recorder: MetricRecorder, epoch: int) -> None:
        self.recorder, self.epoch = recorder, epoch
        self.busy = self.wait = self.comm = self.loss_sum = 0.0
        self.groups = 0
        self.conv_flops = 0
        self.comm_samples: list[float] = []
        self.bytes: dict[str, int] = {}

    def __call__(self, stats: IterationStats) -> None:
        rec, e, i = self.recorder, self.epoch, stats.iteration
        for metric, value in (("busy_s", stats.busy_s), ("wait_s", stats.wait_s), ("comm_s", stats.comm_s), ("groups", stats.groups)):
            rec.add(e, "train", metric, value, iteration=i)
        if stats.groups:
            rec.add(e, "train", "loss", stats.loss_sum / stats.groups, iteration=i)
        self.busy += stats.busy_s
        self.wait += stats.wait_s
        self.comm += stats.comm_s
        self.comm_samples.append(stats.comm_s)
        self.loss_sum += stats.loss_sum
        self.groups += stats.groups
        self.conv_flops += stats.conv_flops
        for kind, count in stats.bytes.items():
            self.bytes[kind] = self.bytes.get(kind, 0) + count


def train_rank(
    cfg: Mapping[str, Any], env: DistEnv, graph: TemporalGraph | None = None, mark_failure: bool = False
) -> dict[str, Any] | None:
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
        result = _train(cfg, env, device, graph, where)
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
    gc.collect()  # free the DDP wrapper first: gloo's teardown can deadlock on a live one
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


def _train(
    cfg: Mapping[str, Any], env: DistEnv, device: torch.device, graph: TemporalGraph | None, where: _RunPlace
) -> dict[str, Any] | None:
    rank, world_size, is_main = env.rank, env.world_size, env.rank == 0
    start = _start(cfg, world_size) if is_main else None
    rows: list[tuple] = list(start[2].pop("rows")) if start and start[2] else []  # rank 0 keeps every rank's rows
    results_dir, run_id, resumed = broadcast_from_rank0(start)
    folder = where.folder = RunFolder(results_dir, run_id)
    if is_main:
        folder.create(OmegaConf.to_yaml(OmegaConf.create(dict(cfg, run_id=run_id, results_dir=results_dir))))
        if resumed:  # what a killed writer of the interrupted run may have left
            remove_stale_temporaries(folder.path)
    _record_ranks(folder, rank, world_size, device)
    if graph is None:
        graph = load_graph(cfg["dataset"])
    split = build_split(cfg, graph)

    timeline = Timeline(cfg["sched"], graph, split.train, world_size, rank, folder)
    plan = timeline.restore(resumed["timeline"]) if resumed else timeline.initial_plan()
    first_epoch = int(resumed["epoch"]) + 1 if resumed else 0

    seed_everything(int(cfg["seed"]))
    objective = GroupObjective(build_model(cfg["model"], graph), graph.task)
    if resumed:
        objective.load_state_dict(resumed["model"])
    objective = objective.to(device)
    ddp = wrap_ddp(objective, device)
    base_lr = float(cfg["optim"]["lr"])
    optimizer = torch.optim.Adam(ddp.parameters(), lr=base_lr, weight_decay=float(cfg["optim"]["weight_decay"]))
    executor = instantiate_component(cfg["sched"]["executor"], "executor")
    recorder = MetricRecorder(run_id, rank)
    if resumed:
        optimizer.load_state_dict(resumed["optimizer"])
        restore_rng(resumed["rng"][rank], device)  # last: the generators continue where the checkpoint left them
    checkpointing = bool(cfg.get("checkpoint", True))

    epochs = int(cfg["epochs"])
    for epoch in range(first_epoch, epochs):
        totals = _EpochTotals(recorder, epoch)
        profiler = timeline.profiler_for(epoch)
        for group in optimizer.param_groups:
            group["lr"] = base_lr * timeline.lr_multiplier(epoch)
        start_time = time.perf_counter()
        executor.run_epoch(EpochRun(ddp, optimizer, graph, split.train, timeline.plan_for(epoch, plan), rank, device, totals, profiler))
        epoch_time = time.perf_counter() - start_time

        loss_sum = torch.tensor([totals.loss_sum, float(totals.groups)], dtype=torch.float64, device=device)
        dist.all_reduce(loss_sum)
        train_loss = float(loss_sum[0] / loss_sum[1].clamp(min=1))
        for metric, value in (
            ("epoch_time_s", epoch_time),
            ("busy_s", totals.busy),
            ("wait_s", totals.wait),
            ("comm_s", totals.comm),
            ("peak_mem_bytes", peak_memory_bytes(device)),
            ("conv_flops", totals.conv_flops),
            *((f"bytes_{kind}", count) for kind, count in totals.bytes.items()),
            *((("reuse_preprocess_s", executor.preprocess_seconds),) if getattr(executor, "preprocess_seconds", 0) else ()),
        ):
            recorder.add(epoch, "train", metric, value)
        plan = timeline.after_epoch(epoch, profiler, totals.comm_samples, recorder) or plan
        val = evaluate(objective, graph, split.val, rank, world_size, device)
        test = evaluate(objective, graph, split.test, rank, world_size, device)
        if is_main:
            recorder.add(epoch, "train", "loss", train_loss)
            for phase, results in (("val", val), ("test", test)):
                for metric, value in results.items():
                    recorder.add(epoch, phase, metric, value)
            if cfg.get("progress", True):
                shown = "  ".join(f"val_{k} {v:.4f}" for k, v in val.items() if k != "loss" or len(val) == 1)
                print(f"epoch {epoch + 1}/{epochs}  train_loss {train_loss:.4f}  {shown}  time {epoch_time:.2f}s", flush=True)

        # End of the epoch: rank 0 collects every rank's new rows (and RNG states), then checkpoints.
        save_start = time.perf_counter()
        gathered = _gather_to_rank0((recorder.take(), capture_rng(device) if checkpointing else None), world_size, is_main)
        if is_main:
            rows.extend(row for part, _ in gathered for row in part)
            if checkpointing:
                state = {
                    "epoch": epoch,
                    "world_size": world_size,
                    "run_id": run_id,
                    "model": objective.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "timeline": timeline.state(epoch, plan),
                    "rng": [rng for _, rng in gathered],
                    "rows": rows,
                }
                size = save_checkpoint(folder.path, state)
                recorder.add(epoch, "train", "checkpoint_s", time.perf_counter() - save_start)
                recorder.add(epoch, "train", "checkpoint_bytes", size)

    gathered = _gather_to_rank0((recorder.take(), None), world_size, is_main)
    if not is_main:
        return None
    rows.extend(row for part, _ in gathered for row in part)
    return folder.finish(MetricRecorder.frame(rows), run_info(cfg, run_id, world_size, graph, plan, "ok"))


def _gather_to_rank0(value: Any, world_size: int, is_main: bool) -> list[Any]:
    gathered: list[Any] = [None] * world_size if is_main else []
    dist.gather_object(value, gathered if is_main else None, dst=0)
    return gathered


def _record_ranks(folder: RunFolder, rank: int, world_size: int, device: torch.device) -> None:
    """``ranks.json``: where each rank runs (host, process id, device), for finding a lost one."""
    me = {"rank": rank, "host": socket.gethostname(), "pid": os.getpid(), "device": str(device)}
    gathered = _gather_to_rank0(me, world_size, rank == 0)
    if rank == 0:
        write_json(folder.path / "ranks.json", gathered)
