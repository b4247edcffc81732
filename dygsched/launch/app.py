"""``run(cfg) -> summary``: the whole training run behind ``dygsched run``.

Outside a distributed job it validates everything it can in this process (settings, data,
split, world size, the planner), then hands the run to the configured launcher (``local``
processes, ``torchrun``), which starts the ranks and waits for them. Inside a job (``RANK`` and
``WORLD_SIZE`` set by torchrun, or a SLURM task of ``launcher=slurm``) this process *is* a rank:
it validates the same way, then trains its rank directly.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from dygsched.components import instantiate_component
from dygsched.data.kinds import DynamicData
from dygsched.data.loading import load_data
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.engine.checkpoint import find_resume, load_checkpoint, mark_failed
from dygsched.engine.distributed import DistEnv
from dygsched.engine.strategy import Strategy
from dygsched.engine.worker import (
    build_model,
    build_optimizer,
    build_strategy,
    failure_text,
    run_identity,
    run_settings,
    train_rank,
)
from dygsched.errors import ConfigError, DygschedError, Terminated
from dygsched.launch.base import Launcher, LaunchFailed
from dygsched.launch.config_checks import check_plain_name, check_results_dir, check_settings, check_world_size
from dygsched.metrics.log import configure_logging
from dygsched.metrics.run_folder import RunFolder, new_run_id
from dygsched.metrics.runs_table import check_runs_table

log = logging.getLogger("dygsched")


def describe_data(data: DynamicData) -> str:
    if isinstance(data, TemporalGraph):
        return f"{data.num_nodes} nodes, {data.num_snapshots} snapshots"
    return f"{data.num_nodes} nodes, {data.num_events} events"


class RunFailed(DygschedError):
    """A worker failed; the run folder says which and why."""


def resolve_world_size(value: Any, launcher: Launcher) -> int:
    """``world_size``: its number, or for ``auto`` one rank per GPU of every node the launcher runs
    ranks on (this machine's GPU count; 2 CPU processes per node where it has none)."""
    check_world_size(value)
    return launcher.auto_world_size(torch.cuda.device_count()) if value == "auto" else int(value)


def check_device_here(device: str) -> None:
    """``device=cuda`` on a machine without a visible CUDA device: refused before any rank starts."""
    if device == "cuda" and not torch.cuda.is_available():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        why = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
        raise ConfigError(f"device=cuda but this machine has no CUDA device visible{why}: use device=cpu or device=auto")


def check_config(cfg: Mapping[str, Any]) -> Strategy:
    """The checks that need no data: every one fails before anything starts. Returns the strategy,
    built once here (an unknown solver, setting or value: one line now) and used by this process."""
    check_settings(cfg)
    strategy = build_strategy(cfg["sched"])
    check_overlap(cfg, strategy)
    return strategy


def check_overlap(cfg: Mapping[str, Any], strategy: Strategy) -> None:
    """``grad_sync.overlap=true`` starts bucket all-reduces inside the last backward; a strategy whose
    backward runs collectives of its own would interleave the two in each rank's own order (under
    NCCL: a hang), so the pair is refused."""
    if cfg["grad_sync"]["overlap"] and strategy.communicates_in_backward:
        raise ConfigError(
            f"grad_sync.overlap=true cannot be used with sched={strategy.name}: its backward pass exchanges data "
            "between ranks, which overlapped gradient buckets would interleave in a different order on each rank "
            "(set grad_sync.overlap=false)"
        )


def build_launcher(cfg: Mapping[str, Any]) -> Launcher:
    params = {k: v for k, v in cfg["launcher"].items() if k != "name"}
    if "_target_" not in params:
        raise ConfigError(f"launcher '{cfg['launcher'].get('name')}' names no _target_")
    launcher = instantiate_component(params, "launcher")
    if not isinstance(launcher, Launcher):
        raise ConfigError(f"launcher '{cfg['launcher'].get('name')}' is not a dygsched Launcher")
    return launcher


def static_checks(cfg: Mapping[str, Any]) -> tuple[Launcher, int]:
    """Everything that can be checked from the settings alone (also run for every sweep point)."""
    check_config(cfg)
    launcher = build_launcher(cfg)
    world_size = resolve_world_size(cfg["world_size"], launcher)
    launcher.check(world_size)
    return launcher, world_size


def prepare(cfg: dict[str, Any], world_size: int, strategy: Strategy) -> DynamicData:
    """Load and validate the data and everything that depends on it (``strategy`` included), before any rank trains."""
    data = load_data(cfg["dataset"])
    strategy.check(data, run_settings(cfg), world_size)
    model = build_model(cfg["model"], data)  # a model that cannot be built fails here, before any worker starts
    strategy.check_model(model)
    build_optimizer(cfg["optim"], model.parameters())
    return data


def under_torchrun() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def run(cfg: DictConfig, overrides: Sequence[str] | None = None) -> dict[str, Any]:
    """Train one run; ``overrides`` (the command line's) let a launcher start ranks with the same settings."""
    try:
        config: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    except Exception as exc:  # an interpolation that cannot resolve
        from dygsched.launch.hydra_app import resolver_refusal

        raise resolver_refusal(exc) or ConfigError(f"invalid configuration: {str(exc).splitlines()[0]}") from None
    configure_logging(bool(config["progress"]))
    strategy = check_config(config)
    launcher = build_launcher(config)
    env = launcher.worker_env() or (DistEnv.from_environ() if under_torchrun() else None)
    if env is not None:
        return run_rank(config, env, strategy)

    launcher.check_here()
    check_device_here(str(config["device"]))
    check_results_dir(Path(config["results_dir"]))
    world_size = resolve_world_size(config["world_size"], launcher)
    launcher.check(world_size)
    config["world_size"] = world_size
    data = prepare(config, world_size, strategy)  # the ranks, other processes, each build their own
    asked = Path(config["results_dir"])
    check_runs_table(asked)  # a table the run could not append to: refused before it trains
    folder = _run_folder(config)
    if Path(folder.results_dir) != asked:  # resume= named a run in another results folder
        check_runs_table(folder.results_dir)
    resumed = f", resuming after epoch {load_checkpoint(folder.path)['epoch'] + 1}" if config.get("resume") else ""
    log.info(
        "dygsched run %s: %s on %s (%s), sched=%s, %d ranks, launcher=%s%s",
        folder.run_id, config["model"]["name"], config["dataset"]["name"], describe_data(data), config["sched"]["name"], world_size,
        launcher.name, resumed,
    )  # fmt: skip
    try:  # the launcher stops its workers, then records the run
        previous = signal.signal(signal.SIGTERM, _terminated)
    except ValueError:  # not the main thread (an embedding application): its own handler stays
        previous = None
    try:
        launcher.launch(config, data, folder, world_size, overrides)
    except LaunchFailed as exc:
        try:
            mark_failed(folder, run_identity(config, folder.run_id, world_size), exc.reason)
        except OSError as write:  # the folder itself is what failed (read-only, full): say so, in the same line
            raise RunFailed(f"run {folder.run_id} failed: {exc.reason}; it could not be marked failed either ({write.strerror})") from None
        raise RunFailed(f"run {folder.run_id} failed: {exc.reason} (details in {folder.path})") from None
    except Terminated as exc:
        mark_failed(folder, run_identity(config, folder.run_id, world_size), str(exc))
        exc.args = (f"run {folder.run_id} {exc}: its completed epochs are in {folder.path}; resume={folder.path} continues it",)
        raise
    except KeyboardInterrupt:
        if folder.path.is_dir():
            mark_failed(folder, run_identity(config, folder.run_id, world_size), "interrupted")
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if not (folder.path / "summary.json").exists():
        return {}  # rank 0 ran on another machine: its summary is there
    return {**folder.read_summary(), "run_dir": str(folder.path)}


def _run_folder(config: dict[str, Any]) -> RunFolder:
    """The run's folder: the one it resumes, or a new id; written into ``config`` for the ranks."""
    resume_dir = find_resume(config)
    if resume_dir is not None:
        config.update(results_dir=str(resume_dir.parent), run_id=resume_dir.name, resume=str(resume_dir))
    else:
        if config.get("resume") is True:
            log.info("dygsched: nothing to resume for these settings; starting a new run")
        config["resume"] = None
        config["run_id"] = config.get("run_id") or new_run_id(config["dataset"]["name"], config["model"]["name"], config["sched"]["name"])
        check_plain_name(config["run_id"], "run_id (made of the dataset, model and sched names)")
        existing = Path(config["results_dir"]) / config["run_id"]
        if existing.exists():
            if not config.get("overwrite"):
                raise ConfigError(
                    f"run_id={config['run_id']} already names a run in {existing}: resume={existing} continues it, "
                    "overwrite=true moves it aside and starts anew"
                )
            aside = existing.with_name(f"{existing.name}.replaced-{time.strftime('%Y%m%d-%H%M%S')}")
            existing.rename(aside)
            log.info("dygsched: moved the earlier run %s aside to %s", existing, aside)
    return RunFolder(Path(config["results_dir"]), config["run_id"])


def run_rank(config: dict[str, Any], env: DistEnv, strategy: Strategy) -> dict[str, Any]:
    """This process is one rank of a job started by torchrun or SLURM: validate ``strategy``, then train it."""
    config["world_size"] = env.world_size
    data = prepare(config, env.world_size, strategy)
    # SIGTERM reaches every rank: from torchrun (sent on, or stopping the others when one rank
    # fails) and from SLURM (preemption, scancel, the time limit). Each rank stops where it is;
    # rank 0 records the run as failed with its completed epochs (or with the failed rank's
    # reason when one failed first), and resume= continues it.
    try:
        signal.signal(signal.SIGTERM, _terminated)
    except ValueError:  # not the main thread
        pass
    try:
        return train_rank(config, env, data, mark_failure=True, strategy=strategy) or {}
    except DygschedError:
        raise
    except SystemExit as exc:  # submitit's preemption handler on rank 0, after it requeued the job
        raise RunFailed(f"rank {env.rank}: stopped by the cluster (exit {exc.code}); a requeued job with resume=true continues it") from None
    except BaseException as exc:
        raise RunFailed(f"rank {env.rank}: {failure_text(exc).splitlines()[0]}") from None


def _terminated(signum: int, frame: Any) -> None:
    signal.signal(signum, signal.SIG_IGN)  # once: stopping the workers and recording the run must not be cut short
    raise Terminated(signum)


