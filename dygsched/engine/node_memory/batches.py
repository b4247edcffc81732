"""What one step of a node-memory strategy takes: a rank's slice of a global batch (``RankBatch``),
the vertices whose state it reads (``Series``) and its prepared inputs (``BatchInputs``)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from dygsched.data.event_batches import SampledNeighbours
from dygsched.engine.node_memory.organise import RedundancyFree


@dataclass(frozen=True)
class RankBatch:
    """This rank's slice ``[start, stop)`` of global batch ``index`` ``[global_start, global_stop)``,
    positions in its phase's events (``NodeMemoryStrategy.events_of`` maps them to the stream)."""

    phase: str
    index: int
    global_start: int
    global_stop: int
    start: int
    stop: int

    @property
    def events(self) -> int:
        return self.stop - self.start

    @property
    def global_events(self) -> int:
        return self.global_stop - self.global_start


@dataclass(frozen=True)
class DistinctPairs:
    """A series' distinct (state row, time) pairs, found on the host (``distinct_pairs``): the rows
    to read (``keys``, distinct), each pair's ``times``, its key (``key_of_pair``, into ``keys``) and
    each series row's pair (``inverse``). The device only gathers with them: finding distinct
    values there would make the host wait for the device to say how many there are."""

    keys: torch.Tensor
    times: torch.Tensor
    key_of_pair: torch.Tensor
    inverse: torch.Tensor

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return (self.keys, self.times, self.key_of_pair, self.inverse)

    def to(self, device: torch.device) -> DistinctPairs:
        """On ``device``; host-to-device copies that do not wait for the device's queue."""
        return DistinctPairs(*(t.to(device, non_blocking=True) for t in self.tensors()))


def distinct_pairs(keys: torch.Tensor, times: torch.Tensor) -> DistinctPairs:
    """The distinct pairs of host tensors ``keys`` (state rows) and ``times``, one int64 per pair."""
    distinct_times, time_index = torch.unique(times, return_inverse=True)
    span = max(int(distinct_times.numel()), 1)
    pairs, inverse = torch.unique(keys.long() * span + time_index, return_inverse=True)
    distinct_keys, key_of_pair = torch.unique(pairs // span, return_inverse=True)
    return DistinctPairs(distinct_keys, distinct_times[pairs % span], key_of_pair, inverse)


@dataclass(frozen=True)
class Series:
    """The vertices whose state a rank's batch reads: ``vertices`` at ``times`` (roots first), and,
    where a backend prepared it ahead, their redundancy-free organisation and the distinct pairs it
    reads (``pairs``, on the host, or already on the device when prefetched)."""

    vertices: torch.Tensor
    times: torch.Tensor
    organised: RedundancyFree | None = None
    pairs: DistinctPairs | None = None


@dataclass(frozen=True)
class BatchInputs:
    src: torch.Tensor
    dst: torch.Tensor
    times: torch.Tensor
    roots: torch.Tensor
    root_times: torch.Tensor
    neighbours: SampledNeighbours
    series: Series
    negative_sources: bool = False  # the roots end with the negatives' own sources (whole-edge samplers)
    extra_roots: int = 0  # task=node: rows embedded after the link roots (label rows: node_task.py)
