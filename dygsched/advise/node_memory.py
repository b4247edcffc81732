"""The price of the node-memory strategies (the one-process reference, DepCache, DepComm, Sven).

An optimizer step is one global batch of ``batch_size x W`` events, each rank computing its slice of
``batch_size`` (``rank_slice``): its compute is its backend's profiled step on one rank at that
batch size (the loop's own seconds, its memory update, embedding, loss and backward), scaled to the
target. What the ranks move is counted exactly by the strategies' own accounting
(``dygsched.engine.node_memory.volumes``: the same reads, negatives and writes every step makes, for
``W`` virtual ranks, under the owner map the strategy's partitioner gives, Re-FlexBiCut's from the
same pre-sampling demand): Sven's dispatch of distinct vertices and their packed rows, DepComm's
request and reply per occurrence and the reply's gradient, every strategy's writes to their owners,
DepCache's writes to every replica. A step pays, per all-to-all the backend calls, one message to
each peer, and the busiest rank's bytes over the link. Sven's micro-batches let the next slice's
rows travel while one computes, and its stale all-reduce hides behind the next step's compute.

Memory: the node state is the profiled table, whole on the reference and DepCache (replicas),
``1 / W`` of it on DepComm and Sven (their owners' share), plus the step's own peak at its batch.
"""

from __future__ import annotations

import math

import numpy as np

from dygsched.advise.pricing import GLOBAL_BATCH, STALE, Prediction, Target, exposed, step_cost
from dygsched.advise.profile import Profile, memory_curve, time_curve
from dygsched.data.event_batches import RecentNeighbours, relative_times
from dygsched.data.events import EventStream
from dygsched.engine.node_memory.config import ShardedMemoryConfig, SvenConfig
from dygsched.engine.node_memory.depcache import DepCacheMemory
from dygsched.engine.node_memory.depcomm import DepCommMemory
from dygsched.engine.node_memory.strategy import NodeMemoryStrategy
from dygsched.engine.node_memory.sven import SvenMemory
from dygsched.engine.node_memory.volumes import RowSizes, count_traffic, demand_matrix, epoch_reads
from dygsched.engine.run_config import RunConfig

# All-to-alls one step of each backend calls, read from its code: DepCache's exchange of counts and
# its four row kinds (aggregate, aggregate_index, for endpoints and deliveries); DepComm's counts,
# requests, replies and the replies' gradient, then the same five to the owners; Sven's counts,
# distinct ids and packed rows, then the five.
COLLECTIVES = {DepCacheMemory: ("depcache", 5), DepCommMemory: ("depcomm", 9), SvenMemory: ("sven", 8)}


def row_sizes(profile: Profile) -> RowSizes:
    return RowSizes(
        int(profile.fact("memory_dim")),
        int(profile.fact("mail_dim")),
        int(profile.fact("mailbox_size")),
        int(profile.fact("value_bytes", 4.0)),
    )


def owner_map(
    strategy: NodeMemoryStrategy,
    stream: EventStream,
    events: tuple[int, int],
    settings: RunConfig,
    ranks: int,
    profile: Profile,
) -> np.ndarray:
    """Which rank owns each vertex on ``ranks`` ranks: the strategy's own partitioner (DepCache's
    replicas need none: every rank holds every row)."""
    from dygsched.data.partition.vertices import partition_vertices

    config = strategy.config
    if not isinstance(config, ShardedMemoryConfig):
        return np.arange(stream.num_nodes) % ranks
    if config.partition == "reflexbicut":
        reads = epoch_reads(
            stream, events, config.batch_size, ranks, settings.seed, 0, int(profile.fact("embedding_neighbours", 0.0))
        )
        demand = demand_matrix(reads, ranks, stream.num_nodes)
    else:
        demand = np.zeros((ranks, stream.num_nodes))
    return partition_vertices(config.partition, demand, capacity_slack=config.capacity_slack, seed=settings.seed).owner


def price(
    case_name: str, strategy: NodeMemoryStrategy, stream: EventStream, settings: RunConfig, profile: Profile, target: Target
) -> Prediction:
    """``strategy`` on ``target`` (see the module docstring)."""
    from dygsched.advise.cases import family_of

    family = family_of(strategy)  # the reference's and DepCache's steps, DepComm's or Sven's
    ranks = target.gpus
    batch = strategy.config.batch_size
    events = stream.split(settings.split.train, settings.split.val, settings.split.by).train
    count = events[1] - events[0]
    steps = math.ceil(count / (batch * ranks))
    threads = target.threads
    samples = profile.of(family, threads)
    curve = time_curve(samples, profile.step_s(threads))
    kernels = profile.kernels(family)
    compute = 0.0
    for index in range(steps):  # every rank's slice of the global batch; the last batch may be short
        global_batch = min(batch * ranks, count - index * batch * ranks)
        compute += target.compute(curve(math.ceil(global_batch / ranks)), kernels)
    step = step_cost(profile, target)
    backend = type(strategy.memory)
    name, calls = COLLECTIVES.get(backend, ("", 0))
    traffic: dict[str, float] = {}
    exchange = 0.0
    table_share = 1.0
    if ranks > 1 and name:
        owner = owner_map(strategy, stream, events, settings, ranks, profile)
        sampler = RecentNeighbours(stream, relative_times(stream))
        reads = epoch_reads(
            stream,
            events,
            batch,
            ranks,
            settings.seed,
            0,
            int(profile.fact("embedding_neighbours", 0.0)),
            int(profile.fact("mail_neighbours", 0.0)),
            sampler,
        )
        counted = count_traffic(reads, owner, ranks, row_sizes(profile))[name]
        traffic = {kind: float(matrix.sum()) for kind, matrix in counted.items()}
        total = np.sum(list(counted.values()), axis=0)
        busiest = float(np.maximum(total.sum(axis=1), total.sum(axis=0)).max())  # a rank's bytes out or in, the epoch
        exchange = steps * calls * (ranks - 1) * target.link.latency_s + busiest / target.link.bandwidth_bytes_s
        if name != "depcache":
            table_share = float(np.bincount(owner, minlength=ranks).max()) / max(stream.num_nodes, 1)
    config = strategy.config
    if isinstance(config, SvenConfig) and config.micro_batches > 1:  # the next slice's rows travel meanwhile
        exchange = exposed(exchange, compute * (config.micro_batches - 1) / config.micro_batches)
    allreduce = steps * step.allreduce_s
    if strategy.gradient_staleness:  # launched at one step's end, waited for at the next's
        allreduce = exposed(allreduce, compute)
    traffic_all = {**traffic, **({"allreduce": steps * ranks * step.allreduce_bytes} if ranks > 1 else {})}
    memory = memory_curve(samples, profile.family_memory_bytes.get(family, 0))
    peak = None
    if memory is not None:
        added = max(0.0, memory(batch)) - (1.0 - table_share) * profile.fact("node_state_bytes", 0.0)
        peak = (profile.baseline_memory_bytes if target.cpu_ranks else 0.0) + max(0.0, added)
    training = STALE if strategy.gradient_staleness else GLOBAL_BATCH.format(batch=batch)
    return Prediction(
        strategy=case_name,
        family=family,
        gpus=ranks,
        epoch_time_s=compute + exchange + allreduce + steps * (step.optimizer_s + step.ready_s),
        compute_s=compute,
        communication_s=exchange + allreduce + steps * step.ready_s,
        overhead_s=steps * step.optimizer_s,
        steps=steps,
        peak_memory_bytes=peak,
        traffic=traffic_all,
        training=training,
        exact=bool(strategy.exact),
        terms=f"{steps} steps of {batch} events per rank; {calls} all-to-all(s) per step; step curve R^2 {curve.r2:.2f}",
    )
