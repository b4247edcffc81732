"""Process-group set-up from the standard torch.distributed environment variables.

The local launcher sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``
exactly as ``torchrun`` does, so one code path serves one machine and many.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from dygsched.errors import ConfigError


@dataclass(frozen=True)
class DistEnv:
    rank: int
    world_size: int
    local_rank: int

    @classmethod
    def from_environ(cls) -> DistEnv:
        try:
            return cls(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", 0)))
        except KeyError as exc:
            raise ConfigError(f"the worker needs the torch.distributed variable {exc.args[0]} (start it with torchrun or dygsched run)") from None


def pick_device(requested: str, local_rank: int) -> torch.device:
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError("device=cuda but no CUDA device is available (use device=cpu or device=auto)")
        return torch.device("cuda", local_rank % torch.cuda.device_count())
    if requested == "cpu":
        return torch.device("cpu")
    raise ConfigError(f"unknown device '{requested}' (choose from auto, cpu, cuda)")


def init_process_group(env: DistEnv, device: torch.device, timeout_s: float) -> None:
    if device.type == "cuda":
        torch.cuda.set_device(device)
    else:  # ranks on one machine share its cores instead of each starting a thread per core
        # (threads only, no core affinity: on a VM whose vCPUs run at different speeds, pinning
        # would make one rank persistently slower)
        local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_ranks))
    dist.init_process_group(
        backend=backend_for(device),
        init_method="env://",
        rank=env.rank,
        world_size=env.world_size,
        timeout=timedelta(seconds=timeout_s),
    )


def abandon_process_group(device: torch.device | None) -> None:
    """After a failure: leave the process group without its collective teardown.

    ``destroy_process_group`` waits for peers that may be dead or stuck, so a failing rank skips
    it: NCCL communicators are aborted (their kernels could otherwise wait on a lost peer), gloo's
    sockets close when the process exits, which peers blocked on them see at once.
    """
    if not dist.is_initialized():
        return
    if device is not None and device.type == "cuda" and dist.get_backend() == "nccl":
        try:
            dist.distributed_c10d._abort_process_group()
        except Exception:  # already aborted by NCCL's watchdog, or an older torch without it
            pass


def backend_for(device: torch.device) -> str:
    """NCCL when every local rank has a GPU of its own; gloo on CPU and when ranks share a GPU.

    NCCL refuses two ranks on one device; gloo all-reduces CUDA tensors through the host, so
    several ranks can still time-share a single GPU (slower collectives, same results).
    """
    if device.type != "cuda":
        return "gloo"
    local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    return "nccl" if local_ranks <= torch.cuda.device_count() else "gloo"


def reset_memory_peaks(device: torch.device) -> bool:
    """Start a new peak-memory period (one per epoch) for each counter this rank has; returns whether
    the process's peak resident set could be reset (the GPU allocator's peak always can be).

    GPU: ``torch.cuda.reset_peak_memory_stats``. Every device: the process's peak resident set size
    (``VmHWM``), which Linux resets when ``5`` is written to ``/proc/self/clear_refs``.
    """
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
        return _resident_peak() is not None
    except OSError:
        return False


def _resident_peak() -> int | None:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        return None
    return None


def gpu_peak_allocated(device: torch.device) -> int | None:
    """The GPU allocator's peak of allocated bytes since ``reset_memory_peaks``; None off a GPU."""
    return int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else None


def peak_rss() -> int:
    """The process's peak resident set (bytes) since ``reset_memory_peaks`` said it could be reset."""
    peak = _resident_peak()
    assert peak is not None, "reset_memory_peaks said the counter works"
    return peak
