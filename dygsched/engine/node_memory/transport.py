"""Node state moving between ranks: the row exchanges a memory backend makes, their bytes and their time.

Bytes are counted exactly per kind and per peer (``Traffic``): ``dispatch`` (state read from other
ranks), ``aggregate`` (writes sent to other ranks), their ``*_index`` (the vertex ids and keys that
go with them), and DepComm's ``dispatch_grad``; only in training steps (evaluation moves state
too, uncounted). Every exchange is a timed region of finished work (``dygsched.engine.timing``),
summed per step as ``exchange_s`` (inside ``comm_s``, not ``busy_s``): by the host clock where it
blocks the host (the counts, host rows, CUDA rows staged through the host under gloo), by CUDA
events where NCCL moves CUDA rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from dygsched.engine import comm
from dygsched.engine.node_partition.exchange import all_to_all_later, exchange_counts, exchange_rows
from dygsched.engine.strategy import IterationStats
from dygsched.engine.timing import HOST, Tally, timed


class Traffic:
    """Bytes this rank sent to and received from each peer, per kind (its own rows excluded)."""

    def __init__(self, rank: int, world_size: int) -> None:
        self.rank, self.world_size = rank, world_size
        self.sent: dict[str, np.ndarray] = {}
        self.received: dict[str, np.ndarray] = {}

    def record(
        self, kind: str, send_counts: Sequence[int], recv_counts: Sequence[int], row_bytes: int, stats: IterationStats | None
    ) -> None:
        sent = np.asarray(send_counts, dtype=np.int64) * row_bytes
        received = np.asarray(recv_counts, dtype=np.int64) * row_bytes
        sent[self.rank] = received[self.rank] = 0
        self.sent[kind] = self.sent.get(kind, np.zeros(self.world_size, np.int64)) + sent
        self.received[kind] = self.received.get(kind, np.zeros(self.world_size, np.int64)) + received
        if stats is not None:
            stats.add_bytes(kind, int(sent.sum() + received.sum()))

    def to_dict(self) -> dict[str, dict[str, list[int]]]:
        return {kind: {"sent": self.sent[kind].tolist(), "received": self.received[kind].tolist()} for kind in self.sent}


class Transport:
    """A rank's node-state exchanges: ``exchange`` (rows, differentiable), ``exchange_later`` (rows
    on their way, no gradient), ``counts`` and ``counts_together`` (how many rows each rank sends)."""

    def __init__(self, rank: int, world_size: int, device: torch.device) -> None:
        self.rank, self.world_size, self.device = rank, world_size, device
        self.traffic = Traffic(rank, world_size)
        self.counting = True  # traffic is counted in training steps, not in evaluation
        self._exchanges = Tally()  # this step's state exchanges (``exchanging``)

    def new_step(self) -> None:
        self._exchanges = Tally()

    def seconds(self) -> float:
        """This step's seconds in exchanges (read once the step's work is done)."""
        return self._exchanges.seconds("exchange")

    def rows_block_host(self) -> bool:
        """Whether this rank's row exchanges are host work (a CPU run, or CUDA rows staged through
        gloo) rather than NCCL's device work."""
        return self.device.type != "cuda" or not comm.cuda_through_nccl()

    @contextmanager
    def exchanging(self, on_host: bool | None = None) -> Iterator[None]:
        """Time spent moving state between ranks (``comm_s``, not ``busy_s``), read at the step's
        end: by the host clock for an exchange that blocks the host (``on_host``; by default, rows
        that do: ``rows_block_host``), else a device region of its finished work (CUDA events)."""
        host = self.rows_block_host() if on_host is None else on_host
        with timed(HOST if host else self.device) as region:
            yield
        self._exchanges.add("exchange", region)

    def exchange(
        self,
        rows: torch.Tensor,
        send_counts: Sequence[int],
        recv_counts: Sequence[int],
        kind: str | None,
        stats: IterationStats | None,
    ) -> torch.Tensor:
        """``exchange_rows`` with the bytes recorded under ``kind`` (None: not counted)."""
        if kind is not None:
            self.record(kind, rows, send_counts, recv_counts, stats)
        with self.exchanging(comm.blocks_host(rows)):
            return exchange_rows(rows, send_counts, recv_counts)

    def exchange_later(
        self, rows: torch.Tensor, send_counts: Sequence[int], recv_counts: Sequence[int], kind: str, stats: IterationStats | None
    ) -> Callable[[], torch.Tensor]:
        """Start sending ``rows`` (no gradient) and return the wait for what arrives; counted like ``exchange``."""
        self.record(kind, rows, send_counts, recv_counts, stats)
        if self.world_size == 1:
            return lambda: rows
        with self.exchanging(comm.blocks_host(rows)):
            return all_to_all_later(rows.detach(), send_counts, recv_counts)

    def record(
        self, kind: str, rows: torch.Tensor, send_counts: Sequence[int], recv_counts: Sequence[int], stats: IterationStats | None
    ) -> None:
        """Count an exchange of ``rows`` in training steps (evaluation moves state too, uncounted)."""
        if self.counting:
            width = int(np.prod(rows.shape[1:], dtype=np.int64)) * rows.element_size()
            self.traffic.record(kind, send_counts, recv_counts, width, stats)

    def counts(self, send_counts: list[int]) -> list[int]:
        with self.exchanging(on_host=True):  # host integers through gloo
            return exchange_counts(send_counts)

    def counts_together(self, send_counts: Sequence[Sequence[int]]) -> list[list[int]]:
        """``counts`` of several exchanges (``send_counts[k]``: exchange ``k``'s rows per rank) with one
        all-to-all of host integers, read once: a step's counts cost one round trip, not one per kind."""
        kinds, ranks = len(send_counts), self.world_size
        mine = torch.tensor([[int(counts[q]) for counts in send_counts] for q in range(ranks)], dtype=torch.int64).reshape(-1)
        with self.exchanging(on_host=True):
            arrived = comm.all_to_all(mine, [kinds] * ranks, [kinds] * ranks).reshape(ranks, kinds).tolist()
        return [[arrived[q][k] for q in range(ranks)] for k in range(kinds)]

    def traffic_by_pair(self) -> dict[str, Any]:
        """Every rank's traffic (a collective: every rank calls it)."""
        return {"ranks": comm.all_gather_object(self.traffic.to_dict())}
