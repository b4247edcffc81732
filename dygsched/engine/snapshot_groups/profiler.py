"""Profiling epochs: time every unit of work by phase, on the code that trains.

A unit's time is split into host-to-device copy, spatial aggregation (the layers' message
passing, which includes their transformation matmuls: PyG's convolutions fuse the two), temporal
update (recurrent cells) and backward. ``TimedHooks`` times the spatial and temporal parts inside
the model's own layer loop (``DGNN.unroll``), around whatever hooks the executor runs anyway, so
the profile measures the training code itself. On GPU a phase is timed by CUDA events on the
stream that runs it (``dygsched.engine.timing``), read when the unit's profile is recorded, so a
boundary does not stop the device. What the samples become (medians, the
fitted cost model) is ``dygsched.planner.profile``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from dygsched.data.temporal_graph import Snapshot
from dygsched.engine.timing import Tally, timed
from dygsched.models.dgnn import DGNNLayer, State
from dygsched.models.hooks import PLAIN, DelegatingHooks, LayerHooks

PHASES = ("host_to_device", "spatial", "temporal", "backward")


@dataclass
class PhaseTimer:
    """Accumulates seconds per phase: each phase a timed region on the stream that runs it (the
    current stream unless given), read when ``seconds`` is (waiting for that work, not the device)."""

    device: torch.device
    tally: Tally = field(default_factory=Tally)

    @contextmanager
    def phase(self, name: str, stream: torch.cuda.Stream | None = None) -> Iterator[None]:
        if name not in PHASES:
            raise ValueError(f"unknown profiling phase {name!r}; phases: {', '.join(PHASES)}")
        with timed(self.device, stream) as region:
            yield
        self.tally.add(name, region)

    @property
    def seconds(self) -> dict[str, float]:
        return {name: self.tally.seconds(name) for name in PHASES}


class TimedHooks(DelegatingHooks):
    """``inner``'s layer hooks with their spatial and temporal parts timed into ``timer``."""

    def __init__(self, timer: PhaseTimer, inner: LayerHooks = PLAIN) -> None:
        super().__init__(inner)
        self.timer = timer

    def spatial(self, depth: int, t: int, layer: DGNNLayer, x: torch.Tensor, snapshot: Snapshot, state: State | None) -> Any:
        with self.timer.phase("spatial"):
            return self.inner.spatial(depth, t, layer, x, snapshot, state)

    def temporal(self, depth: int, t: int, layer: DGNNLayer, spatial_out: Any, state: State) -> tuple[torch.Tensor, State]:
        with self.timer.phase("temporal"):
            return self.inner.temporal(depth, t, layer, spatial_out, state)


@dataclass
class Profiler:
    """One rank's measurements: ``samples[unit] -> [phase seconds per profiling epoch]``.

    With REAL's reuse on, ``reusable[unit]`` also lists, per epoch, the seconds of the unit's
    part that another unit sharing its snapshots would not redo (its transfer and first-layer
    convolutions): the measured RATIO of REAL eq. 17 is ``reusable / total``.
    """

    samples: dict[int, list[dict[str, float]]] = field(default_factory=lambda: defaultdict(list))
    reusable: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    pairs: dict[tuple[int, int], list[float]] = field(default_factory=lambda: defaultdict(list))

    def record(self, unit: int, timer: PhaseTimer, reusable: float | None = None) -> None:
        self.samples[unit].append(dict(timer.seconds))
        if reusable is not None:
            self.reusable[unit].append(float(reusable))

    def record_pair(self, units: tuple[int, int], timer: PhaseTimer) -> None:
        """Two overlapping units trained as one merged chain (type II reuse): their total seconds."""
        self.pairs[units].append(sum(timer.seconds.values()))

    def measurements(self) -> dict[str, dict[Any, list[Any]]]:
        """Plain dictionaries, to gather on rank 0."""
        return {"samples": dict(self.samples), "reusable": dict(self.reusable), "pairs": dict(self.pairs)}
