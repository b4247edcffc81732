"""Start ``world_size`` worker processes on this machine, as torchrun would, and wait for them.

The parent loads the graph once (so bad input fails before any worker starts) and saves it into
the run folder; workers memory-map it, so one copy serves every rank. Each worker gets the
standard ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``/``MASTER_ADDR``/``MASTER_PORT`` variables.
A worker that fails writes its reason to the run folder; the parent turns it into one line.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import torch.multiprocessing as mp

from dygsched.data.temporal_graph import TemporalGraph
from dygsched.engine.distributed import DistEnv
from dygsched.engine.worker import train_rank
from dygsched.errors import DygschedError

GRAPH_FILE = ".graph.pt"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def failure_file(run_dir: Path, rank: int) -> Path:
    return run_dir / f"failure-rank{rank}.txt"


def _worker(local_rank: int, cfg: Mapping[str, Any], world_size: int, port: int, run_dir: str) -> None:
    os.environ.update(
        RANK=str(local_rank),
        LOCAL_RANK=str(local_rank),
        WORLD_SIZE=str(world_size),
        LOCAL_WORLD_SIZE=str(world_size),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    try:
        graph = torch.load(Path(run_dir) / GRAPH_FILE, mmap=True, weights_only=False)
        train_rank(cfg, DistEnv.from_environ(), graph)
    except DygschedError as exc:
        failure_file(Path(run_dir), local_rank).write_text(str(exc))
        sys.exit(1)
    except BaseException as exc:  # a bug or a crash: keep the traceback in the run folder
        failure_file(Path(run_dir), local_rank).write_text(f"{type(exc).__name__}: {exc}\n\n{traceback.format_exc()}")
        sys.exit(1)


def first_failure(run_dir: Path, world_size: int) -> str:
    """The reason of the lowest rank that wrote one (its first line), or a generic one."""
    for rank in range(world_size):
        path = failure_file(run_dir, rank)
        if path.exists():
            return f"rank {rank}: {path.read_text().strip().splitlines()[0]}"
    return "a worker exited without a reason (killed?)"


def launch_local(cfg: Mapping[str, Any], graph: TemporalGraph, run_dir: Path, world_size: int) -> None:
    """Run every rank to completion; raise ``ProcessExitedException`` if one fails."""
    run_dir.mkdir(parents=True, exist_ok=True)
    graph_path = run_dir / GRAPH_FILE
    torch.save(graph, graph_path)
    # torch logs a warning for every sibling it terminates after a failure; the failure itself is reported once, by us.
    logging.getLogger("torch.multiprocessing.spawn").setLevel(logging.ERROR)
    try:
        mp.start_processes(
            _worker, args=(dict(cfg), world_size, free_port(), str(run_dir)), nprocs=world_size, join=True, start_method="spawn"
        )
    finally:
        graph_path.unlink(missing_ok=True)
