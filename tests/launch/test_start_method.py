"""Which runs' ranks start from the fork server: CPU runs only, since a process forked from one that
has initialised CUDA cannot use CUDA (every strategy failed so on an H100 before)."""

from __future__ import annotations

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
