"""The link between two ranks of this machine, measured: gloo all-reduces of a tiny and a large
tensor between two processes, from which a latency per message and a bandwidth follow (what
``dygsched advise --link local`` prices communication with)."""

from __future__ import annotations

import json
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path

import torch

from dygsched.advise.hardware import LOCAL, LinkProfile


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _link_rank(rank: int, port: int, out: str, small: int, large: int, repeats: int) -> None:  # pragma: no cover (a child)
    """One of two ranks timing gloo all-reduces of ``small`` and ``large`` float32 values (rank 0 writes them)."""
    from dygsched.engine import comm
    from dygsched.engine.distributed import DistEnv, close_process_group, init_process_group

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), LOCAL_WORLD_SIZE="2")
    init_process_group(DistEnv(rank, 2, rank), torch.device("cpu"), 60.0, "gloo")
    try:
        timings = {}
        for count in (small, large):
            tensor = torch.ones(count)
            seconds = []
            for _ in range(repeats + 2):
                comm.barrier()
                start = time.perf_counter()
                comm.all_reduce(tensor)
                seconds.append(time.perf_counter() - start)
            timings[count] = statistics.median(seconds[2:])
        if rank == 0:
            Path(out).write_text(json.dumps({"small": timings[small], "large": timings[large], "bytes": large * 4}))
    finally:
        close_process_group()


def measure_local_link(timeout_s: float = 120.0, repeats: int = 20) -> LinkProfile:
    """The link between two ranks on this machine: gloo all-reduces through the loopback, timed in two
    processes (each on one thread, as two local ranks run). A 2-rank ring all-reduce of ``B`` bytes
    takes two messages and moves ``B`` each way: latency and bandwidth follow from a tiny and a large one."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as folder:
        out = str(Path(folder) / "link.json")
        context = mp.start_processes(
            _link_rank, args=(_free_port(), out, 1, 4 * 2**20, repeats), nprocs=2, start_method="spawn", join=False
        )
        deadline = time.monotonic() + timeout_s
        while not context.join(timeout=0.5):
            if time.monotonic() > deadline:
                for process in context.processes:
                    process.kill()
                raise TimeoutError("measuring the local link took too long")
        measured = json.loads(Path(out).read_text())
    latency = measured["small"] / 2
    bandwidth = measured["bytes"] / max(measured["large"] - measured["small"], 1e-9)
    return LinkProfile(
        LOCAL,
        bandwidth,
        latency,
        f"measured here: gloo all-reduces between two processes of this machine ({bandwidth / 1e9:.2f} GB/s, "
        f"{latency * 1e6:.0f} us per message)",
        "measured on a shared machine: other processes' load is in it",
    )
