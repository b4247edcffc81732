"""Link scores and node memory of a memory-based model (TGN, JODIE, APAN; EdgeBank's scores) on an event stream.

The stream is replayed in one process with the run's global batch (``finished_run``): the state
starts empty, and the phases before the asked one stream through it without training, as the
run's evaluation brings the state to a phase it did not just train (``NodeMemoryStrategy.evaluate``).
The phase's batches are then scored against the negatives the run's evaluation draws (seeded per
batch, the same every epoch) and their writes aggregated, as ``NodeMemoryStrategy._stream_through``
does; the rows are ``tables.link_rows``'s, with the event's number in the stream and its time.

What the run's own test figure read differs in one respect: right after training, its evaluation
continued from the state that training's epoch wrote, step by step under weights that were still
changing, and the checkpoint keeps the weights, not that state (nor, with DepCache, DepComm or
Sven, its per-rank rows). A replay from the final weights is what any later evaluation of the same
checkpoint reads; for EdgeBank, which trains nothing, the two are the same.

Memory at a time ``T``: every node's memory row (and the time it was last written) once every
global batch whose events all happened at or before ``T`` has been absorbed, in the stream's time units.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd
import torch

from dygsched.commands.finished_run import LoadedRun
from dygsched.commands.tables import embedding_frame, link_rows
from dygsched.data.events import EventStream
from dygsched.engine.node_memory.batches import RankBatch
from dygsched.engine.node_memory.strategy import PHASES, NodeMemoryStrategy
from dygsched.engine.strategy import IterationStats
from dygsched.errors import ConfigError
from dygsched.models.edgebank import EdgeBank


def _strategy(loaded: LoadedRun) -> tuple[NodeMemoryStrategy, EventStream]:
    strategy, stream = loaded.strategy, loaded.data
    assert isinstance(strategy, NodeMemoryStrategy) and isinstance(stream, EventStream)
    if strategy.node_task is not None:
        raise ConfigError("predict does not read task=node runs on event streams yet (their classifier's rows)")
    return strategy, stream


@torch.no_grad()
def stream_predictions(loaded: LoadedRun, phase: str) -> pd.DataFrame:
    """Every event of ``phase`` and its negatives, scored (module docstring)."""
    strategy, stream = _strategy(loaded)
    strategy._reset_state()
    for earlier in PHASES[: PHASES.index(phase)]:
        strategy._stream_through(earlier)
    samplers = strategy.settings.eval.samplers if phase in ("val", "test") else ("random",)
    ids = loaded.node_ids.numpy()
    strategy.model.eval()
    frames: list[pd.DataFrame] = []
    numbered = dict.fromkeys(samplers, 0)
    for batch in strategy.batches(phase):
        stats = IterationStats(batch.index)
        events = torch.arange(stream.num_events)[strategy.events_of(batch)]
        for sampler in samplers:  # negatives never change the state: each sampler scores the same state
            inputs = strategy.inputs(batch, sampler)
            _, positive, negative, updates = strategy._step(batch, inputs, stats)
            if phase in strategy.negatives.fixed:  # places an event has no negative for: NaN, as the run left them out
                present = strategy.negatives.fixed[phase].present[batch.start : batch.stop]
                negative = negative.masked_fill(~present, float("nan"))
            n, m = batch.events, negative.shape[1]
            roots = inputs.roots
            negative_dst = roots[2 * n : (2 + m) * n].view(m, n).t()
            negative_src = roots[(2 + m) * n : (2 + 2 * m) * n].view(m, n).t() if inputs.negative_sources else None
            frame = link_rows(
                ids,
                inputs.src.numpy(),
                inputs.dst.numpy(),
                positive.double().numpy(),
                (inputs.src[:, None].expand(n, m) if negative_src is None else negative_src).numpy(),
                negative_dst.numpy(),
                negative.double().numpy(),
                strategy.new_nodes.inductive(inputs.src, inputs.dst).numpy(),
                first_pair=numbered[sampler],
            )
            numbered[sampler] += n
            frame.insert(0, "event", events.numpy()[frame["pair"].to_numpy() - frame["pair"].min()])
            frame.insert(1, "time", stream.t.numpy()[frame["event"].to_numpy()])
            frame.insert(2, "sampler", sampler)
            frames.append(frame)
        strategy.memory.aggregate(updates, stats)
    strategy._position = phase
    return pd.concat(frames, ignore_index=True)


@torch.no_grad()
def stream_memory(loaded: LoadedRun, at: Sequence[float] | None) -> pd.DataFrame:
    """Every node's memory at each time of ``at`` (default: the end of the stream)."""
    strategy, stream = _strategy(loaded)
    if isinstance(strategy.model, EdgeBank):
        raise ConfigError("model=edgebank keeps no node embedding (it remembers edges): embed reads TGN, JODIE or APAN runs")
    end = float(stream.t[-1])
    pending = sorted(float(t) for t in at) if at else [end]
    ids = loaded.node_ids.numpy()
    strategy._reset_state()
    strategy.model.eval()
    frames = []
    for batch, times in _batches(strategy, stream):
        while pending and pending[0] < float(times[-1]):
            frames.append(_memory_rows(strategy, pending.pop(0), ids))
        inputs = strategy.inputs(batch)
        stats = IterationStats(batch.index)
        *_, updates = strategy._step(batch, inputs, stats)
        strategy.memory.aggregate(updates, stats)
    frames += [_memory_rows(strategy, time, ids) for time in pending]
    return pd.concat(frames, ignore_index=True)


def _batches(strategy: NodeMemoryStrategy, stream: EventStream) -> Iterator[tuple[RankBatch, np.ndarray]]:
    for phase in PHASES:
        for batch in strategy.batches(phase):
            yield batch, stream.t.numpy()[torch.arange(stream.num_events)[strategy.events_of(batch)].numpy()]


def _memory_rows(strategy: NodeMemoryStrategy, time: float, ids: np.ndarray) -> pd.DataFrame:
    table = strategy.memory.table
    frame = embedding_frame("time", time, ids, table.memory[: ids.size].cpu().numpy())
    frame.insert(2, "memory_time", table.memory_time[: ids.size].cpu().double().numpy())
    return frame
