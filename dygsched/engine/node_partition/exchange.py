"""The halo exchange: each rank's halo rows from their owners, and their gradients back.

``exchange_halo(x, snapshot, accounting)`` sends every peer the rows of ``x`` (this rank's owned
rows) that the peer's halo needs and receives this rank's halo rows, with one
``torch.distributed.all_to_all_single`` (uneven and zero splits: it works on gloo). It is an
autograd function: in the backward, the halo rows' gradients travel back by the reverse exchange
and are added into the owned rows that were sent. Every rank must exchange the same layers of the
same snapshots in the same order (they do: every rank runs the same model on the same window).

``PartitionedOps`` is what a model's ``spatial_partitioned`` calls (``dygsched.models.partitioned``): the
exchange, the owned rows of a layer's output, and a differentiable sum over ranks (batch norm's
statistics).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from dygsched.engine import comm
from dygsched.engine.node_partition.layout import PartitionedSnapshot
from dygsched.engine.timing import Region, Tally


@dataclass
class HaloAccounting:
    """Halo bytes by layer and direction, and the seconds spent in exchanges (those of the
    backward's reverse exchanges among them): timed regions of finished work
    (``dygsched.engine.timing``), read when ``seconds`` or ``backward_seconds`` is."""

    forward_bytes: dict[int, int] = field(default_factory=dict)
    backward_bytes: dict[int, int] = field(default_factory=dict)
    timings: Tally = field(default_factory=Tally)

    def add(self, layer: int, direction: str, count: int) -> None:
        book = self.forward_bytes if direction == "forward" else self.backward_bytes
        book[layer] = book.get(layer, 0) + int(count)

    def add_time(self, region: Region, backward: bool = False) -> None:
        self.timings.add("exchange", region)
        if backward:
            self.timings.add("backward", region)

    @property
    def seconds(self) -> float:
        return self.timings.seconds("exchange")

    @property
    def backward_seconds(self) -> float:
        return self.timings.seconds("backward")

    @property
    def total_bytes(self) -> int:
        return sum(self.forward_bytes.values()) + sum(self.backward_bytes.values())


def _all_to_all(send: torch.Tensor, send_counts: tuple[int, ...], recv_counts: tuple[int, ...]) -> torch.Tensor:
    return comm.all_to_all(send, send_counts, recv_counts)


def all_to_all_later(send: torch.Tensor, send_counts: Sequence[int], recv_counts: Sequence[int]) -> Callable[[], torch.Tensor]:
    """``_all_to_all`` started asynchronously (no gradient): returns the wait that gives the received rows."""
    return comm.all_to_all_async(send, send_counts, recv_counts).wait


class _HaloExchange(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, snapshot: PartitionedSnapshot, layer: int, accounting: HaloAccounting | None
    ) -> torch.Tensor:
        ctx.snapshot, ctx.layer, ctx.accounting, ctx.rows, ctx.device = snapshot, layer, accounting, x.shape[0], x.device
        exchanging = Region(x.device)
        send = x.index_select(0, snapshot.send_index.to(x.device))
        halo = _all_to_all(send, snapshot.send_counts, snapshot.recv_counts)
        if accounting is not None:
            accounting.add_time(exchanging.stop())
            accounting.add(layer, "forward", send.numel() * send.element_size())
        return halo

    @staticmethod
    def backward(ctx: Any, grad_halo: torch.Tensor) -> tuple[Any, ...]:
        snapshot, accounting = ctx.snapshot, ctx.accounting
        exchanging = Region(grad_halo.device)
        grad_sent = _all_to_all(grad_halo.contiguous(), snapshot.recv_counts, snapshot.send_counts)
        grad_x = grad_halo.new_zeros((ctx.rows, *grad_halo.shape[1:]))
        grad_x.index_add_(0, snapshot.send_index.to(grad_halo.device), grad_sent)
        if accounting is not None:
            accounting.add_time(exchanging.stop(), backward=True)
            accounting.add(ctx.layer, "backward", grad_halo.numel() * grad_halo.element_size())
        return grad_x.to(ctx.device), None, None, None


@dataclass
class PendingHalo:
    """A halo exchange posted and not yet waited for: ``wait()`` gives ``x``'s rows followed by the halo rows."""

    x: torch.Tensor
    received: torch.Tensor
    work: Any
    accounting: HaloAccounting | None
    waited: Region | None = None  # the wait, once waited

    def wait(self) -> torch.Tensor:
        """The rows, once the exchange has completed; what is timed is the wait (the exchange's part
        not overlapped): on CUDA the region's stream waits for the collective's, not the device."""
        waiting = Region(self.x.device).stop_after(self.work)
        if self.accounting is not None:
            self.accounting.add_time(waiting)
        self.waited = waiting
        return torch.cat([self.x, self.received.to(self.x.device)])


class _HaloPost(torch.autograd.Function):
    """The forward exchange posted asynchronously (``PendingHalo.wait`` before reading it); the
    backward is the same reverse exchange as ``_HaloExchange``'s."""

    @staticmethod
    def forward(
        ctx: Any,
        x: torch.Tensor,
        snapshot: PartitionedSnapshot,
        layer: int,
        accounting: HaloAccounting | None,
        box: list[comm.Pending],
    ) -> torch.Tensor:
        ctx.snapshot, ctx.layer, ctx.accounting, ctx.rows, ctx.device = snapshot, layer, accounting, x.shape[0], x.device
        posting = Region(x.device)
        send = x.index_select(0, snapshot.send_index.to(x.device))
        pending = comm.all_to_all_async(send, snapshot.send_counts, snapshot.recv_counts)
        received = pending.result  # filled in by the time ``pending.wait()`` returns
        box.append(pending)  # the exchange to wait for (it keeps the buffers it reads alive)
        if accounting is not None:
            accounting.add_time(posting.stop())
            accounting.add(layer, "forward", send.numel() * send.element_size())
        return received

    @staticmethod
    def backward(ctx: Any, grad_halo: torch.Tensor) -> tuple[Any, ...]:
        return _HaloExchange.backward(ctx, grad_halo)[0], None, None, None, None


def post_halo(
    x: torch.Tensor, snapshot: PartitionedSnapshot, layer: int = 0, accounting: HaloAccounting | None = None
) -> PendingHalo:
    """Start ``exchange_halo`` without waiting for it (every rank must post its exchanges in the same order)."""
    if not comm.active():
        return PendingHalo(x, x.new_zeros((0, *x.shape[1:])), None, accounting)
    box: list[comm.Pending] = []
    received = _HaloPost.apply(x, snapshot, layer, accounting, box)
    return PendingHalo(x, received, box[0], accounting)


def exchange_halo(
    x: torch.Tensor, snapshot: PartitionedSnapshot, layer: int = 0, accounting: HaloAccounting | None = None
) -> torch.Tensor:
    """``x``'s owned rows followed by this rank's halo rows (``owned + halo`` rows in all)."""
    if not comm.active():
        return x
    return torch.cat([x, _HaloExchange.apply(x, snapshot, layer, accounting)])


class _SumOverRanks(torch.autograd.Function):
    """``y = sum_r x_r`` on every rank; every rank's loss reads ``y``, so ``dL/dx_r`` is the sum of
    every rank's ``dL/dy``: the backward is the same all-reduce."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return comm.all_reduce(x.clone())

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return comm.all_reduce(grad.clone())


def sum_over_ranks(x: torch.Tensor) -> torch.Tensor:
    """``x`` summed over ranks, differentiably (the backward sums the gradients the same way)."""
    if not comm.active():
        return x
    return _SumOverRanks.apply(x)


class LocalOps:
    """The same operations for a block of this rank's own nodes only: no halo, no collective."""

    def with_halo(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def owned(self, out: Any) -> Any:
        return out

    def sum_over_ranks(self, x: torch.Tensor) -> torch.Tensor:
        return x


LOCAL = LocalOps()


@dataclass
class PartitionedOps:
    """The partition operations a model layer's ``spatial_partitioned`` uses on one snapshot.

    ``features``: the snapshot's input features as the model holds them; their halo rows are held
    locally (``PartitionedSnapshot.halo_x``), so only what layers compute is exchanged.
    """

    snapshot: PartitionedSnapshot
    layer: int
    accounting: HaloAccounting | None = None
    features: torch.Tensor | None = None
    exchange: Callable[..., torch.Tensor] = exchange_halo

    def with_halo(self, x: torch.Tensor) -> torch.Tensor:
        if x is self.features:
            return torch.cat([x, self.snapshot.halo_x.to(x.device)])
        return self.exchange(x, self.snapshot, self.layer, self.accounting)

    def owned(self, out: Any) -> Any:
        """The owned rows of a layer output (a tensor over ``owned + halo`` rows, or a tuple of them)."""
        n = self.snapshot.num_owned
        if isinstance(out, tuple):
            return tuple(self.owned(part) for part in out)
        return out[:n]

    def sum_over_ranks(self, x: torch.Tensor) -> torch.Tensor:
        return sum_over_ranks(x)


@dataclass
class PrefetchedOps(PartitionedOps):
    """``PartitionedOps`` whose first exchange, of the layer's input, was posted ahead (``pending``)."""

    pending: PendingHalo | None = None
    waits: list[Region] = field(default_factory=list)  # the waits for the posted exchange (read later)

    def with_halo(self, x: torch.Tensor) -> torch.Tensor:
        if self.pending is not None and x is self.pending.x:
            rows = self.pending.wait()
            assert self.pending.waited is not None
            self.waits.append(self.pending.waited)
            self.pending = None
            return rows
        return super().with_halo(x)


class _RowExchange(torch.autograd.Function):
    """Rows to peers by ``all_to_all_single``; the backward sends their gradients back the same way."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, send_counts: tuple[int, ...], recv_counts: tuple[int, ...]) -> torch.Tensor:
        ctx.send_counts, ctx.recv_counts, ctx.device = send_counts, recv_counts, x.device
        return _all_to_all(x.contiguous(), send_counts, recv_counts).to(x.device)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        return _all_to_all(grad.contiguous(), ctx.recv_counts, ctx.send_counts).to(ctx.device), None, None


def exchange_rows(x: torch.Tensor, send_counts: Sequence[int], recv_counts: Sequence[int]) -> torch.Tensor:
    """Send ``x``'s rows to the peers (``send_counts[q]`` rows to rank ``q``, in rank order) and receive
    ``recv_counts[q]`` rows from each; differentiable. With one rank the rows stay."""
    if not comm.active():
        return x
    return _RowExchange.apply(x, tuple(int(c) for c in send_counts), tuple(int(c) for c in recv_counts))


def exchange_counts(send_counts: Sequence[int]) -> list[int]:
    """How many rows each peer will send here, given how many this rank sends each (one all-to-all of
    counts, host integers: through gloo under a device-keyed backend, read once)."""
    return comm.exchange_counts(send_counts)
