"""Start ``world_size`` worker processes on this machine, as torchrun would, and wait for them.

The parent loads the data once (so bad input fails before any worker starts) and saves it into
the run folder; workers memory-map it, so one copy serves every rank. Each worker gets the
standard ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``/``MASTER_ADDR``/``MASTER_PORT`` variables.

When a worker dies (an exception, a signal, the out-of-memory killer) the parent notices at once,
terminates the other ranks and reports the first cause: the dead rank's failure file, or the
signal that killed it.

A launcher killed outright (``kill -9``, the out-of-memory killer) takes every process of its run
with it within a second or so, whenever it dies: the fork server dies with it (Linux's parent-death
signal, set in the fork server itself), each rank watches the launcher's pid (a pidfd) and dies
with the fork server too, and multiprocessing's resource tracker exits once they are gone (see
``fork_server``). A rank killed mid-checkpoint leaves the last complete ``checkpoint.pt``: it is
written to a temporary name and renamed.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

import torch
import torch.multiprocessing as mp
from torch.multiprocessing.spawn import ProcessExitedException, ProcessRaisedException

from dygsched.data.kinds import DynamicData
from dygsched.engine.distributed import DistEnv
from dygsched.engine.run_config import RunConfig
from dygsched.engine.worker import failure_text, train_rank
from dygsched.launch.base import Launcher, LaunchFailed
from dygsched.launch.fork_server import die_with_parent, end_with, release_fork_server, serves, start_fork_server
from dygsched.metrics.atomic import write_with
from dygsched.metrics.run_folder import RunFolder

DATA_FILE = ".data.pt"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _worker(local_rank: int, run: RunConfig, world_size: int, port: int, run_dir: str, launcher: int) -> None:
    die_with_parent()  # the fork server (or, spawned, the launcher), which ends when the launcher does
    end_with(launcher)  # and the launcher itself, which is not our parent under the fork server
    release_fork_server()  # our copy of its keep-alive pipe would keep the fork server running
    os.environ.update(
        RANK=str(local_rank),
        LOCAL_RANK=str(local_rank),
        WORLD_SIZE=str(world_size),
        LOCAL_WORLD_SIZE=str(world_size),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    folder = RunFolder(Path(run_dir).parent, Path(run_dir).name)
    try:
        data = torch.load(Path(run_dir) / DATA_FILE, mmap=True, weights_only=False)
    except BaseException as exc:
        folder.write_failure(local_rank, failure_text(exc))
        os._exit(1)
    try:
        train_rank(run, DistEnv.from_environ(), data)  # writes its failure file itself
    except BaseException:
        # Exit now: a normal interpreter exit would tear the process group down collectively
        # and could wait on peers that are gone.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


def death_reason(folder: RunFolder, rank: int, exit_code: int | None, signal_name: str | None) -> str:
    """Why ``rank`` (the first to die) died: its own failure file, else how it ended."""
    notes = dict(folder.failures())
    if rank in notes:
        return f"rank {rank}: {notes[rank]}"
    if signal_name:  # the phase it was in, from its phase file (a killed process runs no Python)
        return folder.killed_by(rank, signal_name)
    if notes:  # another rank said why first
        first, reason = next(iter(notes.items()))
        return f"rank {first}: {reason}"
    return f"rank {rank} exited with code {exit_code} without a reason"


class LocalLauncher(Launcher):
    """``world_size`` processes on this machine (gloo on CPU, NCCL with one GPU per rank)."""

    name = "local"

    def __init__(self, grace_period_s: float = 2.0) -> None:
        self.grace_period_s = float(grace_period_s)

    def launch(
        self, config: RunConfig, data: DynamicData, folder: RunFolder, world_size: int, overrides: Sequence[str] | None
    ) -> None:
        run_dir = folder.path
        run_dir.mkdir(parents=True, exist_ok=True)
        data_path = run_dir / DATA_FILE
        write_with(data_path, lambda tmp: torch.save(data, tmp))
        # torch logs a warning for every sibling it terminates after a failure; the failure itself is reported once, by us.
        logging.getLogger("torch.multiprocessing.spawn").setLevel(logging.ERROR)
        try:
            context = mp.start_processes(
                _worker,
                args=(config, world_size, free_port(), str(run_dir), os.getpid()),
                nprocs=world_size,
                join=False,
                start_method=start_fork_server() if serves(config.device) else "spawn",
            )
            try:
                while not context.join(grace_period=self.grace_period_s):
                    pass
            except (ProcessExitedException, ProcessRaisedException):
                raise
            except BaseException:  # SIGTERM or Ctrl-C to this process alone: its workers stop with it
                stop_workers(context.processes, self.grace_period_s)
                raise
        except ProcessExitedException as exc:
            raise LaunchFailed(death_reason(folder, exc.error_index, exc.exit_code, exc.signal_name)) from None
        except ProcessRaisedException as exc:
            raise LaunchFailed(death_reason(folder, exc.error_index, None, None)) from None
        finally:
            with suppress(OSError):  # a folder gone read-only keeps it; the failure already says why
                data_path.unlink(missing_ok=True)


def stop_workers(processes: Sequence[Any], grace_s: float) -> None:
    """SIGTERM every live worker, then SIGKILL what is left after ``grace_s`` seconds."""
    import time

    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + grace_s
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join(1.0)
