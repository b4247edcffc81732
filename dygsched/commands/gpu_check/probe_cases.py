"""Part 1's cases: each helper of ``dygsched.engine.comm`` called on a probe rank, and what it must return."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ProbeCase:
    """One call of a helper of ``dygsched.engine.comm`` and the check of what it returned."""

    helper: str
    device: str  # cpu | cuda
    label: str
    call: Callable[[Any, Any], None]  # (comm, torch) -> None; raises when the result is wrong


DeviceOf = Callable[[Any], Any]  # torch -> the torch.device a case's tensors go on


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)


def _seconds() -> tuple[list[float], Callable[[Any], None]]:
    """A list and the ``into`` that appends to it: the seconds a timed call hands over (a number,
    or a timed region read here, which on CUDA waits for the region's end event)."""
    box: list[float] = []

    def into(value: Any) -> None:
        seconds = float(value.seconds) if hasattr(value, "seconds") else float(value)
        expect(seconds >= 0, f"timed {seconds} s")
        box.append(seconds)

    return box, into


def probe_cases(rank: int, world_size: int, device: str) -> list[ProbeCase]:
    """The cases for one rank of ``world_size``; ``device`` is the tensor device of the CUDA cases'
    half (``cpu`` leaves them out). Rank ``r`` sends ``r + q`` rows to rank ``q`` (rank 0 sends
    none to itself: a zero-row split in every all-to-all), each row holding the sender's rank."""
    cases: list[ProbeCase] = []
    devices = ["cpu"] + (["cuda"] if device == "cuda" else [])

    def add(helper: str, on: str, label: str) -> Callable[[Callable[[Any, Any], None]], Callable[[Any, Any], None]]:
        def register(fn: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
            cases.append(ProbeCase(helper, on, label, fn))
            return fn

        return register

    for on in devices:

        def dev(torch: Any, on: str = on) -> Any:
            return torch.device("cuda", torch.cuda.current_device()) if on == "cuda" else torch.device("cpu")

        @add("all_reduce", on, "float32 sum, timed")
        def _all_reduce(comm: Any, torch: Any, dev: DeviceOf = dev) -> None:
            seconds, into = _seconds()
            tensor = torch.full((4, 3), float(rank + 1), device=dev(torch))
            result = comm.all_reduce(tensor, into=into)
            expected = world_size * (world_size + 1) / 2
            expect(
                result.device == tensor.device and bool((result == expected).all()),
                f"sum {result.flatten()[:3].tolist()} != {expected}",
            )
            expect(len(seconds) == 1 and seconds[0] >= 0, f"timed {seconds}")

        @add("all_reduce", on, "int64 max")
        def _all_reduce_max(comm: Any, torch: Any, dev: DeviceOf = dev) -> None:
            tensor = torch.tensor([rank, -rank], dtype=torch.int64, device=dev(torch))
            comm.all_reduce(tensor, op=comm.MAX)
            expect(tensor.tolist() == [world_size - 1, 0], f"max {tensor.tolist()}")

        @add("all_reduce_async", on, "posted, then waited (timed)")
        def _all_reduce_async(comm: Any, torch: Any, dev: DeviceOf = dev) -> None:
            seconds, into = _seconds()
            tensor = torch.ones(1000, device=dev(torch))
            result = comm.all_reduce_async(tensor).wait(into=into)
            expect(bool((result == world_size).all()), f"sum {result[:3].tolist()}")
            expect(len(seconds) == 1, f"timed {seconds}")

        @add("all_to_all", on, "uneven splits, zero rows from rank 0 to itself, timed")
        def _all_to_all(comm: Any, torch: Any, dev: DeviceOf = dev) -> None:
            seconds, into = _seconds()
            sends = (lambda p, q: p + q) if world_size > 1 else (lambda p, q: 5)
            send_counts = [sends(rank, q) for q in range(world_size)]
            recv_counts = [sends(p, rank) for p in range(world_size)]
            send = torch.full((sum(send_counts), 3), float(rank), device=dev(torch))
            got = comm.all_to_all(send, send_counts, recv_counts, into=into)
            expect(
                got.device == send.device and tuple(got.shape) == (sum(recv_counts), 3),
                f"shape {tuple(got.shape)} on {got.device}",
            )
            senders = torch.repeat_interleave(torch.arange(world_size), torch.tensor(recv_counts)).to(got)
            expect(bool((got == senders[:, None]).all()), "rows from the wrong rank")
            expect(len(seconds) == 1, f"timed {seconds}")

        @add("all_to_all", on, "nothing sent by anyone")
        def _all_to_all_empty(comm: Any, torch: Any, dev: DeviceOf = dev) -> None:
            zeros = [0] * world_size
            got = comm.all_to_all(torch.empty((0, 4), device=dev(torch)), zeros, zeros)
            expect(tuple(got.shape) == (0, 4), f"shape {tuple(got.shape)}")

        @add("all_to_all_async", on, "uneven splits, posted, then waited")
        def _all_to_all_async(comm: Any, torch: Any, dev: DeviceOf = dev) -> None:
            send_counts = [q + 1 for q in range(world_size)]
            recv_counts = [rank + 1] * world_size
            send = torch.cat([torch.full((q + 1, 2), float(10 * rank + q)) for q in range(world_size)]).to(dev(torch))
            pending = comm.all_to_all_async(send, send_counts, recv_counts)
            got = pending.wait()
            expected = torch.cat([torch.full((rank + 1, 2), float(10 * p + rank)) for p in range(world_size)]).to(got)
            expect(pending.is_completed() and torch.equal(got, expected), "rows out of place")

        if world_size > 1:

            @add("send/recv", on, "rank 0 and 1 swap 3 rows, timed")
            def _send_recv(comm: Any, torch: Any, dev: DeviceOf = dev) -> None:
                if rank > 1:
                    return
                seconds, into = _seconds()
                mine = torch.full((3, 2), float(rank), device=dev(torch))
                other = torch.empty_like(mine)
                if rank == 0:
                    comm.send(mine, 1, into=into)
                    comm.recv(other, 1, into=into)
                else:
                    comm.recv(other, 0, into=into)
                    comm.send(mine, 0, into=into)
                expect(bool((other == float(1 - rank)).all()) and other.device == mine.device, f"received {other.tolist()}")
                expect(len(seconds) == 2, f"timed {seconds}")

    @add("exchange_counts", "cpu", "uneven counts with zeros")
    def _exchange_counts(comm: Any, torch: Any) -> None:
        got = comm.exchange_counts([rank * q for q in range(world_size)])
        expect(got == [p * rank for p in range(world_size)], f"counts {got}")

    @add("broadcast_object", "cpu", "a dict with a CPU tensor")
    def _broadcast_object(comm: Any, torch: Any) -> None:
        got = comm.broadcast_object({"rank": rank, "rows": torch.arange(3)}, src=0)
        expect(got["rank"] == 0 and got["rows"].tolist() == [0, 1, 2], f"got {got}")

    @add("all_gather_object", "cpu", "each rank's tuple")
    def _all_gather_object(comm: Any, torch: Any) -> None:
        got = comm.all_gather_object(("rank", rank))
        expect(got == [("rank", r) for r in range(world_size)], f"got {got}")

    @add("gather_object", "cpu", "to rank 0")
    def _gather_object(comm: Any, torch: Any) -> None:
        got = comm.gather_object({"r": rank}, dst=0)
        expect(got == [{"r": r} for r in range(world_size)] if rank == 0 else got is None, f"got {got}")

    @add("barrier", "cpu", "every rank")
    def _barrier(comm: Any, torch: Any) -> None:
        comm.barrier()

    @add("wait_for_rank", "cpu", "every rank meets rank 0 on the store")
    def _wait_for_rank(comm: Any, torch: Any) -> None:
        comm.wait_for_rank(0)

    return cases


# Helpers of comm that are not collectives (the group's description), checked by the "backend" case.
DESCRIBING = {
    "active",
    "rank",
    "world_size",
    "backend",
    "device_backends",
    "device_backend",
    "cuda_through_nccl",
    "stages_through_host",
    "blocks_host",
    "clock_for",
}
