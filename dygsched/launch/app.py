"""``run(cfg) -> summary``: the whole training run behind ``dygsched run``.

Outside torchrun it validates everything it can in this process (data, split, world size), then
starts the local workers. Inside torchrun (``RANK`` and ``WORLD_SIZE`` set) this process *is* a
worker and runs its rank directly.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf
from torch.multiprocessing.spawn import ProcessException

from dygsched.data.loading import instantiate_component, load_graph
from dygsched.engine.distributed import DistEnv
from dygsched.engine.planning import load_plan_file
from dygsched.engine.worker import build_model, build_split, train_rank
from dygsched.errors import ConfigError, DygschedError
from dygsched.launch.local import first_failure, launch_local
from dygsched.metrics.run_folder import RunFolder, new_run_id


class RunFailed(DygschedError):
    """A worker failed; the run folder says which and why."""


def resolve_world_size(value: Any) -> int:
    if value == "auto":
        return torch.cuda.device_count() or 2
    try:
        size = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"world_size must be a positive integer or 'auto', got {value!r}") from None
    if size < 1:
        raise ConfigError(f"world_size must be at least 1, got {size}")
    return size


def check_config(cfg: dict[str, Any]) -> None:
    if int(cfg["epochs"]) < 1:
        raise ConfigError(f"epochs must be at least 1, got {cfg['epochs']}")
    if int(cfg["sched"]["capacity"]) < 1:
        raise ConfigError(f"sched.capacity (groups per rank per iteration) must be at least 1, got {cfg['sched']['capacity']}")
    if float(cfg["optim"]["lr"]) <= 0:
        raise ConfigError(f"optim.lr must be positive, got {cfg['optim']['lr']}")


def under_torchrun() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def run(cfg: DictConfig) -> dict[str, Any]:
    try:
        config: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    except Exception as exc:  # an interpolation that cannot resolve
        raise ConfigError(f"invalid configuration: {str(exc).splitlines()[0]}") from None
    check_config(config)
    if under_torchrun():
        env = DistEnv.from_environ()
        config["world_size"] = env.world_size
        return train_rank(config, env) or {}

    world_size = resolve_world_size(config["world_size"])
    config["world_size"] = world_size
    graph = load_graph(config["dataset"])
    split = build_split(config, graph)
    build_model(config["model"], graph)  # a model that cannot be built fails here, before any worker starts
    executor = instantiate_component(config["sched"]["executor"], "executor")
    executor.check(int(config["window"]), world_size, int(config["sched"].get("profile_epochs") or 0))
    if config["sched"].get("plan_file"):
        load_plan_file(config["sched"]["plan_file"], len(split.train), world_size, int(config["sched"]["capacity"]))
    if world_size > len(split.train):
        raise ConfigError(f"world_size={world_size} is larger than the {len(split.train)} training groups: some ranks would never train")

    run_id = config.get("run_id") or new_run_id(config["dataset"]["name"], config["model"]["name"], config["sched"]["name"])
    config["run_id"] = run_id
    folder = RunFolder(Path(config["results_dir"]), run_id)
    if config.get("progress", True):
        print(
            f"dygsched run {run_id}: {config['model']['name']} on {config['dataset']['name']} "
            f"({graph.num_nodes} nodes, {graph.num_snapshots} snapshots, {len(split.train)} training groups), "
            f"sched={config['sched']['name']}, {world_size} ranks",
            flush=True,
        )
    try:
        launch_local(config, graph, folder.path, world_size)
    except ProcessException:
        reason = first_failure(folder.path, world_size)
        info = {key: config[key] for key in ("run_id", "world_size", "epochs", "seed")}
        info.update(dataset=config["dataset"]["name"], model=config["model"]["name"], sched=config["sched"]["name"])
        folder.fail(info, reason)
        raise RunFailed(f"run {run_id} failed: {reason} (details in {folder.path})") from None
    return folder.read_summary()
