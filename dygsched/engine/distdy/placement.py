"""From snapshots to what DistDy's partitioners see, and the stores that hold the result.

``snapshot_graphs`` turns each snapshot into a ``SnapshotGraph``: its nodes, its undirected edges
weighted by the expected feature-fetch cost of training on it, each node's additive size (the
bytes its changed feature segments and references would take if it stayed on its store) and each
training node's expected sampled messages as a target (what the balance extension weighs).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dygsched.data.additive_store import additive_bytes, changed_segments, segment_bounds
from dygsched.data.partition.snapshot_graph import SnapshotGraph, edge_weights, expected_messages
from dygsched.data.temporal_graph import Task, TemporalGraph

PAPER_SEGMENTS = 4  # S, fixed by the paper for its 128-column features


def feature_segments(configured: int | None, columns: int) -> int:
    """``S``: as configured, or the paper's 4 where the features have that many columns."""
    return configured if configured is not None else min(PAPER_SEGMENTS, columns)


def sampled_targets(graph: TemporalGraph, train: np.ndarray, batch: int, negatives: int) -> tuple[np.ndarray, int]:
    """The nodes a mini-batch draws its targets from, and how many it draws, as the edge weights
    assume: node targets, ``batch`` of the training nodes ``train``. Under ``task=link`` any node can
    be a target (the pairs' endpoints, the negatives' uniform destinations): ``(2 + k) batch`` of all
    nodes, for ``batch`` pairs with ``k`` negatives each (an expectation that ignores repeats)."""
    if graph.task is Task.LINK:
        return np.arange(graph.num_nodes), min(graph.num_nodes, (2 + negatives) * batch)
    return train, batch


def snapshot_graphs(
    graph: TemporalGraph, training: np.ndarray, batch: int, fanouts: Sequence[int], segments: int
) -> list[SnapshotGraph]:
    width = graph.num_features
    itemsize = graph.snapshots[0].x.element_size()
    bounds = segment_bounds(width, segments)
    full = width * itemsize
    out = []
    previous_x = None
    for snapshot in graph.snapshots:
        x = snapshot.x.numpy()
        nodes = np.flatnonzero(snapshot.node_mask.numpy())
        targets = np.intersect1d(training, nodes)
        edges, weights = edge_weights(graph.num_nodes, snapshot.edge_index.numpy(), targets, batch, fanouts, full)
        messages = expected_messages(graph.num_nodes, snapshot.edge_index.numpy(), targets, fanouts)
        if previous_x is None:
            sizes = np.full(graph.num_nodes, float(full))
        else:
            sizes = additive_bytes(changed_segments(previous_x, x, bounds), bounds, itemsize).astype(float)
        out.append(SnapshotGraph(nodes, edges, weights, sizes, full, graph.num_nodes, messages))
        previous_x = x
    return out
