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
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from dygsched.commands.finished_run import LoadedRun
from dygsched.commands.tables import embedding_frame, link_rows
from dygsched.data.groups import SnapshotGroup, Split
from dygsched.data.link_targets import links_of
from dygsched.data.temporal_graph import Task, TemporalGraph
from dygsched.engine.link_objective import LinkEvaluation, LinkObjective
from dygsched.engine.objective import GroupObjective, build_split
from dygsched.errors import ConfigError
from dygsched.models.dgnn import DGNN


def _parts(loaded: LoadedRun) -> tuple[TemporalGraph, GroupObjective, DGNN, Split]:
    graph, objective = loaded.data, loaded.module
    assert isinstance(graph, TemporalGraph) and isinstance(objective, GroupObjective)
    if loaded.files.run.link.procedure == "utg" and graph.task is Task.LINK:
        raise ConfigError("predict does not read link.procedure=utg runs yet (their states run on from the first snapshot)")
    return graph, objective, objective.model, build_split(graph, loaded.files.run)


@torch.no_grad()
def snapshot_predictions(loaded: LoadedRun, phase: str) -> pd.DataFrame:
    """The model's predictions on every group of ``phase`` (see the module docstring)."""
    graph, objective, model, split = _parts(loaded)
    ids = loaded.node_ids.numpy()
    groups = split.phase(phase)
    if isinstance(objective, LinkObjective):
        return _link_predictions(objective, graph, groups, phase, ids)
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


def _link_predictions(
    objective: LinkObjective, graph: TemporalGraph, groups: Sequence[SnapshotGroup], phase: str, ids: np.ndarray
) -> pd.DataFrame:
    evaluation = LinkEvaluation(objective, phase)
    protocol = objective.protocol
    frames = []
    numbered = dict.fromkeys(protocol.samplers, 0)  # each sampler's positives so far
    for group in groups:
        snapshots = group.snapshots(graph)
        last = snapshots[-1]
        evaluation.add(objective.model(snapshots), last)
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
    window = int(loaded.files.run.window)
    last = graph.num_snapshots - 1
    chosen = [last] if not at else list(at)
    frames = []
    for snapshot in chosen:
        if not window - 1 <= snapshot <= last:
            raise ConfigError(
                f"--at {snapshot}: choose snapshots {window - 1} .. {last} (a window of {window} snapshots ends at each)"
            )
        group = SnapshotGroup(-1, snapshot - window + 1, snapshot + 1)
        h, _ = model.unroll(group.snapshots(graph))
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
    if times is None:
        after = np.full(src.size, graph.num_snapshots - 1)
    else:
        if graph.snapshot_times is None:
            raise ConfigError(f"--pairs: dataset '{graph.name}' has no snapshot times; leave the time column out")
        after = np.searchsorted(graph.snapshot_times.numpy(), times, side="right") - 2
    if after.size and (after.min() < window - 1 or after.max() > graph.num_snapshots - 1):
        raise ConfigError(
            f"--pairs: some times fall outside the snapshots a window of {window} can score "
            f"(snapshots {window} .. {graph.num_snapshots} of the run's cut)"
        )
    scores = np.empty(src.size)
    for snapshot in np.unique(after):
        rows = np.flatnonzero(after == snapshot)
        group = SnapshotGroup(-1, int(snapshot) - window + 1, int(snapshot) + 1)
        h, _ = model.unroll(group.snapshots(graph))
        z = model.readout(h)
        scores[rows] = objective.score(z, torch.as_tensor(src[rows]), torch.as_tensor(dst[rows])).double().numpy()
    return scores
