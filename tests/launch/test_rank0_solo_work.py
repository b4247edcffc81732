"""Rank 0's solo work (partitioning, planning, a cost-curve fit) before an object broadcast, and its
checkpoint and metric files between epochs, cannot trip the collective timeout: the other ranks
wait for it on the store, not inside the collective, and still fail at once when rank 0 dies
instead. Two real gloo ranks with a 2-second timeout."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp

from dygsched.launch.local import free_port

TIMEOUT_S = 2.0
SOLO_S = 3 * TIMEOUT_S


def _rank(rank: int, port: int, how: str, out: str) -> None:
    from dygsched.engine import comm

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2, timeout=timedelta(seconds=TIMEOUT_S))
    start = time.monotonic()
    if rank == 0:
        if how == "dies":
            time.sleep(1.0)
            os._exit(3)
        time.sleep(SOLO_S)  # the partition, the plan
    try:
        value = {"plan": [[0, 1]]} if rank == 0 else None
        if how == "raw":  # what the package did before: the others wait inside the collective
            box = [value]
            dist.broadcast_object_list(box, src=0)
            result = repr(box[0])
        else:
            result = repr(comm.broadcast_object(value))
    except Exception as exc:
        result = f"error: {type(exc).__name__}"
    Path(out, f"rank{rank}").write_text(f"{result}\n{time.monotonic() - start:.1f}")
    os._exit(0)  # no collective teardown: the peer may be gone


def run_two(tmp_path, how: str) -> dict[int, tuple[str, float]]:
    context = mp.start_processes(_rank, args=(free_port(), how, str(tmp_path)), nprocs=2, start_method="spawn", join=False)
    deadline = time.monotonic() + 120
    for process in context.processes:
        process.join(max(1.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
    found = {}
    for rank in (0, 1):
        path = tmp_path / f"rank{rank}"
        if path.exists():
            result, seconds = path.read_text().split("\n")
            found[rank] = (result, float(seconds))
    return found


@pytest.mark.slow  # two more pairs of spawned ranks: about 30 s each on 2 shared cores
def test_the_collective_timeout_would_trip_without_the_wait(tmp_path):
    found = run_two(tmp_path, "raw")
    assert found[1][0].startswith("error"), found  # the check below is not vacuous


@pytest.mark.slow  # waits out a collective timeout
def test_solo_work_longer_than_the_collective_timeout_completes(tmp_path):
    found = run_two(tmp_path, "comm")
    assert found[0][0] == found[1][0] == "{'plan': [[0, 1]]}", found
    assert found[1][1] >= SOLO_S  # rank 1 waited out rank 0's solo work


@pytest.mark.slow
def test_a_rank_0_that_dies_during_its_solo_work_fails_the_others_at_once(tmp_path):
    found = run_two(tmp_path, "dies")
    assert 0 not in found and found[1][0].startswith("error"), found
    assert found[1][1] < 30, found


@pytest.mark.slow  # waits out a collective timeout
def test_a_checkpoint_slower_than_the_collective_timeout_does_not_fail_the_other_ranks(tmp_path):
    """Rank 0 takes 3 timeouts to write each checkpoint; rank 1's next epoch waits for it on the
    store (without that wait its first collective timed out: under NCCL the watchdog aborts it)."""
    from dygsched.launch.app import run
    from dygsched.launch.compose import compose_run
    from tests.conftest import TINY_SYNTHETIC

    slow = ["model._target_=tests.launch.pausing.SlowSavingTGCN", f"+model.save_s={SOLO_S}"]
    cfg = compose_run(
        [*TINY_SYNTHETIC, *slow, "world_size=2", "epochs=2", "checkpoint=true", f"dist_timeout_s={TIMEOUT_S}"]
        + [f"results_dir={tmp_path / 'results'}", "run_id=slow-save"]
    )
    start = time.monotonic()
    summary = run(cfg)
    assert summary["status"] == "ok", summary
    assert time.monotonic() - start >= 2 * SOLO_S  # both checkpoints were slow, and waited for
