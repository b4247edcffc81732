"""One rank's whole run: set up, receive the plan, train and evaluate, hand metrics to rank 0."""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from omegaconf import OmegaConf

from dygsched.data.groups import Split, sliding_groups, split_by_time
from dygsched.data.loading import instantiate_component, load_graph
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.engine.distributed import DistEnv, init_process_group, peak_memory_bytes, pick_device
from dygsched.engine.evaluate import evaluate
from dygsched.engine.executor import IterationStats, wrap_ddp
from dygsched.engine.objective import GroupObjective
from dygsched.engine.timeline import Timeline, broadcast_from_rank0
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


def run_info(cfg: Mapping[str, Any], run_id: str, world_size: int, graph: TemporalGraph, plan: Plan, status: str) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "dataset": cfg["dataset"]["name"],
        "model": cfg["model"]["name"],
        "sched": cfg["sched"]["name"],
        "world_size": world_size,
        "epochs": int(cfg["epochs"]),
        "seed": int(cfg["seed"]),
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
        for kind, count in stats.bytes.items():
            self.bytes[kind] = self.bytes.get(kind, 0) + count


def train_rank(cfg: Mapping[str, Any], env: DistEnv, graph: TemporalGraph | None = None) -> dict[str, Any] | None:
    """Run on every rank; rank 0 writes the run folder and returns the summary, others return None."""
    device = pick_device(str(cfg["device"]), env.local_rank)
    init_process_group(env, device, float(cfg["dist_timeout_s"]))
    try:
        return _train(cfg, env, device, graph)
    finally:
        gc.collect()  # free the DDP wrapper first: gloo's teardown can deadlock on a live one
        dist.destroy_process_group()


def _train(cfg: Mapping[str, Any], env: DistEnv, device: torch.device, graph: TemporalGraph | None) -> dict[str, Any] | None:
    rank, world_size, is_main = env.rank, env.world_size, env.rank == 0
    run_id = broadcast_from_rank0(cfg.get("run_id") or new_run_id(cfg["dataset"]["name"], cfg["model"]["name"], cfg["sched"]["name"]))
    folder = RunFolder(cfg["results_dir"], run_id)
    if is_main:
        folder.create(OmegaConf.to_yaml(OmegaConf.create(dict(cfg, run_id=run_id))))
    if graph is None:
        graph = load_graph(cfg["dataset"])
    split = build_split(cfg, graph)

    timeline = Timeline(cfg["sched"], graph, split.train, world_size, rank, folder)
    plan = timeline.initial_plan()

    seed_everything(int(cfg["seed"]))
    objective = GroupObjective(build_model(cfg["model"], graph), graph.task).to(device)
    ddp = wrap_ddp(objective, device)
    base_lr = float(cfg["optim"]["lr"])
    optimizer = torch.optim.Adam(ddp.parameters(), lr=base_lr, weight_decay=float(cfg["optim"]["weight_decay"]))
    executor = instantiate_component(cfg["sched"]["executor"], "executor")
    recorder = MetricRecorder(run_id, rank)

    epochs = int(cfg["epochs"])
    for epoch in range(epochs):
        totals = _EpochTotals(recorder, epoch)
        profiler = timeline.profiler_for(epoch)
        for group in optimizer.param_groups:
            group["lr"] = base_lr * timeline.lr_multiplier(epoch)
        start = time.perf_counter()
        executor.run_epoch(ddp, optimizer, graph, split.train, timeline.plan_for(epoch, plan), rank, device, totals, profiler=profiler)
        epoch_time = time.perf_counter() - start

        loss_sum = torch.tensor([totals.loss_sum, float(totals.groups)], dtype=torch.float64, device=device)
        dist.all_reduce(loss_sum)
        train_loss = float(loss_sum[0] / loss_sum[1].clamp(min=1))
        for metric, value in (
            ("epoch_time_s", epoch_time),
            ("busy_s", totals.busy),
            ("wait_s", totals.wait),
            ("comm_s", totals.comm),
            ("peak_mem_bytes", peak_memory_bytes(device)),
            *((f"bytes_{kind}", count) for kind, count in totals.bytes.items()),
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

    gathered: list[Any] = [None] * world_size if is_main else []
    dist.gather_object(recorder.rows, gathered if is_main else None, dst=0)
    if not is_main:
        return None
    rows = [row for rank_rows in gathered for row in rank_rows]
    return folder.finish(MetricRecorder.frame(rows), run_info(cfg, run_id, world_size, graph, plan, "ok"))
