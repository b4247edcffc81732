"""``sched=sven``: Sven's redundancy-free dispatch and aggregation over disjoint node state.

Each step a rank organises its series (Algorithm 2: unique vertices ``V_u``, restore index
``Psi``, last occurrences ``Phi``), asks each owner once for the rows of the unique vertices it
owns, expands the answer with ``Psi`` and runs the memory updater itself, so gradients stay local;
writes go to the owners deduplicated (each vertex's last occurrence). Traffic is
``[N1 (1 - eta1) + N2 (1 - eta2)]`` rows instead of DepComm's per-occurrence dispatch, and every
computed value is the same as the one-process reference. Ownership: ``sched.partition``
(``reflexbicut`` is the paper's Re-FlexBiCut).

The hierarchical pipeline (section 3.3), each part switchable for the breakdown:

* ``prefetch``: a helper thread samples, organises and routes the next batch while this one trains;
  on a GPU it also copies what the updater reads on the device (the series' distinct (row, time)
  pairs, found on the host, from page-locked memory) on a side CUDA stream, and the training stream
  waits for that copy's event only (``_on_side_stream``);
* ``micro_batches``: the rank's batch is cut into slices; the rows of slice ``k + 1`` are requested
  before slice ``k`` computes and arrive (an asynchronous all-to-all) while it does; gradients
  accumulate, the writes are aggregated once;
* ``staleness``: 1 makes each step apply the previous step's summed gradients (zeros at the first
  step), so the all-reduce overlaps the next step. This changes the training trajectory, so Sven
  is exact against the one-process reference only with ``staleness: 0``.

None of prefetch and micro-batching changes what is computed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import torch

from dygsched.engine.node_memory.batches import DistinctPairs, Series, distinct_pairs
from dygsched.engine.node_memory.config import SvenConfig
from dygsched.engine.node_memory.organise import organise
from dygsched.engine.node_memory.sharded import ShardedMemory
from dygsched.engine.strategy import IterationStats


class SvenMemory(ShardedMemory):
    """Redundancy-free dispatch: each owner asked once per unique vertex; the updater runs locally."""

    def __init__(self, config: SvenConfig) -> None:
        super().__init__(config)
        self.micro_batches = config.micro_batches
        self.prefetch = config.prefetch
        self.gradient_staleness = config.staleness
        self.exact = config.staleness == 0
        self._pending: dict[int, Callable[[], torch.Tensor]] = {}  # id(series.vertices) -> the rows on their way

    # ---- preparing batches ahead ------------------------------------------------------------------
    def prepare(self, series: Series) -> Series:
        organised = organise(series.vertices)  # and the distinct (row, time) pairs the updater reads, on the host
        return replace(series, organised=organised, pairs=distinct_pairs(organised.restore, series.times))

    def ahead(self, prepared: Iterator[Any]) -> Iterator[Any]:
        if not self.prefetch:
            return prepared
        return self._prefetched(prepared)

    def _prefetched(self, batches: Iterator[Any]) -> Iterator[Any]:
        if self.device.type != "cuda":
            with ThreadPoolExecutor(1, thread_name_prefix="sven-prefetch") as helper:
                ahead = helper.submit(next, batches, None)
                while (item := ahead.result()) is not None:
                    ahead = helper.submit(next, batches, None)
                    yield item
            return
        side = torch.cuda.Stream(self.device)
        consumer = torch.cuda.current_stream(self.device)
        with ThreadPoolExecutor(1, thread_name_prefix="sven-prefetch") as helper:
            ahead = helper.submit(self._on_side_stream, batches, side)
            while (staged := ahead.result()) is not None:
                ahead = helper.submit(self._on_side_stream, batches, side)
                item, copied, ready = staged
                consumer.wait_event(ready)  # this stream waits for the copy alone, never the device
                for tensor in copied:  # made on the side stream, used on this one
                    tensor.record_stream(consumer)
                yield item

    def _on_side_stream(
        self, batches: Iterator[Any], side: torch.cuda.Stream
    ) -> tuple[Any, list[torch.Tensor], torch.cuda.Event] | None:
        """The next prepared batch with its series' device inputs copied on ``side`` (helper thread):
        the batch, the copied tensors, and the event that marks the copies done."""
        item = next(batches, None)
        if item is None:
            return None
        batch, parts = item
        copied: list[torch.Tensor] = []

        def to_device(tensor: torch.Tensor) -> torch.Tensor:
            moved = tensor.pin_memory().to(self.device, non_blocking=True)
            copied.append(moved)
            return moved

        with torch.cuda.device(self.device), torch.cuda.stream(side):
            staged = []
            for part, inputs in parts:
                pairs = inputs.series.pairs
                assert pairs is not None  # prepare() found them
                series = replace(inputs.series, pairs=DistinctPairs(*(to_device(t) for t in pairs.tensors())))
                staged.append((part, replace(inputs, series=series)))
            ready = torch.cuda.Event()
            ready.record(side)
        return (batch, staged), copied, ready

    # ---- dispatch ---------------------------------------------------------------------------------
    def memory_of(
        self, series: Series, stats: IterationStats, upcoming: Series | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        rows = self._pending.pop(id(series.vertices), None) or self._fetch(series, stats)
        if upcoming is not None:  # its rows travel while this slice computes
            self._pending[id(upcoming.vertices)] = self._fetch(upcoming, stats)
        pairs = series.pairs
        assert pairs is not None  # prepare() finds them for every series this backend reads
        with self.transport.exchanging():
            unique_rows = rows()
        return self.memory_at(pairs.to(self.device), lambda index: self.table.unpack(unique_rows[index]))

    def _fetch(self, series: Series, stats: IterationStats) -> Callable[[], torch.Tensor]:
        """Ask the owners for the packed rows of the series' unique vertices; returns the wait for
        them (in ``unique`` order)."""
        organised = series.organised
        assert organised is not None
        order, send_counts = self.route(organised.unique)
        recv_counts = self.transport.counts(send_counts)
        asked = self.transport.exchange(organised.unique[order], send_counts, recv_counts, "dispatch_index", stats)
        answer = self.transport.exchange_later(
            self.table.pack(self.ownership.row[asked].to(self.device)), recv_counts, send_counts, "dispatch", stats
        )
        position = order.to(self.device)

        def arrived() -> torch.Tensor:
            answered = answer()
            unique_rows = torch.empty_like(answered)
            unique_rows[position] = answered
            return unique_rows

        return arrived
