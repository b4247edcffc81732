"""The price of DistDy: its own cluster model (``dygsched.engine.distdy.cluster``), fed with this profile.

For ``K`` ranks the snapshots are placed on ``K`` stores by the strategy itself (a DistDy strategy
set up as rank 0 of ``K``, outside any process group, places them as rank 0 would: its online
partitioner or the configured baseline), and ``epoch_counts`` counts what every mini-batch of an
epoch does on every rank, exactly as the strategy samples it: the feature rows each rank fetches
from each store, the embeddings it sends to their targets' ranks, the sampled messages and layer
rows its encoders compute, the targets whose temporal model it runs. ``simulate_epoch`` prices the
counts bulk-synchronously (each phase as long as its slowest rank) over the target's link. Its
compute costs (seconds per message, per layer row, per target and per step) are fitted here on the
profiled mini-batches on one rank, whose counts ``epoch_counts`` gives for one store, and scaled to
the target; the optimizer step and the wait for every rank are added per step. Memory: DistDy's peak
per step against the same counts, at the busiest rank's largest step.
"""

from __future__ import annotations

import numpy as np
import torch

from dygsched.advise.pricing import SAMPLED, Prediction, Target, refused, step_cost
from dygsched.advise.profile import Profile, fit_curve
from dygsched.advise.snapshot_groups import memory_of, peak_memory
from dygsched.data.temporal_graph import Task, TemporalGraph
from dygsched.engine.distdy import DistDyStrategy
from dygsched.engine.distdy.cluster import ComputeCost, Network, StepCounts, epoch_counts, simulate_epoch
from dygsched.engine.run_config import RunConfig
from dygsched.engine.strategy import Artifacts, RunContext


def virtual(strategy_sched: DistDyStrategy, graph: TemporalGraph, settings: RunConfig, stores: int) -> DistDyStrategy:
    """A copy of the strategy set up as rank 0 of ``stores`` ranks (no process group: it only places)."""
    copy = DistDyStrategy(strategy_sched.config)
    copy.setup(RunContext(graph, settings, 0, stores, torch.device("cpu"), Artifacts(None, True)))
    return copy


def counts_for(strategy: DistDyStrategy, graph: TemporalGraph, settings: RunConfig, stores: int) -> list[StepCounts]:
    """One epoch's mini-batches on ``stores`` stores, counted as the strategy trains them (``loop=epochs``)."""
    placed = virtual(strategy, graph, settings, stores)
    placed.place(graph.num_snapshots - 1)
    placements = placed.placements
    config = strategy.config
    return epoch_counts(
        graph,
        placements,
        stores,
        placed.train_nodes,
        settings.window,
        config.batch,
        config.batches_per_step,
        config.fanouts,
        settings.seed,
        neighbours=placed.neighbours,
    )


def step_features(counts: StepCounts, rank: int = 0) -> tuple[float, float, float]:
    """A mini-batch's (sampled messages, layer rows, targets) on ``rank``: what its compute grows with."""
    return float(counts.messages[rank]), float(counts.layer_rows[rank]), float(counts.targets[rank])


def compute_cost(profile: Profile, target: Target) -> ComputeCost:
    """The cluster model's compute costs, fitted on the profiled mini-batches and scaled to ``target``."""
    from dygsched.advise.cases import DISTDY

    samples = profile.of(DISTDY, target.threads)
    step = profile.step_s(target.threads)
    curve = fit_curve([s.features for s in samples], [max(s.seconds - step, 1e-9) for s in samples])
    per_message, per_row, per_target, per_step = (target.compute(c) for c in curve.coefficients)
    return ComputeCost(per_message, per_row, per_target, per_step)


def price(
    case_name: str, strategy: DistDyStrategy, graph: TemporalGraph, settings: RunConfig, profile: Profile, target: Target
) -> Prediction:
    """DistDy on ``target`` (see the module docstring)."""
    from dygsched.advise.cases import DISTDY

    training = SAMPLED.format(fanouts=list(strategy.config.fanouts))
    if graph.task is Task.LINK or strategy.config.loop != "epochs":
        return refused(
            case_name, DISTDY, target.gpus, "the advisor counts DistDy's node task with sched.loop=epochs only", training
        )
    ranks = target.gpus
    counts = counts_for(strategy, graph, settings, ranks)
    cost = compute_cost(profile, target)
    row_bytes = int(profile.fact("distdy_row_bytes"))
    embedding_bytes = int(profile.fact("distdy_embedding_bytes"))
    network = Network(target.link.gbps, target.link.latency_s)
    phases = simulate_epoch(counts, cost, network, row_bytes, embedding_bytes, profile.parameter_bytes)
    step = step_cost(profile, target)
    steps = len(counts)
    compute = phases["encode_s"] + phases["temporal_s"]
    communication = phases["fetch_s"] + phases["embedding_s"] + phases["allreduce_s"] + steps * step.ready_s
    fetched = sum(float(c.remote_fetch_rows().sum()) for c in counts) * row_bytes
    embedded = sum(float(c.embedding_rows.sum()) for c in counts) * embedding_bytes
    traffic = {"feature_fetch": fetched, "embedding": embedded}
    if ranks > 1:
        traffic["allreduce"] = steps * ranks * step.allreduce_bytes
    busiest = max(counts, key=lambda c: float(c.messages.max() + c.layer_rows.max()))
    rank = int(np.argmax(busiest.messages + busiest.layer_rows))
    memory = memory_of(profile, DISTDY, profile.of(DISTDY, target.threads), target)
    return Prediction(
        strategy=case_name,
        family=DISTDY,
        gpus=ranks,
        epoch_time_s=compute + communication + steps * step.optimizer_s,
        compute_s=compute,
        communication_s=communication,
        overhead_s=steps * step.optimizer_s,
        steps=steps,
        peak_memory_bytes=peak_memory(profile, memory, target, *step_features(busiest, rank)),
        traffic=traffic,
        training=training,
        exact=bool(strategy.exact),
        terms=f"{strategy.config.partition} placement on {ranks} store(s); DistDy's cluster model (engine/distdy/cluster.py)",
    )
