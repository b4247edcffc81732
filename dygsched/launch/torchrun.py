"""``launcher=torchrun``: the ranks run under ``torchrun``, on this machine or on many.

``dygsched run launcher=torchrun ...`` checks everything here, prints the ``torchrun`` command
and runs it for this machine; with ``launcher.nnodes=N`` the same command (printed) is started on
each of the other machines, which meet at ``launcher.rdzv_endpoint`` (c10d rendezvous, the
default) or at a fixed master address with a node rank each (``rdzv_backend=static``). Every rank
is ``python -m dygsched run <the same overrides> run_id=<id>`` reading ``RANK``, ``WORLD_SIZE``
and the rest from torchrun, so ``torchrun --nnodes=N --nproc-per-node=G -m dygsched run ...``
typed by hand is the same run.

torchrun's own log goes to ``torchrun.log`` in the run folder; when a rank fails, torchrun stops
the others on its machine, ranks elsewhere fail at their next collective (at once when the
peer's connection closes, after ``dist_timeout_s`` when it hangs), and the run is marked failed.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence

from dygsched.data.kinds import DynamicData
from dygsched.engine.run_config import RunConfig
from dygsched.errors import ConfigError
from dygsched.launch.base import Launcher, LaunchFailed, cores_here, threads_per_rank
from dygsched.metrics.run_folder import RunFolder, killed_by

RDZV_BACKENDS = ("c10d", "static")
LOG_FILE = "torchrun.log"
SUPERVISED_ENV = "DYGSCHED_SUPERVISED"  # set for ranks whose launcher reports the run itself
TORCHRUN_STOP_S = 30.0  # torchrun's own wait for its ranks after it sends them SIGTERM
# Overrides the launcher sets itself for the ranks it starts.
_OWN_KEYS = ("run_id", "resume", "results_dir")


def quote_override(key: str, value: str) -> str:
    """``key=value`` in Hydra's override grammar, quoted when the value holds characters it would parse."""
    value = str(value)
    if re.fullmatch(r"[\w./-]+", value):
        return f"{key}={value}"
    escaped = value.replace("\\", "\\\\").replace("'", "\\'")
    return f"{key}='{escaped}'"


def worker_overrides(overrides: Sequence[str], folder: RunFolder, resume: str | None) -> list[str]:
    """The run's overrides for its ranks: the same settings, this run's folder, id and checkpoint."""
    kept = [o for o in overrides if o.lstrip("+~").split("=", 1)[0] not in _OWN_KEYS]
    own = [quote_override("results_dir", str(folder.results_dir)), quote_override("run_id", folder.run_id)]
    if resume:
        own.append(quote_override("resume", resume))
    return [*kept, *own]


def root_cause(log_text: str, folder: RunFolder | None = None) -> str | None:
    """The first failed rank and how it ended, from torchrun's error report (with the phase it was
    in, from ``folder``, when a signal ended it)."""
    _, found, tail = log_text.partition("Root Cause (first observed failure):")
    match = re.search(r"rank\s*:\s*(\d+).*?exitcode\s*:\s*(-?\d+)", tail, re.DOTALL) if found else None
    if match is None:
        return None
    rank, code = int(match.group(1)), int(match.group(2))
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return folder.killed_by(rank, name) if folder is not None else killed_by(rank, name, None)
    return f"rank {rank} exited with code {code}"


class TorchrunLauncher(Launcher):
    name = "torchrun"

    def __init__(
        self,
        nnodes: int = 1,
        nproc_per_node: int | None = None,
        node_rank: int = 0,
        rdzv_backend: str = "c10d",
        rdzv_endpoint: str | None = None,
        rdzv_id: str | None = None,
        join_timeout_s: float = 600.0,
        max_restarts: int = 0,
        extra_args: Sequence[str] = (),
        grace_period_s: float = 2.0,
    ) -> None:
        self.nnodes = int(nnodes)
        self.nproc_per_node = None if nproc_per_node is None else int(nproc_per_node)
        self.node_rank = int(node_rank)
        self.rdzv_backend = str(rdzv_backend)
        self.rdzv_endpoint = rdzv_endpoint
        self.rdzv_id = rdzv_id
        self.join_timeout_s = float(join_timeout_s)
        self.max_restarts = int(max_restarts)
        self.extra_args = [str(a) for a in extra_args]
        self.grace_period_s = float(grace_period_s)

    def check(self, world_size: int) -> None:
        if self.nnodes < 1:
            raise ConfigError(f"launcher.nnodes must be at least 1, got {self.nnodes}")
        if self.rdzv_backend not in RDZV_BACKENDS:
            raise ConfigError(f"unknown launcher.rdzv_backend '{self.rdzv_backend}' (choose from {', '.join(RDZV_BACKENDS)})")
        if world_size % self.nnodes:
            raise ConfigError(f"world_size={world_size} does not split evenly over launcher.nnodes={self.nnodes} machines")
        if self.nproc_per_node is not None and self.nproc_per_node * self.nnodes != world_size:
            raise ConfigError(
                f"launcher.nproc_per_node={self.nproc_per_node} on {self.nnodes} machine(s) makes "
                f"{self.nproc_per_node * self.nnodes} ranks, world_size is {world_size}"
            )
        if self.nnodes > 1 and not self.rdzv_endpoint:
            raise ConfigError(
                "launcher.rdzv_endpoint=HOST:PORT is needed with launcher.nnodes > 1: a machine every node can reach"
            )
        if self.rdzv_endpoint and not re.fullmatch(r"[^\s:]+:\d+", str(self.rdzv_endpoint)):
            raise ConfigError(f"launcher.rdzv_endpoint must be HOST:PORT, got '{self.rdzv_endpoint}'")
        if not 0 <= self.node_rank < self.nnodes:
            raise ConfigError(f"launcher.node_rank must be in [0, {self.nnodes}), got {self.node_rank}")
        if self.join_timeout_s <= 0 or self.max_restarts < 0:
            raise ConfigError("launcher.join_timeout_s must be positive and launcher.max_restarts non-negative")

    def auto_world_size(self, gpus_here: int) -> int:
        """``world_size=auto``: ranks per machine (``nproc_per_node``, else one per GPU of this
        machine, else 2 CPU processes) times ``nnodes`` machines."""
        return (self.nproc_per_node or gpus_here or 2) * self.nnodes

    def rank_env(self, world_size: int, environ: Mapping[str, str]) -> dict[str, str]:
        """The environment torchrun starts the ranks with: ``OMP_NUM_THREADS`` set to this machine's
        cores over its ranks (torchrun would otherwise set 1 for several ranks), unless set already."""
        env = {**environ, SUPERVISED_ENV: "1"}
        env.setdefault("OMP_NUM_THREADS", str(threads_per_rank(cores_here(), world_size // self.nnodes)))
        return env

    def command(self, world_size: int, run_id: str, rank_args: Sequence[str], endpoint: str) -> list[str]:
        """The torchrun command line every machine runs (static rendezvous: with its own node rank)."""
        host, port = endpoint.rsplit(":", 1)
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            f"--nnodes={self.nnodes}",
            f"--nproc-per-node={world_size // self.nnodes}",
            f"--max-restarts={self.max_restarts}",
        ]
        if self.rdzv_backend == "static":
            cmd += [f"--node-rank={self.node_rank}", f"--master-addr={host}", f"--master-port={port}"]
        else:
            cmd += [
                "--rdzv-backend=c10d",
                f"--rdzv-endpoint={endpoint}",
                f"--rdzv-id={self.rdzv_id or run_id}",
                f"--rdzv-conf=join_timeout={self.join_timeout_s:g}",
            ]
        return [*cmd, *self.extra_args, "-m", "dygsched", "run", *rank_args]

    def launch(
        self, config: RunConfig, data: DynamicData, folder: RunFolder, world_size: int, overrides: Sequence[str] | None
    ) -> None:
        if overrides is None:
            raise ConfigError("launcher=torchrun passes the command line's overrides to its ranks: start it with `dygsched run`")
        from dygsched.launch.local import die_with_parent, free_port

        endpoint = self.rdzv_endpoint or f"127.0.0.1:{free_port()}"
        cmd = self.command(
            world_size,
            folder.run_id,
            worker_overrides(overrides, folder, config.resume if isinstance(config.resume, str) else None),
            endpoint,
        )
        print(f"torchrun: {shlex.join(cmd)}", flush=True)
        if self.nnodes > 1:
            where = "with --node-rank=1, 2, ... on" if self.rdzv_backend == "static" else "on"
            print(f"torchrun: start the same command {where} each of the other {self.nnodes - 1} machine(s)", flush=True)
        folder.path.mkdir(parents=True, exist_ok=True)
        log_path = folder.path / LOG_FILE
        with open(log_path, "w") as log:
            # torchrun stops its ranks on SIGTERM, which it gets if this process dies first
            torchrun = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stderr=log,
                env=self.rank_env(world_size, os.environ),
                preexec_fn=lambda: die_with_parent(signal.SIGTERM),
            )
            try:
                returncode = torchrun.wait()
            except BaseException:  # SIGTERM or Ctrl-C to this process: torchrun stops its ranks, then we record the run
                stop_torchrun(torchrun, self.grace_period_s)
                raise
        if returncode != 0:
            raise LaunchFailed(failure_reason(folder, log_path.read_text(errors="replace"), returncode))


def stop_torchrun(torchrun: subprocess.Popen[bytes], grace_period_s: float) -> None:
    """SIGTERM to torchrun (it sends SIGTERM on to its ranks and waits for them), SIGKILL if it
    is not done within ``grace_period_s`` plus its own wait for the ranks."""
    if torchrun.poll() is not None:
        return
    torchrun.send_signal(signal.SIGTERM)
    try:
        torchrun.wait(timeout=grace_period_s + TORCHRUN_STOP_S)
    except subprocess.TimeoutExpired:
        torchrun.kill()
        torchrun.wait()


def failure_reason(folder: RunFolder, log_text: str, returncode: int) -> str:
    """The first cause: the first failed rank's own reason, else how it ended, else the earliest reason any rank gave."""
    notes = dict(folder.failures())
    cause = root_cause(log_text, folder)
    if cause is not None:
        rank = int(cause.split()[1])
        return f"rank {rank}: {notes[rank]}" if rank in notes else cause
    if notes:
        rank, reason = next(iter(notes.items()))
        return f"rank {rank}: {reason}"
    return f"torchrun exited with code {returncode} (see {folder.path / LOG_FILE})"
