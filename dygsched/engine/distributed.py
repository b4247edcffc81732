"""Process-group set-up from the standard torch.distributed environment variables.

The local launcher sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``
exactly as ``torchrun`` does, so one code path serves one machine and many. This module starts and
leaves the one process group (its backend chosen from the ranks' physical GPUs, or set by
``dist_backend``); every collective goes through ``dygsched.engine.comm``.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from dygsched.engine import comm
from dygsched.errors import ConfigError

log = logging.getLogger("dygsched")


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
            raise ConfigError(
                f"the worker needs the torch.distributed variable {exc.args[0]} (start it with torchrun or dygsched run)"
            ) from None


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


def threads_per_rank(cores: int, local_ranks: int) -> int:
    """The node's cores shared among its ranks (at least one thread each): eight ranks on a GPU
    node do not each start a thread per core."""
    return max(1, cores // max(1, local_ranks))


def rank_threads(local_ranks: int, affinity: int, node_cores: int, requested: str | None = None) -> int:
    """The CPU threads of one rank. ``requested`` (``OMP_NUM_THREADS``, which the torchrun launcher
    sets and a user may) wins. Else the cores the rank may run on (``affinity``: what SLURM's cgroup,
    a container, ``taskset`` or torchrun's binding give it): its own when they are fewer than the
    node's (``node_cores``: a launcher gave each task its cores), shared with the node's other
    ranks when they are the whole node (nobody did)."""
    if requested:
        try:
            return max(1, int(requested))
        except ValueError:
            pass  # a value torch would refuse too: fall back to the cores
    shared_by = local_ranks if affinity >= node_cores else 1
    return threads_per_rank(affinity, shared_by)


def _affinity() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def init_process_group(env: DistEnv, device: torch.device, timeout_s: float, requested: str = "auto") -> str:
    """Join the run's one process group; returns its backend (``dist_backend``: ``auto`` or a backend
    string torch accepts). ``auto``: ``cpu:gloo,cuda:nccl`` when every rank has a GPU of its own
    (``agree_on_backend``), else gloo."""
    if device.type == "cuda":
        torch.cuda.set_device(device)
    # ranks on one machine share its cores, on CPU and GPU nodes alike, unless the launcher gave each
    # its own (threads only, no core affinity set here: on a VM whose vCPUs run at different speeds,
    # pinning would make one rank persistently slower)
    local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    torch.set_num_threads(rank_threads(local_ranks, _affinity(), os.cpu_count() or 1, os.environ.get("OMP_NUM_THREADS")))
    timeout = timedelta(seconds=timeout_s)
    store, _, _ = next(dist.rendezvous("env://", rank=env.rank, world_size=env.world_size, timeout=timeout))
    store.set_timeout(timeout)
    choice = agree_on_backend(store, env.rank, env.world_size, device, requested)
    if env.rank == 0 and choice.shared_gpu:
        log.warning("dist_backend=auto: gloo, not NCCL: %s", choice.reason)
    dist.init_process_group(
        backend=choice.backend,
        store=dist.PrefixStore("default_pg", store),  # the prefix torch gives its own env:// store
        rank=env.rank,
        world_size=env.world_size,
        timeout=timeout,
    )
    return choice.backend


def close_process_group() -> None:
    """Leave the process group normally (every rank reached the end of the run)."""
    dist.destroy_process_group()


def abandon_process_group(device: torch.device | None) -> None:
    """After a failure: leave the process group without its collective teardown.

    ``destroy_process_group`` waits for peers that may be dead or stuck, so a failing rank skips
    it: NCCL communicators are aborted (their kernels could otherwise wait on a lost peer), gloo's
    sockets close when the process exits, which peers blocked on them see at once.
    """
    if not dist.is_initialized():
        return
    if device is not None and device.type == "cuda" and "nccl" in comm.device_backends(str(dist.get_backend())).values():
        try:
            dist.distributed_c10d._abort_process_group()
        except Exception:  # already aborted by NCCL's watchdog, or an older torch without it
            pass


@dataclass(frozen=True)
class BackendChoice:
    """The process group's backend and, in one line, why."""

    backend: str
    reason: str
    shared_gpu: bool = False  # CUDA ranks that keep gloo because two of them share a physical GPU


GPUIds = Sequence[str | Sequence[str]]
"""Each rank's physical GPU, as one or more names (``gpu_names``): two ranks share a GPU when any name is the same."""


def gpu_names(device: torch.device, host: str | None = None) -> list[str]:
    """The names of the physical GPU behind ``device``: its UUID, and its PCI address on this host
    (``host``), which is what NCCL compares and what the MIG slices of one GPU share (each slice
    has a UUID of its own). A torch that reports no PCI address leaves the UUID alone."""
    props = torch.cuda.get_device_properties(device)
    names = [f"uuid {props.uuid}"]
    bus = getattr(props, "pci_bus_id", None)
    if isinstance(bus, int):
        domain, slot = int(getattr(props, "pci_domain_id", 0) or 0), int(getattr(props, "pci_device_id", 0) or 0)
        names.append(f"pci {domain:04x}:{bus:02x}:{slot:02x} on {host or socket.gethostname()}")
    return names


def _shared_gpu(gpu_ids: GPUIds | None) -> tuple[int, int, str] | None:
    """The first two ranks whose GPUs have a name in common, and that name; None when every rank has its own."""
    first_rank: dict[str, int] = {}
    for rank, gpu in enumerate(gpu_ids or ()):
        names = [gpu] if isinstance(gpu, str) else list(gpu)
        for name in names:
            if name in first_rank and first_rank[name] != rank:
                return first_rank[name], rank, name.removeprefix("uuid ")
        for name in names:
            first_rank.setdefault(name, rank)
    return None


def choose_backend(device_type: str, requested: str, gpu_ids: GPUIds | None = None, nccl_available: bool = True) -> BackendChoice:
    """The backend for ranks on ``device_type`` given every rank's physical GPU (``gpu_ids``, in rank
    order: ``gpu_names`` of each).

    ``requested`` other than ``auto`` is taken as it is, once checked: torch must parse it, this
    build must have its backends, and the run's device type must have a backend in it or be staged
    through one (a CPU tensor goes to the GPU under ``nccl`` alone; a CUDA tensor through the host
    under ``cpu:gloo``); and where it sends CUDA tensors through NCCL, no two ranks may share a GPU
    (NCCL refuses them: "Duplicate GPU detected"), which is one line here. ``auto``: gloo on CPU; on
    CUDA ``cpu:gloo,cuda:nccl`` (CPU tensors through gloo, CUDA tensors through NCCL) when no two
    ranks share a GPU, else gloo (gloo all-reduces CUDA tensors through the host, so ranks can
    time-share a GPU).
    """
    shared = _shared_gpu(gpu_ids) if device_type == "cuda" else None
    if requested != "auto":
        try:
            served = comm.device_backends(requested)
        except ValueError as exc:
            raise ConfigError(
                f"dist_backend={requested} is not a backend string torch accepts: {str(exc).split('.')[0].strip()}"
            ) from None
        unavailable = sorted({name for name in served.values() if not _available(name, nccl_available)})
        if unavailable:
            raise ConfigError(f"dist_backend={requested} names {', '.join(unavailable)}, which this PyTorch build does not have")
        if device_type == "cpu" and "cpu" not in served:
            raise ConfigError(
                f"dist_backend={requested} has no backend for CPU tensors, and the run's device is cpu (use gloo or cpu:gloo)"
            )
        if device_type == "cuda" and "cuda" not in served and "cpu" not in served:
            raise ConfigError(f"dist_backend={requested} has no backend for CUDA or CPU tensors")
        if shared is not None and served.get("cuda") == "nccl":
            first, second, gpu = shared
            raise ConfigError(
                f"dist_backend={requested} sends CUDA tensors through NCCL, which needs a GPU per rank, but ranks "
                f"{first} and {second} share the GPU {gpu} (use dist_backend=auto or gloo, which stages them through the host)"
            )
        return BackendChoice(requested, f"dist_backend={requested} as set")
    if device_type != "cuda":
        return BackendChoice("gloo", "the ranks run on CPU")
    if not nccl_available:
        return BackendChoice("gloo", "this PyTorch build has no NCCL")
    if shared is not None:
        first, second, gpu = shared
        reason = (
            f"ranks {first} and {second} share the GPU {gpu} and NCCL needs a GPU per rank; "
            "gloo stages their CUDA tensors through the host"
        )
        return BackendChoice("gloo", reason, shared_gpu=True)
    return BackendChoice("cpu:gloo,cuda:nccl", "every rank has a GPU of its own: NCCL for CUDA tensors, gloo for CPU tensors")


def _available(name: str, nccl_available: bool) -> bool:
    if name == "nccl":
        return nccl_available
    probe = getattr(dist, f"is_{name}_available", None)
    return bool(probe()) if probe is not None else True  # a backend a plugin registered


def agree_on_backend(store: Any, rank: int, world_size: int, device: torch.device, requested: str = "auto") -> BackendChoice:
    """Every rank's backend choice, the same on every rank. Each rank puts its device type and, on
    CUDA, its GPU's names (``gpu_names``) in the rendezvous store (``store``: ``set``/``get`` of
    bytes); rank 0 reads them all, chooses, and puts its choice there for the others, or the one
    line that refuses the run, which every rank then raises: ranks of which some found a GPU and
    some none (``device=auto`` on a node without one), or ranks sharing a GPU under a backend that
    sends CUDA tensors through NCCL. One rank has nothing to agree on."""
    if world_size == 1:
        return choose_backend(device.type, requested, [gpu_names(device)] if device.type == "cuda" else None)
    prefix = f"dygsched/backend/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"  # a torchrun restart reuses the store
    mine = {"device": device.type, "gpu": gpu_names(device) if device.type == "cuda" else [], "host": socket.gethostname()}
    store.set(f"{prefix}/rank/{rank}", json.dumps(mine))
    if rank == 0:
        everyone = [json.loads(store.get(f"{prefix}/rank/{r}").decode()) for r in range(world_size)]
        try:
            choice = _choose_for(everyone, requested, dist.is_nccl_available())
        except ConfigError as exc:
            store.set(f"{prefix}/choice", json.dumps({"refused": str(exc)}))
            raise
        store.set(f"{prefix}/choice", json.dumps({"choice": [choice.backend, choice.reason, choice.shared_gpu]}))
        return choice
    answer = json.loads(store.get(f"{prefix}/choice").decode())
    if "refused" in answer:
        raise ConfigError(answer["refused"])
    backend, reason, shared = answer["choice"]
    return BackendChoice(backend, reason, shared)


def _choose_for(everyone: Sequence[dict[str, Any]], requested: str, nccl_available: bool) -> BackendChoice:
    """Rank 0's choice from what every rank put in the store (its device type, GPU names and host)."""
    kinds = [entry["device"] for entry in everyone]
    if len(set(kinds)) > 1:
        without = [r for r, kind in enumerate(kinds) if kind != "cuda"]
        hosts = sorted({everyone[r]["host"] for r in without})
        raise ConfigError(
            f"device=auto found a GPU on {len(kinds) - len(without)} rank(s) but none on rank(s) "
            f"{_ranges(without)} (host {', '.join(hosts)}): give every node a GPU, or run with device=cpu"
        )
    gpus = [entry["gpu"] for entry in everyone] if kinds[0] == "cuda" else None
    return choose_backend(kinds[0], requested, gpus, nccl_available)


def _ranges(ranks: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` as ``0-2, 5``."""
    parts: list[str] = []
    for rank in ranks:
        if parts and rank == int(parts[-1].split("-")[-1]) + 1:
            parts[-1] = f"{parts[-1].split('-')[0]}-{rank}"
        else:
            parts.append(str(rank))
    return ", ".join(parts)


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
