"""The check's ranks: groups of spawned processes that join one process group once and train run
after run in it.

A run of ``dygsched run`` spawns its ranks, which import torch, PyTorch Geometric and Hydra and
initialise CUDA before they train: 13 to 27 s on an H200 against epochs of a tenth of a second, so
the check's runs were mostly starts. Here each ``GroupKey`` (world size, device, backend, collective
timeout) has one group of ranks, spawned when a run first needs it: each rank joins the process
group as a run's rank does (``init_process_group``: the same backend choice), says so
(``Joined``), then trains every run it is handed through the worker's own path
(``train_in_joined_group``, as the strategy contract battery's ranks do on CPU) and answers each
(``Trained``). The parent prepares a run as ``dygsched run`` does before its launcher starts the
ranks (checks, data, run folder: ``launch.app.claim_run``) and leaves the data in the run folder as
the local launcher does (``.data.pt``, which the ranks memory-map).

A run that fails on any rank, dies (a signal: NCCL's abort, a crash) or outlasts its deadline ends
its group: the ranks are stopped (SIGTERM, then SIGKILL) and the next run that needs the key starts
a fresh group, so one failure is one row. Every rank is spawned (a fresh interpreter): CUDA is
initialised in ranks only, never in a process that starts others. The ranks of a CPU group see no
GPU at all; each rank dies with the check (Linux's parent-death signal) and writes its output to a
log file of its own.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from dygsched.commands.gpu_check.table import one_line

if TYPE_CHECKING:
    from dygsched.engine.run_config import RunConfig

STOP_GRACE_S = 2.0  # between SIGTERM and SIGKILL for ranks being stopped
LEAVE_S = 10.0  # how long ranks told to leave may take to leave their process group together


@dataclass(frozen=True)
class GroupKey:
    """What ranks must share to train a run together: its world size, device, backend setting and
    collective timeout (the process group's, fixed when it is joined)."""

    world_size: int
    device: str
    dist_backend: str = "auto"
    dist_timeout_s: float = 30.0

    def label(self) -> str:
        return f"{self.world_size} rank{'s' if self.world_size > 1 else ''} on {self.device}"


@dataclass(frozen=True)
class Joined:
    """A rank's first word: it joined the process group (its backend, its device and GPU), or why not."""

    rank: int
    ok: bool
    reason: str = ""
    backend: str = ""
    device: str = ""
    gpu: str = ""
    gpu_memory_gib: float | None = None


@dataclass(frozen=True)
class Job:
    """A run for the ranks: its checked settings (folder resolved) and the folder holding its data."""

    run: RunConfig
    run_dir: str


@dataclass(frozen=True)
class Trained:
    """A rank's answer to one run: it trained it, or the first line of why not."""

    rank: int
    ok: bool
    reason: str = ""


@dataclass(frozen=True)
class GroupEnd:
    """How a run handed to a group ended (``ok``, ``failed``, ``timeout``), why, and the seconds its
    group took to start (0 where the run found its ranks ready)."""

    status: str
    reason: str = ""
    start_s: float = 0.0


Problem = tuple[str, str, int]
"""What went wrong while waiting for the ranks: status (failed, timeout), reason, and the rank it concerns."""


class GroupFailed(Exception):
    """A group's ranks did not all join (``status``: failed or timeout; the message says why)."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def serve_runs(rank: int, key: GroupKey, port: int, log: str, channel: Connection) -> None:
    """One rank of a group (a spawned process): join, then train each run handed over ``channel``
    until told to leave (``None``) or the channel closes. A failure is answered, then the process
    exits without the process group's collective teardown (its peers may be stuck or gone)."""
    from dygsched.launch.fork_server import die_with_parent

    die_with_parent()  # the check: whatever ends it ends its ranks
    _write_output_to(log)
    os.environ.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(key.world_size),
        LOCAL_WORLD_SIZE=str(key.world_size),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")  # as train_rank: NCCL aborts a failed collective
    device = None
    try:
        import torch

        from dygsched.engine.distributed import (
            DistEnv,
            abandon_process_group,
            close_process_group,
            init_process_group,
            pick_device,
        )
        from dygsched.engine.worker import failure_text, train_in_joined_group
        from dygsched.launch.local import DATA_FILE

        env = DistEnv.from_environ()
        device = pick_device(key.device, env.local_rank)
        backend = init_process_group(env, device, key.dist_timeout_s, key.dist_backend)
        gpu = torch.cuda.get_device_properties(device) if device.type == "cuda" else None
        joined = Joined(rank, True, backend=backend, device=str(device))
        if gpu is not None:
            joined = Joined(rank, True, "", backend, str(device), gpu.name, round(gpu.total_memory / 2**30, 1))
    except BaseException as exc:
        channel.send(Joined(rank, False, _first_line(exc)))
        _leave(1)
    channel.send(joined)
    while True:
        try:
            job = channel.recv()
        except (EOFError, OSError):  # the check is gone
            _leave(1)
        if job is None:
            break
        try:
            data = torch.load(Path(job.run_dir) / DATA_FILE, mmap=True, weights_only=False)
            train_in_joined_group(job.run, env, device, data)
        except BaseException as exc:
            channel.send(Trained(rank, False, one_line(failure_text(exc))))
            abandon_process_group(device)
            _leave(1)
        channel.send(Trained(rank, True))
    close_process_group()
    _leave(0)


def _first_line(exc: BaseException) -> str:
    try:
        from dygsched.engine.worker import failure_text

        return one_line(failure_text(exc))
    except BaseException:  # the worker itself cannot be imported
        return one_line(f"{type(exc).__name__}: {exc}")


def _write_output_to(log: str) -> None:
    """This process's standard output and error into ``log`` (a file: a chatty rank cannot block on it)."""
    handle = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(handle, 1)
    os.dup2(handle, 2)
    os.close(handle)


def _leave(code: int) -> NoReturn:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


@contextmanager
def _visible_gpus(device: str) -> Iterator[None]:
    """While ranks start: a CPU group's see no GPU (nothing they import or call can touch one)."""
    if device == "cuda":
        yield
        return
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    try:
        yield
    finally:
        if visible is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = visible


class RankGroup:
    """``key.world_size`` spawned ranks in one process group, trained run after run (see the module)."""

    def __init__(self, key: GroupKey, logs: Path, number: int) -> None:
        self.key = key
        self.logs = [logs / f"ranks-ws{key.world_size}-{key.device}-{number}-rank{r}.log" for r in range(key.world_size)]
        self.processes: list[Any] = []
        self.channels: list[Connection] = []
        self.joined: list[Joined] = []

    @property
    def alive(self) -> bool:
        return bool(self.processes) and all(p.is_alive() for p in self.processes)

    def start(self, timeout_s: float) -> list[Joined]:
        """Spawn the ranks and wait until every one joined; ``GroupFailed`` (the ranks stopped) when not."""
        from dygsched.launch.local import free_port

        context = multiprocessing.get_context("spawn")
        port = free_port()
        self.logs[0].parent.mkdir(parents=True, exist_ok=True)
        try:
            with _visible_gpus(self.key.device):
                for rank in range(self.key.world_size):
                    mine, theirs = context.Pipe()
                    # daemonic: ranks left at the check's exit are ended, not waited for (they start no processes)
                    process = context.Process(
                        target=serve_runs,
                        args=(rank, self.key, port, str(self.logs[rank]), theirs),
                        name=f"check-rank{rank}",
                        daemon=True,
                    )
                    process.start()
                    theirs.close()
                    self.processes.append(process)
                    self.channels.append(mine)
            answers, problem = self._answers(timeout_s, "not joined")
        except BaseException:  # the check stopped (SIGTERM, Ctrl-C) while they started
            self.stop()
            raise
        refused = [a for a in answers.values() if isinstance(a, Joined) and not a.ok]
        if problem is not None or refused or len(answers) < self.key.world_size:
            self.stop()
            if refused:
                first = min(refused, key=lambda a: a.rank)
                raise GroupFailed("failed", f"rank {first.rank}: {first.reason}")
            status, reason, rank = problem or ("failed", "a rank said nothing", 0)
            raise GroupFailed(status, reason if status != "timeout" else f"{reason} (rank {rank} had not joined)")
        self.joined = [answers[r] for r in range(self.key.world_size)]  # type: ignore[misc]
        return self.joined

    def train(self, job: Job, timeout_s: float) -> GroupEnd:
        """Hand ``job`` to every rank and wait for their answers until ``timeout_s``; a run that did not
        end ok on every rank stops the group (its reason: the run folder's first cause where a rank
        left one)."""
        from dygsched.metrics.run_folder import RunFolder

        try:
            for channel in self.channels:
                channel.send(job)
        except OSError:  # a rank is gone: its death is read below
            pass
        answers, problem = self._answers(timeout_s, "not finished")
        failed = sorted((a for a in answers.values() if isinstance(a, Trained) and not a.ok), key=lambda a: a.rank)
        if problem is None and not failed and len(answers) == self.key.world_size:
            return GroupEnd("ok")
        self.stop()
        folder = RunFolder(Path(job.run.results_dir), str(job.run.run_id))
        if problem is not None and problem[0] == "timeout":
            status, reason, rank = problem
            phase = folder.phase(rank)
            return GroupEnd("timeout", f"{reason} (rank {rank} {'in ' + phase if phase else 'had not answered'})")
        cause = folder.first_cause()
        if cause is None and failed:
            cause = f"rank {failed[0].rank}: {failed[0].reason}"
        return GroupEnd("failed", cause or (problem[1] if problem is not None else "a rank said nothing"))

    def _answers(self, timeout_s: float, late: str) -> tuple[dict[int, Joined | Trained], Problem | None]:
        """One message from each rank within ``timeout_s``; stops early at the first failure a rank
        reports or at a rank's death. The messages, and what went wrong if anything did (``late``
        words a timeout)."""
        until = time.monotonic() + timeout_s
        answers: dict[int, Joined | Trained] = {}
        sentinels = {process.sentinel: rank for rank, process in enumerate(self.processes)}
        while len(answers) < len(self.processes):
            left = until - time.monotonic()
            waiting = [r for r in range(len(self.processes)) if r not in answers]
            if left <= 0:
                return answers, ("timeout", f"{late} after {timeout_s:.0f} s", waiting[0])
            ready = wait([*(self.channels[r] for r in waiting), *sentinels], timeout=left)
            for item in ready:  # messages first: a rank that answered and then exited is no death
                if isinstance(item, Connection):
                    try:
                        answers[self.channels.index(item)] = item.recv()
                    except (EOFError, OSError):
                        continue  # it died: its sentinel says how
            if any(not answer.ok for answer in answers.values()):
                return answers, None
            dead = sorted(sentinels[item] for item in ready if not isinstance(item, Connection))
            for rank in dead:
                if rank not in answers:
                    self.processes[rank].join(1.0)
                    return answers, ("failed", self._death(rank), rank)
                sentinels = {item: r for item, r in sentinels.items() if r != rank}  # answered, then gone: seen later
        return answers, None

    def _death(self, rank: int) -> str:
        code = self.processes[rank].exitcode
        if code is not None and code < 0:
            try:
                how = signal.Signals(-code).name
            except ValueError:
                how = f"signal {-code}"
            tail = self._last_line(rank)
            return f"rank {rank} died of {how}" + (f": {tail}" if tail else "")
        tail = self._last_line(rank)
        return f"rank {rank} exited with code {code}" + (f": {tail}" if tail else "")

    def _last_line(self, rank: int) -> str:
        try:
            lines = [line for line in self.logs[rank].read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            return ""
        return one_line(lines[-1]) if lines else ""

    def leave(self) -> None:
        """Tell the ranks to leave their process group together and exit; stop those that do not."""
        for channel in self.channels:
            try:
                channel.send(None)
            except OSError:
                pass
        until = time.monotonic() + LEAVE_S
        for process in self.processes:
            process.join(max(0.0, until - time.monotonic()))
        self.stop()

    def stop(self) -> None:
        """End the ranks now: SIGTERM, then SIGKILL after ``STOP_GRACE_S``."""
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        until = time.monotonic() + STOP_GRACE_S
        for process in self.processes:
            process.join(max(0.0, until - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join(1.0)
        for channel in self.channels:
            channel.close()
        self.processes, self.channels = [], []


class RankGroups:
    """The check's groups, one per ``GroupKey``, each started when a run first needs it and started
    anew after a run that ended it. ``say``: progress lines; ``joined``: told each group's ``Joined``."""

    def __init__(
        self,
        logs: Path,
        start_timeout_s: float,
        say: Callable[[str], None] = print,
        joined: Callable[[list[Joined]], None] | None = None,
        make: Callable[[GroupKey, Path, int], RankGroup] = RankGroup,
    ) -> None:
        self.logs, self.start_timeout_s, self.say, self.on_joined, self.make = logs, start_timeout_s, say, joined, make
        self.groups: dict[GroupKey, RankGroup] = {}
        self.started = 0  # groups started so far (a failed start counts)

    def train(self, key: GroupKey, job: Job, timeout_s: float) -> GroupEnd:
        """``job`` on the group of ``key`` (started first where there is none), with ``timeout_s``."""
        group, start_s = self.groups.get(key), 0.0
        if group is None or not group.alive:
            self.started += 1
            group = self.make(key, self.logs, self.started)
            begun = time.monotonic()
            try:
                joined = group.start(self.start_timeout_s)
            except GroupFailed as exc:
                self.say(f"{key.label()}: the ranks did not start ({exc.reason})")
                return GroupEnd(exc.status, f"its ranks did not start: {exc.reason}", time.monotonic() - begun)
            start_s = time.monotonic() - begun
            backend = joined[0].backend if joined else ""
            self.say(f"{key.label()}: {key.world_size} rank(s) started and joined ({backend}) in {start_s:.1f} s")
            if self.on_joined is not None:
                self.on_joined(joined)
            self.groups[key] = group
        end = group.train(job, timeout_s)
        if end.status != "ok":
            self.groups.pop(key, None)  # stopped: the next run of this key starts a fresh group
        return GroupEnd(end.status, end.reason, start_s)

    def close(self) -> None:
        """Every group leaves (the check is done)."""
        for group in self.groups.values():
            group.leave()
        self.groups.clear()

    def stop(self) -> None:
        """Every group's ranks end now (the check is stopped)."""
        for group in self.groups.values():
            group.stop()
        self.groups.clear()
