"""The local launcher's workers start from a fork server that has already imported their code.

Each rank used to be a fresh interpreter (``spawn``) that imported torch, PyTorch Geometric and
the package before it could train: seconds per rank, paid again for every run of a sweep. The
fork server is one process that imports them once, started as soon as the settings are accepted
(so its imports overlap the launcher's own and the data's loading); each rank is then a fork of
it. It has run no torch computation, so forking it is safe, which forking the launcher (that
builds the model and loads the data) would not be. This module imports no torch.

Every process of a run ends with the launcher, however the launcher ends (``kill -9``, the
out-of-memory killer) and whenever:

- multiprocessing's fork server runs until the write end of its keep-alive pipe is closed
  everywhere, and it hands a copy to every process it forks: ranks holding theirs would keep it
  alive after the launcher. So a rank closes its copy (:func:`release_fork_server`), and the
  fork server, which imports this module first, also asks Linux to kill it when the launcher
  dies (:func:`follow_the_launcher`), even mid-import, before it has forked anything;
- a rank is a child of the fork server, not of the launcher, so it watches the launcher itself
  (:func:`end_with`: a pidfd, polled by a daemon thread) besides dying with the fork server;
- multiprocessing's resource tracker exits when the launcher and the ranks, which hold its pipe,
  are gone.
"""

from __future__ import annotations

import multiprocessing
import os
import select
import signal
import sys
import threading
import time

# What every rank imports: the worker, the models and the strategies' shared code. This module
# comes first: importing it is how the fork server learns to die with the launcher.
PRELOAD = ["dygsched.launch.fork_server", "dygsched.launch.local"]
# The launcher's pid, in the fork server's environment only (it removes it on reading it).
LAUNCHER_ENV = "DYGSCHED_FORK_SERVER_LAUNCHER"
PR_SET_PDEATHSIG = 1
POLL_S = 0.5  # how often a rank looks for the launcher where Linux offers no pidfd


def available() -> bool:
    return "forkserver" in multiprocessing.get_all_start_methods()


def serves(device: str) -> bool:
    """Whether the ranks of a run with this ``device`` setting start from the fork server.

    A process forked from one that has initialised CUDA cannot use CUDA ("CUDA error:
    initialization error" at its first CUDA call, seen on an H100 with every strategy), and
    importing the ranks' code can initialise it (asking for the device count does). So ranks
    that may use a GPU start as fresh interpreters (``spawn``), as PyTorch advises for CUDA;
    the fork server serves CPU runs, where it saves each rank its imports.
    """
    if device == "cpu":
        return True
    import torch  # only here: the launcher has imported it by now, and this module is imported by the fork server

    return device == "auto" and not torch.cuda.is_available()


def start_fork_server() -> str:
    """Start the fork server in the background (once per process); the start method the ranks use."""
    if not available():
        return "spawn"
    from multiprocessing import forkserver

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)  # no effect once it runs
    # Linux's parent-death signal follows the thread that started the process: only a server
    # started from the main thread can rely on it (one started elsewhere still ends with the
    # launcher, once its imports are done, through its keep-alive pipe).
    tie = threading.current_thread() is threading.main_thread()
    if tie:
        os.environ[LAUNCHER_ENV] = str(os.getpid())
    # It serves CPU runs only (serves): it and its ranks see no GPU, so nothing they import or call
    # can initialise CUDA in them (a CPU rank forked from a server that had, failed at its first CUDA query).
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    try:
        forkserver.ensure_running()
    finally:
        if tie:
            os.environ.pop(LAUNCHER_ENV, None)
        if visible is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = visible
    return "forkserver"


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Ask Linux to send this process ``sig`` when its parent exits (no effect elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig))
    except (OSError, AttributeError):
        pass


def follow_the_launcher() -> None:
    """In the fork server started by :func:`start_fork_server`: die with the launcher (run on import)."""
    launcher = os.environ.pop(LAUNCHER_ENV, None)
    if launcher is None:  # any other process that imports this module
        return
    die_with_parent(signal.SIGKILL)
    if os.getppid() != int(launcher):  # the launcher died before we could ask
        os._exit(1)


def release_fork_server() -> None:
    """In a process the fork server forked: close its copy of the fork server's keep-alive pipe."""
    from multiprocessing import forkserver

    server = forkserver._forkserver
    alive_fd = getattr(server, "_forkserver_alive_fd", None)
    if alive_fd is None or getattr(server, "_forkserver_pid", None) is not None:  # not forked, or our own server
        return
    try:
        os.close(alive_fd)
    except OSError:
        pass
    server._forkserver_alive_fd = None  # type: ignore[attr-defined]  # private: typeshed's ForkServer does not declare it


def end_with(pid: int) -> None:
    """End this process (exit code 1) as soon as process ``pid`` has ended; at once if it already has."""
    try:
        handle: int | None = os.pidfd_open(pid)
    except ProcessLookupError:
        os._exit(1)
    except (AttributeError, OSError):  # not Linux, or a kernel before 5.3: look every POLL_S seconds
        handle = None

    def watch() -> None:
        if handle is not None:
            watcher = select.poll()
            watcher.register(handle, select.POLLIN)
            while not watcher.poll():  # readable once the process has ended
                pass
        else:
            while _alive(pid):
                time.sleep(POLL_S)
        os._exit(1)

    if handle is None and not _alive(pid):
        os._exit(1)
    threading.Thread(target=watch, name=f"end-with-{pid}", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        pass
    return True


follow_the_launcher()
