"""What every strategy's price shares: the target it is priced for, the prediction it gives, and the
terms every optimizer step pays (the wait for the slowest rank, the bucketed gradient all-reduce,
the optimizer's own step).

A ``Prediction`` is in the units of a run: an epoch's seconds as ``epoch_time_s`` of the run's
summary (the training epoch, evaluation left out), the peak memory per rank as the run measures it
(the GPU allocator's peak on a GPU, the process's peak resident set on a CPU), and the bytes per
epoch of each kind the strategy's own code counts (``comm_bytes_per_epoch``, summed over ranks).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from dygsched.advise.hardware import ComputeScale, LinkProfile
from dygsched.advise.profile import Profile

# What a GPU pays per kernel it launches, when seconds measured on a CPU are scaled to a GPU: the
# floor of a step that launches many small kernels (an assumption, stated with every such figure).
LAUNCH_S = 5e-6
GRADIENT_BUCKET_BYTES = 25 * 2**20  # grad_sync.bucket_mb's default


def rank_threads_here(local_ranks: int, cores: int) -> int:
    """The threads the worker gives each of ``local_ranks`` ranks of a machine of ``cores`` cores
    (``dygsched.engine.distributed.rank_threads``: the cores shared, or ``OMP_NUM_THREADS``)."""
    from dygsched.engine.distributed import rank_threads

    return rank_threads(local_ranks, cores, cores, os.environ.get("OMP_NUM_THREADS"))


@dataclass(frozen=True)
class Target:
    """What the predictions are for: ``gpus`` ranks over ``nodes`` machines joined by ``link``, the
    profiled device's seconds scaled by ``scale``, ``memory_bytes`` per rank. Where the ranks are
    CPU processes (the profiled device is a CPU and no GPU is named), the ranks of a machine share
    its ``cores``: each runs on ``cores // ranks`` threads, and more ranks than cores take turns."""

    gpus: int
    nodes: int
    link: LinkProfile
    scale: ComputeScale
    memory_bytes: int
    cpu_ranks: bool  # the ranks are CPU processes of machines like the profiled one
    cores: int
    gpu_name: str = ""  # the target GPU's name ("" when it is the profiled device)

    @property
    def ranks_per_node(self) -> int:
        return math.ceil(self.gpus / max(1, self.nodes))

    @property
    def threads(self) -> int:
        """The CPU threads a rank runs with, by the worker's own rule (``rank_threads``: the node's
        cores shared among its ranks, or ``OMP_NUM_THREADS`` where it is set)."""
        return rank_threads_here(self.ranks_per_node if self.cpu_ranks else 1, self.cores)

    @property
    def oversubscribed(self) -> float:
        """How many ranks share each core (1 when every rank has its own)."""
        return max(1.0, self.ranks_per_node / self.cores) if self.cpu_ranks else 1.0

    @property
    def launch_floor(self) -> bool:
        """Whether a scaled step is floored by its kernels' launches (a CPU profile priced for a GPU)."""
        return not self.cpu_ranks and self.scale.factor != 1.0 and "CPU" in self.scale.source

    def compute(self, seconds: float, kernels: float | None = None) -> float:
        """The profiled device's ``seconds`` on this target's ranks."""
        scaled = seconds * self.scale.factor * self.oversubscribed
        if self.launch_floor and kernels:
            scaled = max(scaled, kernels * LAUNCH_S)
        return scaled


@dataclass(frozen=True)
class Prediction:
    """One strategy on one GPU count (see the module docstring). ``epoch_time_s`` is ``None`` when
    the strategy cannot run there (``reason`` says why); ``compute_s``, ``communication_s`` (the
    part of the epoch spent waiting on transfers, after any overlap) and ``overhead_s`` (optimizer
    steps) add up to it."""

    strategy: str
    family: str
    gpus: int
    epoch_time_s: float | None
    compute_s: float = math.nan
    communication_s: float = math.nan
    overhead_s: float = math.nan
    steps: int = 0
    peak_memory_bytes: float | None = None
    traffic: Mapping[str, float] = field(default_factory=dict)
    training: str = ""
    exact: bool = True
    reason: str = ""
    terms: str = ""

    @property
    def runs(self) -> bool:
        return self.epoch_time_s is not None

    @property
    def traffic_bytes(self) -> float:
        return float(sum(self.traffic.values()))


def refused(strategy: str, family: str, gpus: int, reason: str, training: str = "", exact: bool = True) -> Prediction:
    return Prediction(strategy, family, gpus, None, reason=reason, training=training, exact=exact)


def gradient_buckets(parameter_bytes: int, bucket_bytes: int = GRADIENT_BUCKET_BYTES) -> int:
    return max(1, math.ceil(parameter_bytes / bucket_bytes))


@dataclass(frozen=True)
class StepCost:
    """What one optimizer step pays besides its compute: the optimizer (``optimizer_s``), the wait
    for every rank to be ready (``ready_s``, a one-value all-reduce) and the gradients' all-reduce."""

    optimizer_s: float
    ready_s: float
    allreduce_s: float
    allreduce_bytes: float  # per rank

    @property
    def communication_s(self) -> float:
        return self.ready_s + self.allreduce_s

    @property
    def total_s(self) -> float:
        return self.optimizer_s + self.communication_s


def step_cost(profile: Profile, target: Target, stale: bool = False) -> StepCost:
    """One optimizer step's terms on ``target`` (``stale``: Sven's one-step-stale all-reduce, which
    the worker still waits for, one step later)."""
    ranks = target.gpus
    optimizer = target.compute(profile.step_s(target.threads))
    if ranks <= 1:
        return StepCost(optimizer, 0.0, 0.0, 0.0)
    link = target.link
    ready = link.all_reduce_s(8.0, ranks)
    allreduce = link.all_reduce_s(profile.parameter_bytes, ranks, gradient_buckets(profile.parameter_bytes))
    del stale  # the stale all-reduce moves the same bytes; what it hides is the strategy's to say
    return StepCost(optimizer, ready, allreduce, float(profile.parameter_bytes))


def exposed(communication: float, overlappable: float) -> float:
    """What of ``communication`` is left once it overlaps ``overlappable`` seconds of compute."""
    return max(0.0, communication - overlappable)


# What each strategy changes in training, in words (the table's ``training`` column).
EXACT = "exact: the steps one process takes on the same units"
LARGER_STEPS = "exact per step; {capacity} groups per rank and step: fewer, larger optimizer steps than PSG"
DECAYED = "decayed history: the older snapshots of a window on a shrinking share of each rank's nodes (not exact)"
SAMPLED = "sampled neighbourhoods (GraphSAGE fan-outs {fanouts}); any partition trains the same losses"
STALE = "stale gradients: each step applies the previous step's summed gradients (not exact)"
GLOBAL_BATCH = "exact against one process with the global batch of {batch} x ranks events"
