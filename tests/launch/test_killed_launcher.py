"""A launcher killed outright (``kill -9``: what the out-of-memory killer and a scheduler's hard kill
do) takes every process of its run with it, whatever it was doing: loading the data, with its fork
server still importing, mid-epoch, while rank 0 evaluates, while rank 0 writes a checkpoint, and
with ranks started by spawn (CUDA runs) instead of the fork server. The checkpoint on disk is then
a complete one.

Each case starts a real ``dygsched run`` in a session of its own (so the run's processes are the
processes of one process group), waits for the moment (a file the run writes, or one that
``tests.launch.pausing`` writes when it pauses there), sends SIGKILL to the launcher alone, and
looks in /proc for what is left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import NamedTuple

import pytest

from dygsched.engine.checkpoint import checkpoint_path, load_checkpoint
from tests.conftest import ROOT, TINY_SYNTHETIC

GONE_WITHIN_S = 5.0  # "within a few seconds" of the launcher's death, on a busy 2-core machine
START_TIMEOUT_S = 240.0
RUN = [*TINY_SYNTHETIC, "world_size=2", "epochs=100000", "run_id=victim", "results_dir=results"]
FORK_SERVER = "multiprocessing.forkserver"


class Process(NamedTuple):
    pid: int
    parent: int
    command: str


def process_group(group: int) -> list[Process]:
    """The live (not zombie) processes of process group ``group``, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # ended while we looked
            continue
        state, parent, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == group and state != "Z":
            found.append(Process(int(entry), int(parent), command.strip()))
    return found


class Killed(NamedTuple):
    launcher: int
    at_kill: list[Process]  # the run's processes when the launcher was killed
    left: list[Process]  # those still alive GONE_WITHIN_S seconds later
    gone_s: float  # how long they took to go (GONE_WITHIN_S where some did not)
    folder: Path

    def ranks_at_kill(self) -> list[Process]:
        """The ranks: the processes the fork server (which the launcher started) forked."""
        servers = {p.pid for p in self.at_kill if FORK_SERVER in p.command and p.parent == self.launcher}
        return [p for p in self.at_kill if p.parent in servers]

    def fork_servers_at_kill(self) -> list[Process]:
        return [p for p in self.at_kill if FORK_SERVER in p.command and p.parent == self.launcher]


def kill_the_launcher_when(
    tmp_path: Path,
    overrides: list[str],
    ready: Callable[[Path, list[Process]], bool],
    dygsched: tuple[str, ...] = ("-m", "dygsched"),
) -> Killed:
    """Start ``dygsched run`` with ``overrides``; once ``ready(run folder, its processes)``, SIGKILL
    the launcher and wait up to GONE_WITHIN_S seconds for the rest of its process group to end."""
    folder = tmp_path / "results" / "victim"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(tmp_path / "stdout.txt", "w") as out, open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen(
            [sys.executable, *dygsched, "run", *RUN, *overrides],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
    group = proc.pid  # a new session: its id, and its process group's, is the launcher's pid
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready(folder, processes := process_group(group)):
            assert proc.poll() is None, (
                f"the run ended first ({proc.returncode}): {(tmp_path / 'stderr.txt').read_text()[-3000:]}"
            )
            assert time.monotonic() < deadline, "the run never got there"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        proc.wait()
        left = process_group(group)
        while left and time.monotonic() - killed_at < GONE_WITHIN_S:
            time.sleep(0.05)
            left = process_group(group)
        return Killed(proc.pid, processes, left, time.monotonic() - killed_at, folder)
    finally:
        with suppress(ProcessLookupError):  # what a failing case left is ours to end
            os.killpg(group, signal.SIGKILL)


def checkpoint_epoch(folder: Path) -> int | None:
    """The epoch of the run's checkpoint, loaded in full (None where it has written none)."""
    if not checkpoint_path(folder).exists():
        return None
    return int(load_checkpoint(folder)["epoch"])  # a truncated file fails here


def assert_nothing_left(killed: Killed) -> None:
    assert not killed.left, (
        f"{len(killed.left)} process(es) alive {killed.gone_s:.1f} s after the launcher's death: {killed.left}"
    )


def has_checkpoint(folder: Path, _processes: list[Process]) -> bool:
    return checkpoint_path(folder).exists()


@pytest.mark.slow  # the spawned-ranks case stays in the default selection
def test_killed_mid_epoch_the_launcher_takes_its_fork_server_tracker_and_ranks_with_it(tmp_path):
    """The case the issue measured: after the first checkpoint, while the ranks train on."""
    killed = kill_the_launcher_when(tmp_path, [], has_checkpoint)
    assert len(killed.ranks_at_kill()) == 2 and len(killed.at_kill) == 5, killed.at_kill  # with the fork server and the tracker
    assert_nothing_left(killed)
    assert checkpoint_epoch(killed.folder) is not None


@pytest.mark.slow
def test_killed_while_its_fork_server_imports_nothing_is_left(tmp_path):
    """At the first sight of the fork server (its imports take seconds), before it has forked a rank."""
    killed = kill_the_launcher_when(tmp_path, [], lambda _, processes: any(FORK_SERVER in p.command for p in processes))
    assert killed.fork_servers_at_kill() and not killed.ranks_at_kill(), killed.at_kill
    assert_nothing_left(killed)


@pytest.mark.slow
def test_killed_while_loading_the_data_nothing_is_left(tmp_path):
    pause = tmp_path / "paused"
    source = ["dataset._target_=tests.launch.pausing.PausingSource", f"+dataset.pause_file={pause}"]
    killed = kill_the_launcher_when(tmp_path, source, lambda *_: pause.exists())
    assert pause.read_text() == "loading data" and killed.fork_servers_at_kill() and not killed.ranks_at_kill(), killed.at_kill
    assert_nothing_left(killed)
    assert not checkpoint_path(killed.folder).exists()


@pytest.mark.slow
def test_killed_while_rank_0_evaluates_nothing_is_left(tmp_path):
    pause = tmp_path / "paused"
    model = ["model._target_=tests.launch.pausing.PausingTGCN", "+model.pause_in=evaluation", f"+model.pause_file={pause}"]
    killed = kill_the_launcher_when(tmp_path, model, lambda *_: pause.exists())
    assert pause.read_text() == "evaluating" and len(killed.ranks_at_kill()) == 2, killed.at_kill
    assert_nothing_left(killed)


@pytest.mark.slow
def test_killed_while_rank_0_writes_a_checkpoint_the_last_complete_one_stays(tmp_path):
    """Rank 0 pauses inside ``torch.save`` of the second checkpoint, its temporary file open: the
    first checkpoint (epoch 0) is still the one on disk, whole."""
    pause = tmp_path / "paused"
    model = ["model._target_=tests.launch.pausing.PausingTGCN", "+model.pause_in=checkpoint", f"+model.pause_file={pause}"]
    killed = kill_the_launcher_when(tmp_path, model, lambda *_: pause.exists())
    assert pause.read_text() == "writing a checkpoint" and len(killed.ranks_at_kill()) == 2, killed.at_kill
    assert_nothing_left(killed)
    assert list(killed.folder.glob(".checkpoint.pt.*.tmp")), "the second checkpoint was not being written"
    assert checkpoint_epoch(killed.folder) == 0


SPAWNING = """import sys

if __name__ == "__main__":
    import dygsched.launch.fork_server as fork_server
    import dygsched.launch.local as local
    from dygsched.cli import main

    fork_server.serves = local.serves = lambda device: False
    sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_killed_mid_epoch_with_spawned_ranks_nothing_is_left(tmp_path):
    """Ranks a GPU may serve start with spawn, as children of the launcher (``fork_server.serves``):
    the same kill, with that start forced on a CPU."""
    (tmp_path / "spawning.py").write_text(SPAWNING)
    killed = kill_the_launcher_when(tmp_path, [], has_checkpoint, dygsched=(str(tmp_path / "spawning.py"),))
    spawned = [p for p in killed.at_kill if p.parent == killed.launcher and "multiprocessing.spawn" in p.command]
    assert len(spawned) == 2 and not killed.fork_servers_at_kill(), killed.at_kill
    assert_nothing_left(killed)
    assert checkpoint_epoch(killed.folder) is not None


def watcher(pid: int) -> subprocess.Popen:
    """A process that calls ``end_with(pid)``, says so, then sleeps."""
    code = (
        f"import time\nfrom dygsched.launch.fork_server import end_with\nend_with({pid})\n"
        "print('watching', flush=True)\ntime.sleep(60)"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )


def test_a_rank_ends_as_soon_as_the_launcher_it_watches_does():
    launcher = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    rank = watcher(launcher.pid)
    try:
        assert rank.stdout.readline() == "watching\n"
        time.sleep(0.2)
        assert rank.poll() is None  # the launcher lives: so does the rank
        launcher.kill()
        started = time.monotonic()
        assert rank.wait(timeout=GONE_WITHIN_S) == 1 and time.monotonic() - started < GONE_WITHIN_S
    finally:
        launcher.kill()
        rank.kill()
        launcher.wait()
        rank.wait()


def test_a_rank_whose_launcher_is_already_gone_ends_at_once():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    rank = watcher(gone.pid)
    try:
        stdout, _ = rank.communicate(timeout=60)
    finally:
        rank.kill()
    assert rank.returncode == 1 and "watching" not in stdout
