"""``run(cfg) -> summary``: the whole training run behind ``dygsched run``.

It takes the run as the typed ``RunConfig`` its caller composed once (``compose_run``: the command,
a paper sweep, a test). Outside a distributed job it runs the rest of the check pipeline
(``checks``: the components, the launcher, the strategy's own check of the data) once in this
process, resolves the run folder, then hands the same typed run to the configured launcher
(``local`` processes, ``torchrun``), which starts the ranks and waits for them. Inside a job (``RANK``
and ``WORLD_SIZE`` set by torchrun, or a SLURM task of ``launcher=slurm``) this process *is* a
rank: it runs the same checks, then trains its rank directly.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dygsched.data.kinds import DynamicData
from dygsched.data.loading import for_task, load_data
from dygsched.data.task_names import describe_snapshots, describe_task
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.engine.checkpoint import mark_failed
from dygsched.engine.distributed import DistEnv
from dygsched.engine.resumable import NEW_IF_NONE, checkpoint_path
from dygsched.engine.run_config import RunConfig, check_plain_name
from dygsched.engine.worker import RunStart, failure_text, start_run, train_rank
from dygsched.errors import ConfigError, DygschedError, Terminated
from dygsched.launch.base import LaunchFailed
from dygsched.launch.checks import CheckedRun, check_data, check_device_here, check_ranks, check_results_dir, check_run
from dygsched.launch.torchrun import quote_override
from dygsched.metrics.log import configure_logging
from dygsched.metrics.run_folder import RunFolder
from dygsched.metrics.runs_table import check_runs_table

log = logging.getLogger("dygsched")


def describe_data(data: DynamicData) -> str:
    if isinstance(data, TemporalGraph):
        return f"{data.num_nodes} nodes, {describe_snapshots(data)}"
    return f"{data.num_nodes} nodes, {data.num_events} events"


def describe_objective(checked: CheckedRun, data: DynamicData) -> str:
    """The header's second line: ``task: node regression of the next snapshot's log-degree; metric: mse``."""
    metrics = sorted(name for name in checked.strategy.evaluation_metrics(data, checked.run) if name != "loss")
    return f"task: {describe_task(data, checked.run.dataset)}; metric{'s' if len(metrics) > 1 else ''}: {', '.join(metrics)}"


class RunFailed(DygschedError):
    """A worker failed; the run folder says which and why."""


def prepare(checked: CheckedRun, world_size: int) -> DynamicData:
    """Load and validate the data and everything that depends on it, before any rank trains."""
    # a cut stream: the kind the strategy trains on, as the run's task reads it
    data = for_task(load_data(checked.run.dataset), checked.strategy.data_kind, checked.run)
    check_data(checked, data, world_size)
    return data


def under_torchrun() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def run(run_config: RunConfig, overrides: Sequence[str] | None = None) -> dict[str, Any]:
    """Train one run; ``overrides`` (the command line's) let a launcher start ranks with the same settings."""
    checked = check_run(run_config)
    configure_logging(checked.run.progress)
    launcher = checked.launcher
    env = launcher.worker_env() or (DistEnv.from_environ() if under_torchrun() else None)
    if env is not None:
        return run_rank(checked, env)

    launcher.check_here()
    check_device_here(checked.run.device)
    world_size = check_ranks(checked)
    claimed = claim_run(checked, world_size)
    run_config, folder, data = claimed.run, claimed.folder, claimed.data
    resumed = f", resuming after epoch {claimed.resumed['epoch'] + 1}" if claimed.resumed is not None else ""
    log.info(
        "dygsched run %s: %s on %s (%s), sched=%s, %d ranks, launcher=%s%s",
        folder.run_id,
        run_config.model.name,
        run_config.dataset.name,
        describe_data(data),
        run_config.sched.name,
        world_size,
        launcher.name,
        resumed,
    )
    log.info("%s", describe_objective(checked, data))
    identity = run_config.identity(folder.run_id, world_size)
    try:  # the launcher stops its workers, then records the run
        previous = signal.signal(signal.SIGTERM, _terminated)
    except ValueError:  # not the main thread (an embedding application): its own handler stays
        previous = None
    try:
        launcher.launch(run_config, data, folder, world_size, overrides)
    except LaunchFailed as exc:
        try:
            mark_failed(folder, identity, exc.reason)
        except OSError as write:  # the folder itself is what failed (read-only, full): say so, in the same line
            raise RunFailed(
                f"run {folder.run_id} failed: {exc.reason}; it could not be marked failed either ({write.strerror})"
            ) from None
        raise RunFailed(f"run {folder.run_id} failed: {exc.reason} (details in {folder.path})") from None
    except Terminated as exc:
        mark_failed(folder, identity, str(exc))
        exc.args = (f"run {folder.run_id} {exc}: {how_to_continue(folder)}",)
        raise
    except KeyboardInterrupt:
        if folder.path.is_dir():
            mark_failed(folder, identity, "interrupted")
            raise KeyboardInterrupt(f"run {folder.run_id}: {how_to_continue(folder)}") from None
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if not (folder.path / "summary.json").exists():
        return {}  # rank 0 ran on another machine: its summary is there
    return {**folder.read_summary(), "run_dir": str(folder.path)}


def how_to_continue(folder: RunFolder) -> str:
    """What a stopped run's last line says: where its completed epochs are and the command, ready
    to paste, that continues it (its folder holds its settings)."""
    if not checkpoint_path(folder.path).is_file():
        return f"it completed no epoch with a checkpoint (in {folder.path}), so there is nothing to resume"
    command = shlex.join(["dygsched", "run", quote_override("resume", str(folder.path))])
    return f"its completed epochs are in {folder.path}; `{command}` continues it"


@dataclass(frozen=True)
class ClaimedRun:
    """What the process that starts the ranks hands them: the run's settings with its folder
    resolved (``run``, ``folder``), its data loaded and checked, its world size, and the checkpoint
    it continues (``resumed``, else ``None``)."""

    run: RunConfig
    folder: RunFolder
    data: DynamicData
    world_size: int
    resumed: dict[str, Any] | None


def claim_run(checked: CheckedRun, world_size: int) -> ClaimedRun:
    """What the process that starts the ranks does once the launcher accepted ``world_size``: the
    results folder, the data and stage 4's checks of it, the runs table, then the run's own folder
    (``claim_run_folder``). ``run`` does it before its launcher starts the ranks; the GPU check
    before it hands the run to ranks it keeps."""
    check_results_dir(Path(checked.run.results_dir))
    data = prepare(checked, world_size)  # the ranks, other processes, each build their own
    asked = Path(checked.run.results_dir)
    check_runs_table(asked)  # a table the run could not append to: refused before it trains
    start = claim_run_folder(checked.run.replace(world_size=world_size), world_size)
    if Path(start.folder.results_dir) != asked:  # resume= named a run in another results folder
        check_runs_table(start.folder.results_dir)
    return ClaimedRun(start.run, start.folder, data, world_size, start.resumed)


def claim_run_folder(run: RunConfig, world_size: int) -> RunStart:
    """The run's folder, resolved by ``start_run`` (the one it resumes, or its id), for the ranks to
    write into; a new run's id may not name an earlier run unless ``overwrite=true`` moves that aside."""
    start = start_run(run, world_size)
    if start.resumed is not None:
        return start
    if run.resume == NEW_IF_NONE:
        log.info("dygsched: resume=auto: nothing to resume for these settings; starting a new run")
    run_id = str(start.run.run_id)
    check_plain_name(run_id, "run_id (made of the dataset, model and sched names)")
    existing = Path(start.run.results_dir) / run_id
    if existing.exists():
        if not run.overwrite:
            raise ConfigError(
                f"run_id={run_id} already names a run in {existing}: resume={existing} continues it, "
                "overwrite=true moves it aside and starts anew"
            )
        aside = existing.with_name(f"{existing.name}.replaced-{time.strftime('%Y%m%d-%H%M%S')}")
        existing.rename(aside)
        log.info("dygsched: moved the earlier run %s aside to %s", existing, aside)
    return start


def run_rank(checked: CheckedRun, env: DistEnv) -> dict[str, Any]:
    """This process is one rank of a job started by torchrun or SLURM: check the data, then train."""
    run_config = checked.run.replace(world_size=env.world_size)
    data = prepare(checked, env.world_size)
    # SIGTERM reaches every rank: from torchrun (sent on, or stopping the others when one rank
    # fails) and from SLURM (preemption, scancel, the time limit). Each rank stops where it is;
    # rank 0 records the run as failed with its completed epochs (or with the failed rank's
    # reason when one failed first), and resume= continues it.
    try:
        signal.signal(signal.SIGTERM, _terminated)
    except ValueError:  # not the main thread
        pass
    try:
        return train_rank(run_config, env, data, mark_failure=True, strategy=checked.strategy) or {}
    except DygschedError:
        raise
    except SystemExit as exc:  # submitit's preemption handler on rank 0, after it requeued the job
        raise RunFailed(
            f"rank {env.rank}: stopped by the cluster (exit {exc.code}); "
            "a job submitted with resume=auto continues it when requeued"
        ) from None
    except BaseException as exc:
        raise RunFailed(f"rank {env.rank}: {failure_text(exc).splitlines()[0]}") from None


def _terminated(signum: int, frame: Any) -> None:
    signal.signal(signum, signal.SIG_IGN)  # once: stopping the workers and recording the run must not be cut short
    raise Terminated(signum)
