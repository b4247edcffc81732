"""Link scores, node-task probabilities and node memory of a memory-based model (TGN, JODIE, APAN;
EdgeBank's scores; the persistent forecast's) on an event stream.

The run is rebuilt in one process with the run's global batch (``finished_run``). Its validation
and test passes start from the state the run's own evaluation started from: the checkpoint keeps
the table validation began with, every vertex's rows gathered from DepCache's, DepComm's or Sven's
ranks (``dygsched/engine/node_memory/evaluation.py``), so validation streams on from it and test
from the end of validation, under the same weights, batches and negatives (seeded per global batch):
the predictions give the run's recorded figures. A checkpoint written before the state was kept
has only the weights: the state is then replayed from empty through the earlier phases, which is
what any later evaluation of the same weights reads, close to the run's figure but not equal (one
printed line says so). EdgeBank and the persistent forecast write no state in training, so a
replay is their run's evaluation exactly; a training phase's predictions are a replay too.

Link rows are ``tables.link_rows``'s, with the event's number in the stream and its time. A
``task=node`` run of state labels gives one row per evaluated event: its source node, its label and
the classifier's probability (the persistent forecast's own), whose AUC is the run's.

Memory at a time ``T``: every node's memory row (and the time it was last written) once every
global batch whose events all happened at or before ``T`` has been absorbed, in the stream's time
units. From the end of training on, the state streams from the checkpoint's; before it, from a
replay (the run's own state during training, written under weights that still changed, is not
kept). A pairs file's pairs are scored at their times from that state: their endpoints embedded
at ``T`` (their neighbours' events strictly before ``T``) and scored by the model's link decoder.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd
import torch

from dygsched.commands.finished_run import LoadedRun
from dygsched.commands.tables import embedding_frame, link_rows
from dygsched.data.event_batches import batch_series
from dygsched.data.events import EventStream
from dygsched.data.temporal_graph import Task
from dygsched.engine.node_memory.batches import RankBatch, Series
from dygsched.engine.node_memory.evaluation import EVALUATION_START, PHASES
from dygsched.engine.node_memory.strategy import NodeMemoryStrategy
from dygsched.engine.strategy import IterationStats
from dygsched.errors import ConfigError
from dygsched.metrics.node_prediction import StateLabelScores
from dygsched.models.edgebank import EdgeBank
from dygsched.models.persistent_forecast import PersistentForecast

REPLAYED = (
    "note: the checkpoint keeps no node memory (written before runs saved it): the state is replayed from empty "
    "with the final weights, so the figures are close to the run's, not equal"
)


def _strategy(loaded: LoadedRun) -> tuple[NodeMemoryStrategy, EventStream]:
    strategy, stream = loaded.strategy, loaded.data
    assert isinstance(strategy, NodeMemoryStrategy) and isinstance(stream, EventStream)
    if strategy.node_task is not None and strategy.node_task.kind is not Task.CLASSIFICATION:
        raise ConfigError("predict reads task=node runs of state labels; node affinities (tgbn-*) are not read yet")
    return strategy, stream


def _writes_state(strategy: NodeMemoryStrategy) -> bool:
    """Whether training wrote the state the run's evaluation read (EdgeBank and the persistent forecast write none)."""
    return not isinstance(strategy.model, (EdgeBank, PersistentForecast))


def _kept_start(loaded: LoadedRun, strategy: NodeMemoryStrategy) -> bool:
    """Whether the checkpoint keeps the state the run's validation started from (a line says so where it should and does not)."""
    if not _writes_state(strategy):
        return False
    if (loaded.files.checkpoint.get("strategy") or {}).get(EVALUATION_START) is None:
        print(REPLAYED)
        return False
    return True


def _to_start_of(loaded: LoadedRun, strategy: NodeMemoryStrategy, phase: str) -> None:
    """The state ``phase``'s pass starts from: the run's own for validation and test where the
    checkpoint keeps it, else the earlier phases streamed from an empty state."""
    if phase != "train" and _kept_start(loaded, strategy):
        strategy.restore_evaluation_start(loaded.files.checkpoint["strategy"])
        if phase == "test":  # test continued from the end of validation
            strategy._stream_through("val")
    else:
        strategy._reset_state()
        for earlier in PHASES[: PHASES.index(phase)]:
            strategy._stream_through(earlier)
    strategy.model.eval()


@torch.no_grad()
def stream_predictions(loaded: LoadedRun, phase: str) -> pd.DataFrame:
    """Every event of ``phase`` and its negatives, scored; under ``task=node``, each event's probability (module docstring)."""
    strategy, stream = _strategy(loaded)
    if strategy.node_task is not None:
        return _node_predictions(loaded, strategy, stream, phase)
    _to_start_of(loaded, strategy, phase)
    samplers = strategy.settings.eval.samplers if phase in ("val", "test") else ("random",)
    ids = loaded.node_ids.numpy()
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


def _node_predictions(loaded: LoadedRun, strategy: NodeMemoryStrategy, stream: EventStream, phase: str) -> pd.DataFrame:
    """``event, time, node, label, probability``: each event of ``phase``, its source and the
    classifier's probability of its label being 1, from the pass the run's evaluation makes."""
    assert strategy.node_task is not None
    _to_start_of(loaded, strategy, phase)
    strategy._stream_through(phase)  # the pass scores every event's source, in stream order
    scored = StateLabelScores.cat(strategy.node_task.scored())
    events = torch.cat([torch.arange(stream.num_events)[strategy.events_of(batch)] for batch in strategy.batches(phase)])
    score = scored.score.astype(np.float64)
    floor = isinstance(strategy.model, PersistentForecast)  # the forecast is a probability already; the classifier's a logit
    return pd.DataFrame(
        {
            "event": events.numpy(),
            "time": stream.t.numpy()[events.numpy()],
            "node": loaded.node_ids.numpy()[stream.src[events].numpy()],
            "label": scored.label.astype(np.int8),
            "probability": score if floor else 1.0 / (1.0 + np.exp(-score)),
        }
    )


@torch.no_grad()
def stream_memory(loaded: LoadedRun, at: Sequence[float] | None) -> pd.DataFrame:
    """Every node's memory at each time of ``at`` (default: the end of the stream)."""
    strategy, stream = _strategy(loaded)
    _refuse_without_memory(strategy, "embed reads TGN, JODIE or APAN runs")
    ids = loaded.node_ids.numpy()
    table = strategy.memory.table
    frames = []
    for time in _states_at(loaded, strategy, stream, at if at else [float(stream.t[-1])]):
        frame = embedding_frame("time", time, ids, table.memory[: ids.size].cpu().numpy())
        frame.insert(2, "memory_time", table.memory_time[: ids.size].cpu().double().numpy())
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


@torch.no_grad()
def stream_pair_scores(loaded: LoadedRun, src: np.ndarray, dst: np.ndarray, times: np.ndarray) -> np.ndarray:
    """The model's logit of each pair (node rows ``src``, ``dst``) at its time (module docstring)."""
    strategy, stream = _strategy(loaded)
    _refuse_without_memory(strategy, "--pairs scores pairs with TGN, JODIE or APAN runs")
    if strategy.node_task is not None:
        raise ConfigError("--pairs scores links; a task=node run's classifier scores events: leave --pairs out")
    first, last = float(stream.t[0]), float(stream.t[-1])
    outside = times[(times < first) | (times > last)]
    if outside.size:
        raise ConfigError(
            f"--pairs: time {outside[0]:g} is outside the run's stream ({first:g} to {last:g}, its file's time units)"
        )
    scores = np.empty(times.size)
    for time in _states_at(loaded, strategy, stream, np.unique(times).tolist()):
        rows = np.flatnonzero(times == time)
        scores[rows] = _pair_logits(strategy, stream, torch.as_tensor(src[rows]), torch.as_tensor(dst[rows]), time).numpy()
    return scores


def _refuse_without_memory(strategy: NodeMemoryStrategy, what: str) -> None:
    if isinstance(strategy.model, EdgeBank):
        raise ConfigError(f"model=edgebank keeps no node embedding (it remembers edges): {what}")
    if isinstance(strategy.model, PersistentForecast):
        raise ConfigError(f"the persistent forecast keeps no node embedding (it repeats labels): {what}")


def _pair_logits(
    strategy: NodeMemoryStrategy, stream: EventStream, src: torch.Tensor, dst: torch.Tensor, at: float
) -> torch.Tensor:
    """The logits of pairs ``src``, ``dst`` (node rows) at time ``at``, from the state as it is."""
    t = (torch.tensor(at, dtype=stream.t.dtype) - stream.t[0]).to(strategy.times.dtype).repeat(src.numel())
    read = batch_series(strategy.neighbours, src, dst, src.new_zeros(0), t, int(strategy.model.embedding_neighbours))
    series = strategy.memory.prepare(Series(read.vertices, read.times))
    memory, tau = strategy.memory.memory_of(series, IterationStats(0))
    z = strategy.embed_roots(read.roots, read.root_times, read.neighbours, memory, tau)
    n = src.numel()
    return strategy.model.score(z[:n], z[n:]).double().cpu()


def _states_at(loaded: LoadedRun, strategy: NodeMemoryStrategy, stream: EventStream, at: Sequence[float]) -> Iterator[float]:
    """Each time of ``at``, in order, once the state is the memory at that time (module docstring)."""
    pending = sorted(float(time) for time in at)
    kept = _kept_start(loaded, strategy)
    train = strategy.batches("train")
    train_end = float(_event_times(strategy, stream, train[-1])[-1])
    replays_training = not kept or (bool(pending) and pending[0] < train_end)
    if kept and replays_training:
        print(f"note: times before the end of training ({train_end:g}) read a replay from empty with the final weights")
    strategy._reset_state()
    strategy.model.eval()
    for phase in PHASES:
        if phase == "val" and kept:
            strategy.restore_evaluation_start(loaded.files.checkpoint["strategy"])
        if phase == "train" and not replays_training:
            continue
        for batch in strategy.batches(phase):
            last = float(_event_times(strategy, stream, batch)[-1])
            while pending and pending[0] < last:
                yield pending.pop(0)
            stats = IterationStats(batch.index)
            *_, updates = strategy._step(batch, strategy.inputs(batch), stats)
            strategy.memory.aggregate(updates, stats)
    yield from pending


def _event_times(strategy: NodeMemoryStrategy, stream: EventStream, batch: RankBatch) -> np.ndarray:
    return stream.t.numpy()[torch.arange(stream.num_events)[strategy.events_of(batch)].numpy()]
