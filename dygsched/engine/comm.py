"""Every collective the package issues, in one module: the right group for each tensor's device.

The rule: nothing else in ``dygsched`` calls a ``torch.distributed`` collective (a test greps the
package for it); ``engine/distributed.py`` only creates and tears down the process group.

One process group serves every device type. Its backend is a plain name (``gloo``, ``nccl``) or a
backend per device type (``cpu:gloo,cuda:nccl``, what a CUDA run initialises), and torch routes
each collective by the device of its tensors. This module makes sure a tensor only ever reaches a
backend that takes it:

- a CPU tensor (counts, sums, flags) goes through the group's CPU backend (gloo); where the group
  has none (``nccl`` alone) it is copied to this rank's GPU and back;
- a CUDA tensor goes through NCCL where the group has NCCL for CUDA; where CUDA tensors go to gloo
  (ranks that share one GPU) the all-to-alls and point-to-point transfers are staged through the
  host (gloo moves host memory only); gloo's all-reduce takes CUDA tensors itself. Under a backend
  string with nothing for CUDA (``cpu:gloo`` on a CUDA run) every CUDA tensor is staged.

``backend()`` is the backend in use, ``device_backend(device_type)`` the one a device type's
tensors use, ``cuda_through_nccl()`` answers whether a CUDA tensor goes through NCCL or must be
staged through the host. With no process group or one rank every call returns at once with what
one rank would hold.

Timing: a call given ``into`` hands it a ``dygsched.engine.timing.Region`` covering the call's
finished work (e.g. ``into=partial(stats.add_time, "comm_s")``, or a ``Tally``'s ``add``): on a CUDA
tensor through NCCL, CUDA events on the stream the collective was ordered on, read later without a
device-wide synchronize; on a host tensor, or a CUDA tensor gloo moves through the host, the host
clock (gloo's call returns when its work is done, and the host is blocked until then).
``Pending.wait(into=...)`` times the wait for an asynchronous call the same way. A call without
``into`` times nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from dygsched.engine.timing import HOST, Region

Timed = Callable[[Region], object]
"""What a call hands the timed region of its finished work to (``IterationStats.add_time`` bound to a
field, ``Tally.add`` bound to a name)."""

SUM = dist.ReduceOp.SUM
MAX = dist.ReduceOp.MAX
MIN = dist.ReduceOp.MIN

# Backends that move host memory only for point-to-point and all-to-all (they take CUDA tensors for
# all-reduce and broadcast by staging them themselves).
_HOST_BACKENDS = frozenset({"gloo"})


# -- the group --------------------------------------------------------------------------------


def active() -> bool:
    """Whether a process group with more than one rank exists (else every call is local)."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def backend() -> str | None:
    """The backend the process group was initialised with, as torch reports it (``"gloo"``,
    ``"nccl"``, ``"cpu:gloo,cuda:nccl"``); None without a process group."""
    if not (dist.is_available() and dist.is_initialized()):
        return None
    return str(dist.get_backend())


def device_backends(name: str) -> dict[str, str]:
    """Which backend serves each device type under a backend string, as torch maps it:
    ``gloo`` serves CPU and CUDA tensors, ``nccl`` CUDA tensors only, ``cpu:gloo,cuda:nccl`` each its own.
    A malformed string raises ``ValueError`` (torch's message)."""
    backend_map = dist.distributed_c10d.BackendConfig(dist.Backend(name)).get_device_backend_map()
    return {str(device): str(value).lower() for device, value in backend_map.items()}


def device_backend(device_type: str, name: str | None = None) -> str | None:
    """The backend that tensors of ``device_type`` ("cpu", "cuda") use under ``name`` (default: the
    group's backend); None where that backend string has none for the device type (CPU tensors under
    ``nccl`` alone: this module stages them through the GPU). None without a process group."""
    name = name if name is not None else backend()
    if name is None:
        return None
    return device_backends(name).get(device_type)


def cuda_through_nccl(name: str | None = None) -> bool:
    """Whether a CUDA tensor's collective goes through NCCL under ``name`` (default: the group's
    backend); False means it goes through a host backend (gloo) and is staged through the host."""
    return device_backend("cuda", name) == "nccl"


def stages_through_host(tensor: torch.Tensor, name: str | None = None, exchange: bool = True) -> bool:
    """Whether this module copies ``tensor`` to the host for its collective: a CUDA tensor under a
    backend string with no backend for CUDA (``cpu:gloo``), or, for an all-to-all or a send/recv
    (``exchange``), one whose CUDA backend moves host memory only (gloo)."""
    if not tensor.is_cuda:
        return False
    served = device_backend("cuda", name)
    return served is None or (exchange and served in _HOST_BACKENDS)


def blocks_host(tensor: torch.Tensor) -> bool:
    """Whether a collective of ``tensor`` is host work, its call returning once it is done: a host
    tensor (gloo), or a CUDA tensor that does not go through NCCL (gloo copies it through the host,
    or this module stages it). Time it with the host clock (``timing.HOST``); an NCCL collective of
    a CUDA tensor is device work, timed by events (``clock_for``)."""
    return not tensor.is_cuda or not cuda_through_nccl()


def clock_for(device: torch.device) -> torch.device:
    """The device whose clock times a collective of tensors on ``device``: the device for NCCL's
    CUDA collectives (events), the host (``timing.HOST``) for everything gloo does."""
    return device if device.type == "cuda" and cuda_through_nccl() else HOST


def _carrier(tensor: torch.Tensor, exchange: bool) -> torch.Tensor:
    """The tensor a collective can take for ``tensor``: itself, a host copy of a CUDA tensor on a
    gloo-served device type (``exchange``: all-to-all, send/recv), or a GPU copy of a CPU tensor on
    a group with no CPU backend."""
    if tensor.is_cuda:
        return tensor.cpu() if stages_through_host(tensor, exchange=exchange) else tensor
    if tensor.device.type == "cpu" and device_backend("cpu") is None:
        return tensor.to(torch.device("cuda", torch.cuda.current_device()))
    return tensor


def _region(tensor: torch.Tensor, into: Timed | None) -> Region | None:
    """A region started now, when the call is timed: on the clock of the work (``clock_for``)."""
    return Region(clock_for(tensor.device)) if into is not None else None


def _finish(region: Region | None, into: Timed | None) -> None:
    """End ``region`` after the work queued so far (a CUDA collective is ordered on the current
    stream, NCCL's wait makes that stream wait for its own) and hand it over."""
    if region is not None and into is not None:
        into(region.stop())


@dataclass
class Pending:
    """An asynchronous collective posted and not yet waited for; ``wait()`` gives its result
    (the received rows, the reduced tensor) on the device it was asked for."""

    result: torch.Tensor
    work: Any = None
    carried: torch.Tensor | None = None  # the staged copy the collective writes, when not ``result`` itself
    keep: tuple[Any, ...] = ()  # buffers the collective reads, kept alive until it has finished
    done: bool = False

    def wait(self, into: Timed | None = None) -> torch.Tensor:
        if not self.done:
            region = _region(self.result, into)
            if self.work is not None:
                self.work.wait()
            if self.carried is not None and self.carried is not self.result:
                with torch.no_grad():  # the result may be an autograd output already (a posted halo)
                    self.result.copy_(self.carried)
            self.done, self.carried, self.keep = True, None, ()
            _finish(region, into)
        return self.result

    def is_completed(self) -> bool:
        return self.done or self.work is None or bool(self.work.is_completed())


# -- reductions -------------------------------------------------------------------------------


def all_reduce(tensor: torch.Tensor, op: Any = SUM, into: Timed | None = None) -> torch.Tensor:
    """Reduce ``tensor`` over ranks in place (sum by default); returns it."""
    if not active():
        return tensor
    region = _region(tensor, into)
    carried = _carrier(tensor, exchange=False)
    dist.all_reduce(carried, op=op)
    if carried is not tensor:
        tensor.copy_(carried)
    _finish(region, into)
    return tensor


def all_reduce_async(tensor: torch.Tensor, op: Any = SUM) -> Pending:
    """``all_reduce`` posted without waiting: ``wait()`` before reading ``tensor``."""
    if not active():
        return Pending(tensor, done=True)
    carried = _carrier(tensor, exchange=False)
    work = dist.all_reduce(carried, op=op, async_op=True)
    return Pending(tensor, work, carried)


# -- all-to-all ---------------------------------------------------------------------------------


def _counts(counts: Sequence[int]) -> list[int]:
    return [int(c) for c in counts]


def all_to_all(
    send: torch.Tensor, send_counts: Sequence[int], recv_counts: Sequence[int], into: Timed | None = None
) -> torch.Tensor:
    """Rows to every rank: ``send_counts[q]`` of ``send``'s rows (in rank order) to rank ``q``, and
    ``recv_counts[q]`` rows from each; uneven and zero splits are fine. The received rows, on
    ``send``'s device. With one rank, ``send`` itself."""
    if not active():
        return send
    region = _region(send, into)
    received = all_to_all_async(send, send_counts, recv_counts).wait()
    _finish(region, into)
    return received


def all_to_all_async(send: torch.Tensor, send_counts: Sequence[int], recv_counts: Sequence[int]) -> Pending:
    """``all_to_all`` posted without waiting: ``wait()`` gives the received rows."""
    if not active():
        return Pending(send, done=True)
    send_counts, recv_counts = _counts(send_counts), _counts(recv_counts)
    if len(send_counts) != world_size() or len(recv_counts) != world_size():
        raise ValueError(f"all_to_all needs one count per rank ({world_size()}), got {len(send_counts)} and {len(recv_counts)}")
    if sum(send_counts) != send.shape[0]:
        raise ValueError(f"all_to_all sends {sum(send_counts)} rows but the tensor has {send.shape[0]}")
    result = send.new_empty((sum(recv_counts), *send.shape[1:]))
    carried_send = _carrier(send.contiguous(), exchange=True)
    carried_recv = result if carried_send.device == result.device else torch.empty_like(result, device=carried_send.device)
    work = dist.all_to_all_single(
        carried_recv, carried_send, output_split_sizes=recv_counts, input_split_sizes=send_counts, async_op=True
    )
    return Pending(result, work, carried_recv, keep=(carried_send,))


def exchange_counts(send_counts: Sequence[int], into: Timed | None = None) -> list[int]:
    """How many rows each rank will send here, given how many this rank sends each: one all-to-all
    of a CPU int64 tensor (gloo under a device-keyed backend), read on the host once."""
    if not active():
        return _counts(send_counts)
    counts = torch.tensor(_counts(send_counts), dtype=torch.int64)
    ones = [1] * world_size()
    return [int(c) for c in all_to_all(counts, ones, ones, into).tolist()]


# -- point to point -----------------------------------------------------------------------------


def send(tensor: torch.Tensor, dst: int, into: Timed | None = None) -> None:
    """Send ``tensor`` to rank ``dst`` (blocking until it is handed over)."""
    region = _region(tensor, into)
    carried = _carrier(tensor.contiguous(), exchange=True)
    dist.send(carried, dst)
    _finish(region, into)


def recv(buffer: torch.Tensor, src: int, into: Timed | None = None) -> torch.Tensor:
    """Receive from rank ``src`` into ``buffer`` (its shape and dtype say what arrives); returns it."""
    region = _region(buffer, into)
    carried = _carrier(buffer, exchange=True)
    dist.recv(carried, src)
    if carried is not buffer:
        buffer.copy_(carried)
    _finish(region, into)
    return buffer


# -- Python objects -----------------------------------------------------------------------------


def broadcast_object(value: Any, src: int = 0) -> Any:
    """Rank ``src``'s ``value`` on every rank (pickled; through the group's CPU backend where it has one).

    Rank ``src`` often works alone before it has the value (partitioning, solving the plan, fitting
    a cost curve), for longer than the collective timeout on a large graph. So the other ranks first
    wait for it on the process group's store, where no collective timeout runs (a ``src`` that dies
    closes the store's connection, or its launcher stops the job), and enter the broadcast together."""
    if not active():
        return value
    wait_for_rank(src)
    box = [value]
    dist.broadcast_object_list(box, src=src)
    return box[0]


_arrivals = itertools.count()
SOLO_WORK_LIMIT = timedelta(hours=24)  # how long the other ranks wait for one rank's solo work


def wait_for_rank(src: int) -> None:
    """Return on every rank once rank ``src`` has called this too (the n-th call meets the n-th):
    the other ranks wait on the process group's store, where no collective timeout runs, while
    ``src`` works alone (a broadcast's value, rank 0's checkpoint and metric files between epochs).
    With one rank, at once."""
    if not active():
        return
    key = f"dygsched/arrived/{next(_arrivals)}"
    store = dist.distributed_c10d._get_default_store()
    if rank() == src:
        store.set(key, "1")
    else:
        store.wait([key], SOLO_WORK_LIMIT)


def all_gather_object(value: Any) -> list[Any]:
    """Every rank's ``value``, in rank order, on every rank."""
    if not active():
        return [value]
    gathered: list[Any] = [None] * world_size()
    dist.all_gather_object(gathered, value)
    return gathered


def gather_object(value: Any, dst: int = 0) -> list[Any] | None:
    """Every rank's ``value``, in rank order, on rank ``dst``; None on the other ranks."""
    if not active():
        return [value]
    gathered: list[Any] | None = [None] * world_size() if rank() == dst else None
    dist.gather_object(value, gathered, dst=dst)
    return gathered


def barrier() -> None:
    """Wait until every rank has reached this point."""
    if active():
        dist.barrier()
