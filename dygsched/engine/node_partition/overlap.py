"""Overlapping halo exchanges with computation (FlareDTDG section 3.4).

Run one layer at a time (``DGNN.unroll(layer_major=True)``), a window's spatial passes are
independent tasks: a full block's pass needs its halo rows (a communication task, then a
computation task), a decayed block's needs nothing from other ranks. ``OverlapSchedule`` posts
every full block's exchange asynchronously, in an order all ranks share, computes the decayed
blocks while they travel, then waits for and aggregates each full block in that order:

* ``rr``: full blocks in time order (round-robin, the authors' code);
* ``mlp``: the paper's "early-ready, short-comm": tasks sorted by (predicted ready time,
  predicted communication time), predicted by a small MLP on task features (task type, log rows,
  width, log edges, log halo bytes) fitted at each epoch's start on the timings of the epoch
  before (round-robin in the first epoch). Within one layer every input is ready at once, so the
  order is by predicted communication time. The features describe the whole snapshot, the same on
  every rank, and rank 0 fits the MLP and sends it to all, so every rank posts in the same order.

Communication time recorded with overlap is what is *not* overlapped: posting and waiting.
On a GPU the exchange's copies run on their own stream (the collective's); a wait makes the
computing stream wait for that stream's event (never the device), and the tasks' times are
CUDA-event regions read when the epoch's log is gathered (``dygsched.engine.timing``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from dygsched.engine import comm
from dygsched.engine.timing import Region

OVERLAPS = ("none", "rr", "mlp")
FEATURES = 6  # full one-hot, decayed one-hot, log rows, width, log edges, log halo bytes


def task_features(full: bool, rows: int, width: int, edges: int, halo_bytes: int) -> list[float]:
    return [1.0 if full else 0.0, 0.0 if full else 1.0, math.log1p(rows), float(width), math.log1p(edges), math.log1p(halo_bytes)]


class TaskTimePredictor(nn.Module):
    """A small MLP from task features to (communication, computation) seconds, fitted by least squares on log-time."""

    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, 2))
        self.register_buffer("scale", torch.ones(FEATURES))
        self.fitted = False

    def fit(self, features: torch.Tensor, seconds: torch.Tensor, steps: int = 300, seed: int = 0) -> float:
        """Fit on ``features [n, FEATURES]`` and ``seconds [n, 2]``; returns the final mean squared error (log-seconds)."""
        generator = torch.Generator().manual_seed(seed)
        for module in self.net:
            if isinstance(module, nn.Linear):
                bound = 1.0 / math.sqrt(module.in_features)
                with torch.no_grad():
                    module.weight.uniform_(-bound, bound, generator=generator)
                    module.bias.uniform_(-bound, bound, generator=generator)
        self.scale = features.abs().amax(dim=0).clamp(min=1e-6)
        target = torch.log(seconds.clamp(min=1e-7))
        optimizer = torch.optim.Adam(self.net.parameters(), lr=0.02)
        loss = torch.tensor(0.0)
        with torch.enable_grad():
            for _ in range(steps):
                optimizer.zero_grad()
                loss = ((self.net(features / self.scale) - target) ** 2).mean()
                loss.backward()
                optimizer.step()
        self.fitted = True
        return float(loss.detach())

    @torch.no_grad()
    def predict(self, features: torch.Tensor) -> torch.Tensor:
        return torch.exp(self.net(features / self.scale))


Timing = float | Region  # seconds, or a timed region read when the log is


def _read(value: Timing) -> float:
    return value.seconds if isinstance(value, Region) else float(value)


@dataclass
class TaskLog:
    """What a rank measured of its tasks in one epoch: features, communication and computation
    seconds. Timed regions are read when ``seconds`` is (the log is gathered at the next epoch's start)."""

    features: list[list[float]] = field(default_factory=list)
    timings: list[tuple[tuple[Timing, ...], Timing, bool]] = field(
        default_factory=list
    )  # (waits, timed, timed is the whole task)

    def add(self, features: list[float], comm_s: Timing, compute_s: Timing) -> None:
        self.features.append(features)
        self.timings.append(((comm_s,), compute_s, False))

    def add_overlapped(self, features: list[float], waits: Sequence[Timing], whole: Timing) -> None:
        """A task that waited ``waits`` for its halo inside ``whole``: its computation is the rest."""
        self.features.append(features)
        self.timings.append((tuple(waits), whole, True))

    @property
    def seconds(self) -> list[list[float]]:
        """``[communication, computation]`` seconds per task."""
        rows = []
        for waits, timed, whole in self.timings:
            comm = sum(_read(w) for w in waits)
            rows.append([comm, max(_read(timed) - comm, 0.0) if whole else _read(timed)])
        return rows


class OverlapSchedule:
    """Which order a layer's full blocks exchange and aggregate in (see the module docstring)."""

    def __init__(self, mode: str) -> None:
        if mode not in OVERLAPS or mode == "none":
            raise ValueError(f"an overlap schedule is rr or mlp, got {mode!r}")
        self.mode = mode
        self.predictor = TaskTimePredictor()
        self.log = TaskLog()

    def order(self, tasks: list[tuple[int, list[float]]]) -> list[int]:
        """The full blocks' positions ``t`` (with their features) in the order to post and aggregate."""
        if self.mode == "rr" or not self.predictor.fitted or not tasks:
            return [t for t, _ in tasks]
        predicted = self.predictor.predict(torch.tensor([f for _, f in tasks], dtype=torch.float32))
        ready = [0.0] * len(tasks)  # within one layer every input is ready when the layer starts
        keys = sorted(range(len(tasks)), key=lambda i: (ready[i], float(predicted[i, 0]), tasks[i][0]))
        return [tasks[i][0] for i in keys]

    def refit(self, seed: int) -> float | None:
        """At an epoch's start: rank 0 fits the predictor on every rank's timings of the epoch before and
        sends it to every rank. Returns the fit's error on rank 0 (``None`` before any timing)."""
        gathered = comm.all_gather_object((self.log.features, self.log.seconds))
        self.log = TaskLog()
        features = [f for part, _ in gathered for f in part]
        seconds = [s for _, part in gathered for s in part]
        error = None
        if self.mode == "mlp" and features:
            if comm.rank() == 0:
                error = self.predictor.fit(torch.tensor(features), torch.tensor(seconds), seed=seed)
            if comm.active():
                self.predictor.load_state_dict(comm.broadcast_object(self.predictor.state_dict() if comm.rank() == 0 else None))
                self.predictor.fitted = True
        return error
