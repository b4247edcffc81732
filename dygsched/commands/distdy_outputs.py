"""Predictions and node embeddings of DistDy's sampled model (``sched=distdy``, ``model=sage_temporal``).

DistDy evaluates on representations computed from sampled neighbourhoods: each target's
GraphSAGE embedding in every snapshot of the window ending at ``tau``, read from the additive
stores, then the temporal model over the window (``DistDyStrategy.representations``). A node's
sample is keyed by ``(seed, -1, tau, chunk start, snapshot)`` and the node alone, never by the rank
that draws it, and the stores give back the snapshots' feature rows exactly, so where a run placed
its nodes changes no representation. They are rebuilt here on one store holding every node
(``_one_store``), from the same store code and keys the run's evaluation used:

* Node targets: DistDy's own node split (``node_split``: a seeded permutation cut by the run's
  split fractions), not the snapshot groups. The evaluation reads the phase's nodes present in the
  newest snapshot the checkpoint's epoch trained on, ``sched.batch`` at a time; the rows are the
  snapshot strategies' ``snapshot, node, prediction, target``, and their MSE is the run's ``mse``.
  ``--phase train`` reads the training nodes the same way (the run does not evaluate them).
* Link prediction: every group of the phase (split by time), the nodes its pairs and negatives
  read, ``sched.batch`` at a time (``links.evaluate_pairs``), scored as the snapshot models' link
  rows are (``snapshot_outputs.link_predictions``).
* Embeddings after snapshot ``s``: every node, in id order and ``sched.batch`` at a time, with the
  window ending at ``s``: the temporal model's output before the head (node runs), or the head's
  output, the embedding the decoder scores (link runs). A sample depends on its chunk's start, so
  a row is what the evaluation computed where its chunks are the same (``sched.batch`` at least
  the nodes it reads).
* A pairs file: each pair scored after its snapshot from the representations of the nodes the
  file's pairs read there, sampled as the link evaluation samples a group's nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from dygsched.commands.finished_run import LoadedRun
from dygsched.commands.snapshot_outputs import link_predictions, pair_snapshots
from dygsched.commands.tables import embedding_frame
from dygsched.data.partition.snapshot_graph import SnapshotPartition
from dygsched.data.temporal_graph import TemporalGraph
from dygsched.engine.distdy.links import evaluation_nodes
from dygsched.engine.distdy.strategy import DistDyStrategy
from dygsched.engine.node_partition.pairs import every_row
from dygsched.engine.strategy import IterationStats
from dygsched.errors import ConfigError

Held = dict[int, tuple[np.ndarray, np.ndarray]]  # per snapshot: the store's nodes and their feature rows


def _one_store(loaded: LoadedRun) -> tuple[DistDyStrategy, TemporalGraph]:
    """The run's strategy (set up as one rank) with every snapshot placed on its one store: the nodes
    present in it, as every partitioner places them, and no other."""
    strategy, graph = loaded.strategy, loaded.data
    assert isinstance(strategy, DistDyStrategy) and isinstance(graph, TemporalGraph)
    absent = np.zeros(graph.num_nodes, dtype=bool)
    strategy.placements = [
        SnapshotPartition(np.where(s.node_mask.numpy(), 0, -1), absent, np.zeros(1), 0.0, 0, 0.0) for s in graph.snapshots
    ]
    return strategy, graph


def _represent(strategy: DistDyStrategy, tau: int, held: Held, nodes: np.ndarray) -> torch.Tensor:
    """The model's outputs for ``nodes`` at ``tau``, ``sched.batch`` at a time, each chunk keyed by its
    start as the run's evaluation keys it; one row per node, in order."""
    rows = []
    for start in range(0, nodes.size, strategy.config.batch):
        chunk = nodes[start : start + strategy.config.batch]
        stats = IterationStats(iteration=-1)
        predictions, home, _ = strategy.representations(-1, tau, start, held, strategy._no_traffic(), stats, chunk)
        assert (home == 0).all(), "one store computes every node"
        rows.append(predictions)
    return torch.cat(rows)


def _window(strategy: DistDyStrategy, tau: int) -> set[int]:
    return set(range(tau - strategy.window + 1, tau + 1))


@torch.no_grad()
def distdy_predictions(loaded: LoadedRun, phase: str) -> pd.DataFrame:
    """The model's predictions on ``phase``, as the run's evaluation computed them (module docstring)."""
    strategy, graph = _one_store(loaded)
    ids = loaded.node_ids.numpy()
    if strategy.loss is not None:
        assert strategy.split is not None
        taus = [group.stop - 1 for group in strategy.split.phase(phase)]
        held = strategy.stored_windows(set().union(*(_window(strategy, tau) for tau in taus)))
        protocol = strategy.loss.protocol

        def outputs(tau: int) -> torch.Tensor:
            nodes = evaluation_nodes(protocol, phase, graph.snapshots[tau])
            predictions = _represent(strategy, tau, held, nodes)
            return every_row(nodes, predictions.reshape(nodes.size, -1), graph.num_nodes)

        return link_predictions(strategy.loss, phase, ((graph.snapshots[tau], outputs(tau)) for tau in taus), ids)
    tau = strategy.windows(loaded.files.epoch)[-1]  # the newest snapshot the checkpoint's epoch trained on
    nodes = {"train": strategy.train_nodes, "val": strategy.val_nodes, "test": strategy.test_nodes}[phase]
    last = graph.snapshots[tau]
    present = nodes[last.node_mask.numpy()[nodes]]
    predictions = _represent(strategy, tau, strategy.stored_windows(_window(strategy, tau)), present)
    value = predictions.argmax(-1) if predictions.dim() == 2 else predictions
    return pd.DataFrame(
        {
            "snapshot": np.full(present.size, tau, dtype=np.int64),
            "node": ids[present],
            "prediction": value.numpy(),
            "target": last.y[torch.from_numpy(present)].numpy(),
        }
    )


@torch.no_grad()
def distdy_embeddings(loaded: LoadedRun, at: Sequence[int] | None) -> pd.DataFrame:
    """Every node's representation after each snapshot of ``at`` (default: the last one)."""
    strategy, graph = _one_store(loaded)
    first, last = strategy.window - 1, graph.num_snapshots - 1
    chosen = [last] if not at else list(at)
    for snapshot in chosen:
        if not first <= snapshot <= last:
            raise ConfigError(
                f"--at {snapshot}: choose snapshots {first} .. {last} (a window of {strategy.window} snapshots ends at each)"
            )
    head = loaded.model.get_submodule("head")
    read: list[torch.Tensor] = []  # node runs: what the head reads
    hook = head.register_forward_hook(lambda _, inputs, __: read.append(inputs[0]))
    try:
        frames = []
        nodes = np.arange(graph.num_nodes)
        for snapshot in chosen:
            read.clear()
            predictions = _represent(strategy, snapshot, strategy.stored_windows(_window(strategy, snapshot)), nodes)
            h = predictions if strategy.loss is not None else torch.cat(read)
            frames.append(embedding_frame("snapshot", snapshot, loaded.node_ids.numpy(), h.reshape(nodes.size, -1).numpy()))
    finally:
        hook.remove()
    return pd.concat(frames, ignore_index=True)


@torch.no_grad()
def score_distdy_pairs(loaded: LoadedRun, src: np.ndarray, dst: np.ndarray, times: np.ndarray | None) -> np.ndarray:
    """Logits of the pairs ``src -> dst`` (node rows), each scored after the snapshot before the one
    its time falls in (without times: the last one), as the run scores a snapshot's pairs."""
    strategy, graph = _one_store(loaded)
    if strategy.loss is None:
        raise ConfigError("--pairs scores links: this run predicts node targets (give a task=link run)")
    after = pair_snapshots(graph, src.size, times, strategy.window - 1, f"a window of {strategy.window}")
    scores = np.empty(src.size)
    for snapshot in np.unique(after).tolist():
        rows = np.flatnonzero(after == snapshot)
        nodes = np.unique(np.concatenate([src[rows], dst[rows]]))
        predictions = _represent(strategy, snapshot, strategy.stored_windows(_window(strategy, snapshot)), nodes)
        z = every_row(nodes, predictions.reshape(nodes.size, -1), graph.num_nodes)
        scores[rows] = strategy.loss.score(z, torch.as_tensor(src[rows]), torch.as_tensor(dst[rows])).double().numpy()
    return scores
