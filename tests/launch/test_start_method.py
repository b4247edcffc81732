"""Which runs' ranks start from the fork server: CPU runs only, since a process forked from one that
has initialised CUDA cannot use CUDA (every strategy failed so on an H100 before)."""

from __future__ import annotations

import os

import pytest
import torch

from dygsched.launch.fork_server import serves


def test_cpu_runs_start_from_the_fork_server():
    assert serves("cpu")


def test_cuda_runs_start_their_ranks_as_fresh_interpreters():
    assert not serves("cuda")


@pytest.mark.parametrize("gpu_visible", [True, False])
def test_auto_follows_whether_a_gpu_is_visible(monkeypatch, gpu_visible):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu_visible)
    assert serves("auto") is not gpu_visible


@pytest.mark.parametrize("visible", [None, "0,1"])
def test_the_fork_server_starts_with_no_gpu_visible_and_the_launcher_keeps_its_own(monkeypatch, visible):
    """A CPU rank forked from a server that had initialised CUDA failed at its first CUDA query (a
    device=cpu run after a CUDA run in one process, on an H100): the server serves CPU runs only,
    so it starts seeing no GPU, and the launcher's own setting is left as it was."""
    from multiprocessing import forkserver

    from dygsched.launch import fork_server

    seen = []
    monkeypatch.setattr(fork_server, "available", lambda: True)
    monkeypatch.setattr(forkserver, "ensure_running", lambda: seen.append(os.environ.get("CUDA_VISIBLE_DEVICES")))
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert fork_server.start_fork_server() == "forkserver"
    assert seen == [""]
    assert os.environ.get("CUDA_VISIBLE_DEVICES") == visible
