"""A simulated DistDy cluster: ``K`` stores on a network of a given bandwidth, priced from counts.

Two CPU ranks train here; the paper's clusters have 4-16 servers on 1-100 Gbps links. What a
partition changes is how many feature rows cross the network and how the sampled work spreads
over the servers. Both are counts: ``step_counts`` computes them exactly as the strategy does (the
same targets, the same keyed samples, the same placements) for any ``K``, without training; a test
checks them against what two training ranks measure.

``simulate_step`` prices one mini-batch, bulk-synchronously (each phase lasts as long as its
slowest rank, as the strategy's collectives make it):

* feature fetch: the largest of any rank's bytes in or out, over the bandwidth;
* structural encoders, forward and backward: ``ComputeCost`` (seconds per sampled message, per
  layer output row, per target; ``calibrate`` measures them on this machine with the real model);
* embeddings to the targets' ranks and their gradients back: bytes over the bandwidth, twice;
* the temporal model and loss on each rank's targets;
* the gradient all-reduce: a ring moves ``2 (K - 1) / K`` of the parameters' bytes per rank.

Every message also pays ``latency_s``. The model leaves out what the strategy does not scale with
``K`` (sampling on the host, Python) and overlaps nothing; it is a yardstick for comparing
partitions, not a prediction of a real cluster's seconds.

Compute costs come from a device profile (``compute_cost``): ``cpu`` calibrates them on this machine
with the real model, which makes compute dominate an epoch; the paper's clusters train on GPUs
(1080 Ti, V100), where fetching features dominates (up to 80% of an epoch, its section 1). Without a
GPU to measure, ``gpu_cost`` prices the same work from a GPU's datasheet figures (``GPUS``): a
sampled message reads a source row and adds it into its target (forward, twice that backward) at a
share of the memory bandwidth, an output row multiplies its two inputs by the layer's weights (three
products forward and backward) at a share of the peak FP32 rate, and every snapshot's encoder and
the temporal model pay kernel launches. The shares are the usual ones for sparse gathers and small
dense products on these cards; docs/distdy.md gives the arithmetic.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch

from dygsched.data.partition.snapshot_graph import SnapshotPartition
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.engine.distdy.sampler import InNeighbours, sample_key, sample_neighbourhood, step_targets
from dygsched.errors import ConfigError

if TYPE_CHECKING:
    from dygsched.models.sage_temporal import SampledModel


@dataclass(frozen=True)
class StepCounts:
    """What one mini-batch does on each of ``K`` ranks."""

    fetch_rows: np.ndarray  # [K, K]: feature rows rank k reads from store q (the diagonal: its own)
    embedding_rows: np.ndarray  # [K, K]: structural embeddings rank k sends to rank q (the diagonal: kept)
    messages: np.ndarray  # [K]: sampled messages rank k's encoders compute, all layers
    layer_rows: np.ndarray  # [K]: output rows of rank k's encoder layers, all layers
    targets: np.ndarray  # [K]: targets whose temporal model and loss rank k runs

    def remote_fetch_rows(self) -> np.ndarray:
        return self.fetch_rows - np.diag(np.diag(self.fetch_rows))


def step_counts(
    neighbours: Sequence[InNeighbours],
    placements: Sequence[SnapshotPartition],
    stores: int,
    targets: np.ndarray,
    window: Sequence[int],
    fanouts: Sequence[int],
    key: Callable[[int], int],
) -> StepCounts:
    """The counts of one mini-batch on snapshots ``window`` (oldest first): in snapshot ``t`` the rank
    holding a target samples its neighbourhood (``key(t)``) and reads every node of it from the store
    holding it; the embeddings go to the rank holding the target in the newest snapshot."""
    fetch = np.zeros((stores, stores), dtype=np.int64)
    embedding = np.zeros((stores, stores), dtype=np.int64)
    messages, rows = np.zeros(stores, dtype=np.int64), np.zeros(stores, dtype=np.int64)
    home = placements[window[-1]].store[targets]
    for t in window:
        owner = placements[t].store
        for k in range(stores):
            mine = targets[owner[targets] == k]
            hood = sample_neighbourhood(neighbours[t], mine, fanouts, key(t))
            fetch[k] += np.bincount(owner[hood.nodes], minlength=stores)
            messages[k] += sum(block.edge_index.shape[1] for block in hood.blocks)
            rows[k] += sum(block.num_dst for block in hood.blocks)
            embedding[k] += np.bincount(home[owner[targets] == k], minlength=stores)
    return StepCounts(fetch, embedding, messages, rows, np.bincount(home, minlength=stores))


def epoch_counts(
    graph: TemporalGraph,
    placements: Sequence[SnapshotPartition],
    stores: int,
    training: np.ndarray,
    window: int,
    batch: int,
    batches_per_step: int,
    fanouts: Sequence[int],
    seed: int,
    epoch: int = 0,
    neighbours: Sequence[InNeighbours] | None = None,
) -> list[StepCounts]:
    """``step_counts`` of every mini-batch of epoch ``epoch`` (``sched.loop=epochs``: every window in order),
    with the strategy's targets and sampler keys. ``neighbours``: the snapshots' ``InNeighbours``, when
    the caller counts several placements of one graph (built here otherwise)."""
    if neighbours is None:
        neighbours = [InNeighbours.of(s.edge_index.numpy(), graph.num_nodes) for s in graph.snapshots]
    out = []
    for tau in range(window - 1, graph.num_snapshots):
        present = graph.snapshots[tau].node_mask.numpy()
        for b in range(batches_per_step):
            targets = step_targets(present, training, batch, seed, epoch, tau, b)
            key = lambda t, tau=tau, b=b: sample_key(seed, epoch, tau, b, t)  # noqa: E731
            out.append(step_counts(neighbours, placements, stores, targets, range(tau - window + 1, tau + 1), fanouts, key))
    return out


@dataclass(frozen=True)
class ComputeCost:
    """Seconds of forward and backward work: per sampled message, per encoder output row, per target
    (temporal model and loss), and per step and rank."""

    per_message: float
    per_row: float
    per_target: float
    per_step: float


@dataclass(frozen=True)
class Network:
    gbps: float
    latency_s: float = 0.0

    @property
    def bytes_per_s(self) -> float:
        return self.gbps * 1e9 / 8


def simulate_step(
    counts: StepCounts, cost: ComputeCost, network: Network, row_bytes: int, embedding_bytes: int, parameter_bytes: int
) -> dict[str, float]:
    """Seconds of one simulated mini-batch, by phase (see the module docstring)."""
    stores = counts.targets.size
    remote = counts.remote_fetch_rows()
    fetch_in, fetch_out = remote.sum(axis=1) * row_bytes, remote.sum(axis=0) * row_bytes
    emb = counts.embedding_rows - np.diag(np.diag(counts.embedding_rows))
    emb_in, emb_out = emb.sum(axis=0) * embedding_bytes, emb.sum(axis=1) * embedding_bytes
    peers = stores - 1
    latency = network.latency_s * peers
    encode = cost.per_message * counts.messages + cost.per_row * counts.layer_rows
    return {
        "fetch_s": float(np.maximum(fetch_in, fetch_out).max() / network.bytes_per_s) + 2 * latency if peers else 0.0,
        "encode_s": float(encode.max()),
        "embedding_s": 2 * (float(np.maximum(emb_in, emb_out).max() / network.bytes_per_s) + latency) if peers else 0.0,
        "temporal_s": float((cost.per_target * counts.targets).max()) + cost.per_step,
        "allreduce_s": (2 * peers / stores * parameter_bytes / network.bytes_per_s + 2 * latency) if peers else 0.0,
    }


def simulate_epoch(
    counts: Sequence[StepCounts], cost: ComputeCost, network: Network, row_bytes: int, embedding_bytes: int, parameter_bytes: int
) -> dict[str, float]:
    """Seconds of a simulated epoch by phase (the sum over its mini-batches) and in total (``epoch_s``)."""
    phases: dict[str, float] = {}
    for step in counts:
        for phase, seconds in simulate_step(step, cost, network, row_bytes, embedding_bytes, parameter_bytes).items():
            phases[phase] = phases.get(phase, 0.0) + seconds
    phases["epoch_s"] = sum(phases.values())
    return phases


@dataclass(frozen=True)
class GPU:
    """What ``gpu_cost`` needs of a card: peak FP32 rate, memory bandwidth, and the seconds one kernel
    launch costs."""

    tflops: float
    memory_gbps: float  # GB/s
    launch_s: float = 8e-6


# Datasheet figures of the paper's cards: cluster 1's GTX 1080 Ti, cluster 2's V100 (SXM2).
GPUS = {"1080ti": GPU(tflops=11.3, memory_gbps=484.0), "v100": GPU(tflops=15.7, memory_gbps=900.0)}
DEVICE_PROFILES = ("cpu", *GPUS)
MEMORY_SHARE = 0.3  # of the bandwidth a scattered row gather and scatter-add reaches
FLOP_SHARE = 0.25  # of the peak rate small dense products reach
KERNELS_PER_LAYER = (
    24  # launches of one sampled SAGE layer, forward and backward (gathers, scatter, two products, bias, activation)
)
KERNELS_TEMPORAL = 40  # the temporal model, the loss, their backward and the optimiser's step


def gpu_cost(gpu: GPU, widths: Sequence[int], window: int, temporal_width: int) -> ComputeCost:
    """``ComputeCost`` of a sampled GraphSAGE encoder with layer widths ``widths`` (input first) and a
    linear temporal model over ``window`` embeddings of ``temporal_width``, priced on ``gpu``. A message
    of the widest input moves ``3 x 2`` rows of 4 bytes (read and add, forward and twice backward); an
    output row takes ``2 x 3`` products of ``in x out`` multiply-adds (self and neighbour weights,
    forward and two backward)."""
    widest = max(widths[:-1])
    bandwidth = gpu.memory_gbps * 1e9 * MEMORY_SHARE
    rate = gpu.tflops * 1e12 * FLOP_SHARE
    per_message = 6 * widest * 4 / bandwidth
    layers = list(zip(widths[:-1], widths[1:]))
    per_row = max(2 * 3 * 2 * i * o for i, o in layers) / rate
    per_target = 3 * 2 * window * temporal_width / rate + 6 * window * temporal_width * 4 / bandwidth
    per_step = gpu.launch_s * (window * len(layers) * KERNELS_PER_LAYER + KERNELS_TEMPORAL)
    return ComputeCost(per_message, per_row, per_target, per_step)


def compute_cost(
    profile: str, model: torch.nn.Module, neighbours: Sequence[InNeighbours], x: torch.Tensor, fanouts: Sequence[int], window: int
) -> ComputeCost:
    """The ``ComputeCost`` of ``profile``: ``cpu`` calibrated here, or a card of ``GPUS``."""
    sampled = cast("SampledModel", model)  # DistDy's model, a SAGETemporal
    if profile == "cpu":
        return calibrate(sampled, neighbours, x, fanouts, window)
    if profile not in GPUS:
        raise ConfigError(f"unknown device profile '{profile}' (known: {', '.join(DEVICE_PROFILES)})")
    widths = [int(x.shape[1]), *(int(cast(Any, conv).out_channels) for conv in sampled.convs)]  # SAGEConvs
    return gpu_cost(GPUS[profile], widths, window, int(sampled.hidden_channels))


def calibrate(
    model: SampledModel,
    neighbours: Sequence[InNeighbours],
    x: torch.Tensor,
    fanouts: Sequence[int],
    window: int,
    repeats: int = 3,
) -> ComputeCost:
    """``ComputeCost`` measured on this machine: the model's encoder, forward and backward, on sampled
    neighbourhoods of 1/16 to all of 256 targets (least squares on messages and rows), and its
    temporal model and loss on as many targets."""
    rng = np.random.default_rng(0)
    present = np.flatnonzero(np.diff(neighbours[0].indptr) > 0)
    samples, seconds = [], []
    for size in (16, 32, 64, 128, 256):
        targets = rng.choice(present, size=min(size, present.size), replace=False)
        hood = sample_neighbourhood(neighbours[0], targets, fanouts, size)
        blocks = [(torch.from_numpy(b.edge_index), b.num_dst) for b in hood.blocks]
        rows = x[torch.from_numpy(hood.nodes)]
        times = []
        for _ in range(repeats + 1):
            model.zero_grad()
            start = time.perf_counter()
            model.encode(rows, blocks).sum().backward()
            times.append(time.perf_counter() - start)
        samples.append((sum(b.edge_index.shape[1] for b in hood.blocks), sum(b.num_dst for b in hood.blocks), 1.0))
        seconds.append(float(np.median(times[1:])))
    (per_message, per_row, _), *_ = np.linalg.lstsq(np.array(samples, dtype=float), np.array(seconds), rcond=None)
    temporal = []
    for size in (64, 512):
        grid = torch.randn(size, window, model.hidden_channels)
        times = []
        for _ in range(repeats + 1):
            model.zero_grad()
            start = time.perf_counter()
            model.predict(grid).pow(2).mean().backward()
            times.append(time.perf_counter() - start)
        temporal.append(float(np.median(times[1:])))
    per_target = max((temporal[1] - temporal[0]) / (512 - 64), 0.0)
    return ComputeCost(
        max(float(per_message), 0.0), max(float(per_row), 0.0), per_target, max(temporal[0] - 64 * per_target, 0.0)
    )
