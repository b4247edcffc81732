"""Link prediction on snapshots: each snapshot scores the pairs that link in the next one.

``link_prediction_graph(graph, embedding_dim)`` turns any ``TemporalGraph`` into the graph of
the link task (``Task.LINK``): snapshot ``t`` keeps its edges, features and node mask as inputs
and gains ``links``, the distinct directed pairs ``(u, v)`` of snapshot ``t + 1``'s edges (the
positives its node embeddings are scored on, as EvolveGCN's and UTG's link prediction), and
``target_index = t + 1``. The last snapshot has no next one, so it is dropped: ``T`` snapshots
give ``T - 1``. A source that already knows the pairs after its last snapshot (a cut stream,
whose last interval only provides targets) sets ``links`` on every snapshot itself, and its
snapshots are kept as they are.

``link_events(graph)`` lists every snapshot's positives as events timed by their target index:
what evaluation's samplers (``dygsched.data.negative_edges``: random, historical, inductive) and
the one-vs-many negatives read as the edge history, the same for every model. ``cut_pairs`` is
that stream as an event model trains on a cut stream (UTG's rule for event models on discrete-time
data: each snapshot's distinct pairs at the snapshot's time), split where the snapshot models'
groups split, so both kinds of model train, validate and test on the same pairs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

import torch

from dygsched.data.events import EventStream
from dygsched.data.groups import sliding_groups, split_by_time
from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
from dygsched.errors import ConfigError


def distinct_pairs(edge_index: torch.Tensor) -> torch.Tensor:
    """The distinct directed pairs of ``edge_index`` (``[2, E]``), sorted by source then destination."""
    if edge_index.shape[1] == 0:
        return edge_index.long()
    return torch.unique(edge_index.long(), dim=1)


def link_prediction_graph(graph: TemporalGraph, embedding_dim: int) -> TemporalGraph:
    """``graph`` as the link task's graph (see the module docstring); a link graph is returned as it is."""
    if graph.task is Task.LINK:
        return graph if graph.embedding_dim == embedding_dim else replace(graph, embedding_dim=embedding_dim)
    snapshots = graph.snapshots
    if all(s.links is not None for s in snapshots):
        kept = snapshots
    else:
        if len(snapshots) < 2:
            raise ConfigError(f"task=link needs at least 2 snapshots (each scores the next one's pairs); {graph.name} has 1")
        kept = tuple(
            replace(s, links=distinct_pairs(following.edge_index), target_index=t + 1)
            for t, (s, following) in enumerate(zip(snapshots[:-1], snapshots[1:]))
        )
    return TemporalGraph(graph.name, kept, Task.LINK, embedding_dim=embedding_dim, node_ids=graph.node_ids)


def links_of(snapshot: Snapshot) -> torch.Tensor:
    """``snapshot.links``, which a link graph's snapshots always have."""
    if snapshot.links is None:
        raise ValueError("not a link-prediction snapshot (no links)")
    return snapshot.links


def check_targets(graph: TemporalGraph, targets: range) -> None:
    """Refuse a link graph whose snapshots in ``targets`` (indices into ``graph.snapshots``) score no pair."""
    empty = [t for t in targets if links_of(graph.snapshots[t]).shape[1] == 0]
    if empty:
        first = graph.snapshots[empty[0]].target_index
        raise ConfigError(
            f"task=link: {len(empty)} snapshot group(s) of {graph.name} end where the next snapshot has no edges "
            f"(the first: snapshot {first}), so they have no link to predict; cut the data into longer snapshots "
            "(dataset.snapshot, dataset.num_snapshots) or use task=node"
        )


def link_events(graph: TemporalGraph) -> EventStream:
    """Every snapshot's positives as events ``u -> v`` at time ``target_index`` (in snapshot order)."""
    pairs = [links_of(s) for s in graph.snapshots]
    times = [torch.full((p.shape[1],), float(s.target_index), dtype=torch.float64) for p, s in zip(pairs, graph.snapshots)]
    src = torch.cat([p[0] for p in pairs])
    dst = torch.cat([p[1] for p in pairs])
    return EventStream(f"{graph.name}-links", src, dst, torch.cat(times), graph.num_nodes)


def cut_pairs(graph: TemporalGraph, settings: SplitSettings) -> EventStream:
    """A link graph's positives as an event model's stream (``link_events``), split where the snapshot
    models' groups of ``settings.window`` split: validation begins with the pairs the first
    validation group scores, test with the first test group's; training has every pair before."""
    events = link_events(graph)
    split = split_by_time(sliding_groups(graph.num_snapshots, settings.window), settings.split.train, settings.split.val)
    counts = [links_of(s).shape[1] for s in graph.snapshots]
    offsets = [0]
    for count in counts:
        offsets.append(offsets[-1] + count)
    return replace(events, phase_starts=(offsets[split.val[0].stop - 1], offsets[split.test[0].stop - 1]))


class SplitFractions(Protocol):
    @property
    def train(self) -> float: ...

    @property
    def val(self) -> float: ...


class SplitSettings(Protocol):
    """What ``cut_pairs`` reads of a run's settings (its ``RunConfig``: ``window`` and ``split``)."""

    @property
    def window(self) -> int: ...

    @property
    def split(self) -> SplitFractions: ...
