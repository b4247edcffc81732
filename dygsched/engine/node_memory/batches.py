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
class Series:
    """The vertices whose state a rank's batch reads: ``vertices`` at ``times`` (roots first), and,
    where a backend prepared it ahead, their redundancy-free organisation."""

    vertices: torch.Tensor
    times: torch.Tensor
    organised: RedundancyFree | None = None


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
