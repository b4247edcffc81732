"""Predictions and node embeddings of a snapshot model (the snapshot-group strategies, FlareDTDG).

Each evaluated group of a phase is the window of ``window`` snapshots ending at snapshot ``s``; the
model runs it from zero states, as every snapshot strategy's evaluation does
(``SnapshotGroupStrategy.evaluate``), so a prediction depends on the weights alone.

* Node targets (regression or classification): one row per node that exists at ``s``: ``snapshot``,
  ``node`` (the id in the user's file), ``prediction`` (the value, or the class) and ``target``.
  The run's ``mse`` is the mean of ``(prediction - target)**2``, its ``accuracy`` the share of
  ``prediction == target``.
* Link prediction (``task=link``): the node embeddings after ``s`` score the pairs of snapshot
  ``s + 1`` against the negatives the run's evaluation drew (``LinkProtocol``: seeded, the same
  every epoch), as ``link_rows`` lays out; or the pairs of a user's file (``score_pairs``).
* Embeddings: the top layer's output after snapshot ``s`` (``DGNN.unroll`` of the window ending at
  ``s``); for a link run, the head's output, the embedding its decoder scores pairs from. The head
  applied to a node run's embedding gives its ``prediction``.

Under UTG's procedure (``link.procedure=utg``) a state is not reset at a window's start: the run's
evaluation streams every snapshot in order from the first, each window from the state the one
before left (``SnapshotGroupStrategy._stream``), and scores each group's last output. So do these
tables, its embeddings and a pairs file's scores: the outputs after ``s`` are the stream's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pandas as pd
import torch

from dygsched.commands.finished_run import LoadedRun
from dygsched.commands.tables import embedding_frame, link_rows
from dygsched.data.groups import SnapshotGroup, Split
from dygsched.data.link_targets import links_of
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.engine.link_objective import LinkEvaluation, LinkObjective
from dygsched.engine.objective import GroupObjective, build_split
from dygsched.errors import ConfigError
from dygsched.models.dgnn import DGNN
from dygsched.models.inherited_states import InheritedStates


def _parts(loaded: LoadedRun) -> tuple[TemporalGraph, GroupObjective, DGNN, Split]:
    graph, objective = loaded.data, loaded.module
    assert isinstance(graph, TemporalGraph) and isinstance(objective, GroupObjective)
    return graph, objective, objective.model, build_split(graph, loaded.files.run)


def _streams(loaded: LoadedRun) -> bool:
    """Whether the run's states stream from the first snapshot on (UTG's procedure on a link graph)."""
    graph = loaded.data
    return loaded.files.run.link.procedure == "utg" and isinstance(graph, TemporalGraph) and graph.task is Task.LINK


def _outputs_after(loaded: LoadedRun, model: DGNN, snapshots: Sequence[int]) -> Iterator[tuple[int, torch.Tensor]]:
    """The top layer's output after each of ``snapshots``, in order: from the window of ``window``
    snapshots ending there (one window at a time), or under UTG's procedure from one stream of
    every snapshot up to the last asked."""
    graph = loaded.data
    assert isinstance(graph, TemporalGraph)
    if not _streams(loaded):
        window = int(loaded.files.run.window)
        for s in snapshots:
            yield s, model.unroll(SnapshotGroup(-1, s - window + 1, s + 1).snapshots(graph))[0]
        return
    stop = max(snapshots) + 1
    hooks = InheritedStates(model, range(stop), {})  # every snapshot in order, as the run's evaluation streams them
    model.unroll(SnapshotGroup(-1, 0, stop).snapshots(graph), hooks=hooks)
    for s in snapshots:
        yield s, hooks.outputs[s]


def _first_output(loaded: LoadedRun) -> int:
    """The first snapshot an output follows: the end of the first window, or under UTG's procedure the first snapshot."""
    return 0 if _streams(loaded) else int(loaded.files.run.window) - 1


@torch.no_grad()
def snapshot_predictions(loaded: LoadedRun, phase: str) -> pd.DataFrame:
    """The model's predictions on every group of ``phase`` (see the module docstring)."""
    graph, objective, model, split = _parts(loaded)
    ids = loaded.node_ids.numpy()
    groups = split.phase(phase)
    if isinstance(objective, LinkObjective):
        after = _outputs_after(loaded, model, [group.stop - 1 for group in groups])
        outputs = ((graph.snapshots[s], model.readout(h)) for s, h in after)
        return link_predictions(objective, phase, outputs, ids)
    frames = []
    for group in groups:
        snapshots = group.snapshots(graph)
        last = snapshots[-1]
        predictions = model(snapshots)
        mask = last.node_mask
        value = predictions[mask].argmax(-1) if graph.task is Task.CLASSIFICATION else predictions[mask]
        frames.append(
            pd.DataFrame(
                {
                    "snapshot": np.full(int(mask.sum()), group.stop - 1, dtype=np.int64),
                    "node": ids[mask.numpy()],
                    "prediction": value.numpy(),
                    "target": last.y[mask].numpy(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def link_predictions(
    objective: LinkObjective, phase: str, outputs: Iterable[tuple[Snapshot, torch.Tensor]], ids: np.ndarray
) -> pd.DataFrame:
    """The link rows of each evaluated snapshot (``outputs``: the snapshot whose pairs are scored, and
    the embeddings ``[N, d]`` its decoder reads), scored as the run's ``LinkEvaluation`` scores them."""
    evaluation = LinkEvaluation(objective, phase)
    protocol = objective.protocol
    frames = []
    numbered = dict.fromkeys(protocol.samplers, 0)  # each sampler's positives so far
    for last, embeddings in outputs:
        evaluation.add(embeddings, last)
        pairs = links_of(last)
        for sampler in protocol.samplers:
            part = evaluation.parts[sampler][-1]
            negative_src, negative_dst = protocol.evaluation_negatives(phase, sampler, last)
            sources = pairs[0].expand_as(negative_dst) if negative_src is None else negative_src
            frame = link_rows(
                ids,
                pairs[0].numpy(),
                pairs[1].numpy(),
                part["positive"].numpy(),
                sources.t().numpy(),
                negative_dst.t().numpy(),
                part["negative"].numpy(),
                part["inductive"].numpy(),
                first_pair=numbered[sampler],
            )
            numbered[sampler] += int(pairs.shape[1])
            frame.insert(0, "snapshot", np.int64(last.target_index))
            frame.insert(1, "sampler", sampler)
            frames.append(frame)
    return pd.concat(frames, ignore_index=True)


@torch.no_grad()
def snapshot_embeddings(loaded: LoadedRun, at: Sequence[int] | None) -> pd.DataFrame:
    """Every node's embedding after each snapshot of ``at`` (default: the last one)."""
    graph, objective, model, _ = _parts(loaded)
    first, last = _first_output(loaded), graph.num_snapshots - 1
    chosen = [last] if not at else list(at)
    for snapshot in chosen:
        if not first <= snapshot <= last:
            window = int(loaded.files.run.window)
            raise ConfigError(
                f"--at {snapshot}: choose snapshots {first} .. {last}"
                + ("" if _streams(loaded) else f" (a window of {window} snapshots ends at each)")
            )
    frames = []
    for snapshot, h in _outputs_after(loaded, model, chosen):
        if isinstance(objective, LinkObjective):
            h = model.readout(h)  # the embedding the decoder scores
        frames.append(embedding_frame("snapshot", snapshot, loaded.node_ids.numpy(), h.numpy()))
    return pd.concat(frames, ignore_index=True)


@torch.no_grad()
def score_snapshot_pairs(loaded: LoadedRun, src: np.ndarray, dst: np.ndarray, times: np.ndarray | None) -> np.ndarray:
    """Logits of the pairs ``src -> dst`` (node rows): each scored from the embeddings after the
    snapshot before the one its time falls in (without times: after the last snapshot), as the run
    scores a snapshot's pairs from the one before."""
    graph, objective, model, _ = _parts(loaded)
    if not isinstance(objective, LinkObjective):
        raise ConfigError("--pairs scores links: this run predicts node targets (give a task=link run)")
    window = int(loaded.files.run.window)
    reach = "the run's stream" if _streams(loaded) else f"a window of {window}"
    after = pair_snapshots(graph, src.size, times, _first_output(loaded), reach)
    scores = np.empty(src.size)
    for snapshot, h in _outputs_after(loaded, model, [int(s) for s in np.unique(after)]):
        rows = np.flatnonzero(after == snapshot)
        z = model.readout(h)
        scores[rows] = objective.score(z, torch.as_tensor(src[rows]), torch.as_tensor(dst[rows])).double().numpy()
    return scores


def pair_snapshots(graph: TemporalGraph, count: int, times: np.ndarray | None, first: int, reach: str) -> np.ndarray:
    """The snapshot after which each of ``count`` pairs of a user's file is scored: the one before the
    snapshot its time falls in (without times: the last one); one line where one is before ``first``
    or after the last (``reach``: what scores the pairs, for that line)."""
    if times is None:
        return np.full(count, graph.num_snapshots - 1)
    if graph.snapshot_times is None:
        raise ConfigError(f"--pairs: dataset '{graph.name}' has no snapshot times; leave the time column out")
    after = np.searchsorted(graph.snapshot_times.numpy(), times, side="right") - 2
    if after.size and (after.min() < first or after.max() > graph.num_snapshots - 1):
        raise ConfigError(
            f"--pairs: some times fall outside the snapshots {reach} can score "
            f"(snapshots {first + 1} .. {graph.num_snapshots} of the run's cut)"
        )
    return after
