"""The local launcher's workers start from a fork server that has already imported their code.

Each rank used to be a fresh interpreter (``spawn``) that imported torch, PyTorch Geometric and
the package before it could train: seconds per rank, paid again for every run of a sweep. The
fork server is one process that imports them once, started as soon as the settings are accepted
(so its imports overlap the launcher's own and the data's loading); each rank is then a fork of
it. It has run no torch computation, so forking it is safe, which forking the launcher (that
builds the model and loads the data) would not be. This module imports no torch.
"""

from __future__ import annotations

import multiprocessing

# What every rank imports: the worker, the models and the strategies' shared code.
PRELOAD = ["dygsched.launch.local"]


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
    forkserver.ensure_running()
    return "forkserver"
