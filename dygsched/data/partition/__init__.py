"""Partitioners: which rank owns which node. One registry of every partitioner, by kind.

Three kinds of partition, a module each (the online kind three):

* ``node`` (``nodes.py``): the nodes of a snapshot graph into parts and chunks (FlareDTDG's node
  partition): ``partition_nodes(graph, snapshots, parts, chunks, method, ...)``;
* ``online`` (``online.py``): each arriving snapshot's nodes onto per-rank stores (DistDy's
  Algorithms 1-3; the baselines it is compared with are ``online_baselines.py``, what every one
  reads and gives ``snapshot_graph.py``): ``partition_stream(method, graphs, ...)``;
* ``vertex`` (``vertices.py``): an event stream's vertices to the ranks that keep their state
  (Sven's Re-FlexBiCut and its baselines): ``partition_vertices(method, demand, ...)``.

``PARTITIONERS`` lists every partitioner once, with its kind and where it is implemented (imported
when it runs, so reading the registry imports neither torch nor numba). ``partitioner(kind, name)``
looks one up, and an unknown name is one ``ConfigError`` line that lists the choices of that kind.
Within a kind a partitioner has one signature:

* ``node``: ``(union, parts, chunks, seed, cache_dir) -> (part, chunk)``, per node;
* ``online``: ``(graphs, stores, capacity, window, seed, **options) -> [SnapshotPartition]``;
* ``vertex``: ``(demand, capacity_slack) -> owner``, per vertex.

A ``baseline`` is a method the paper compares its own with.
"""

from __future__ import annotations

from dataclasses import dataclass

from dygsched.components import Named
from dygsched.errors import ConfigError

KINDS = {
    "node": "node partitioner",
    "online": "online partitioner",
    "vertex": "vertex partitioner",
}


@dataclass(frozen=True)
class Partitioner(Named):
    """One partitioner: a ``Named`` entry (its name, unique within its kind, and the
    ``module:attribute`` that implements it, imported by ``load``), its kind and whether it is a
    baseline."""

    kind: str = "node"
    baseline: bool = False


def _entry(kind: str, name: str, where: str, baseline: bool = False) -> Partitioner:
    """``where`` is ``module:attribute`` under this package."""
    return Partitioner(name, f"{__name__}.{where}", kind, baseline)


PARTITIONERS: tuple[Partitioner, ...] = (
    _entry("node", "metis", "nodes:metis_nodes"),
    _entry("node", "hash", "nodes:hash_nodes"),
    _entry("node", "range", "nodes:range_nodes"),
    _entry("online", "distdy", "online:distdy_partitions"),
    _entry("online", "metis", "online_baselines:metis_partitions", baseline=True),
    _entry("online", "hash", "online_baselines:hash_partitions", baseline=True),
    _entry("online", "greedy", "online_baselines:greedy_partitions", baseline=True),
    _entry("online", "metis_layer", "online_baselines:metis_layer_partitions", baseline=True),
    _entry("vertex", "interval", "vertices:interval_owner", baseline=True),
    _entry("vertex", "range", "vertices:range_owner", baseline=True),
    _entry("vertex", "reflexbicut", "vertices:re_flexbicut"),
)


def names(kind: str, baseline: bool | None = None) -> tuple[str, ...]:
    """The names of ``kind``'s partitioners in registry order (only the baselines, or only the others,
    when ``baseline`` says so)."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of partition '{kind}' (choose from {', '.join(KINDS)})")
    return tuple(p.name for p in PARTITIONERS if p.kind == kind and (baseline is None or p.baseline == baseline))


def partitioner(kind: str, name: str) -> Partitioner:
    """``kind``'s partitioner called ``name``; an unknown name is one line listing ``kind``'s choices."""
    for entry in PARTITIONERS:
        if entry.kind == kind and entry.name == name:
            return entry
    raise ConfigError(f"unknown {KINDS[kind] if kind in KINDS else kind} '{name}' (choose from {', '.join(names(kind))})")


def checked_partition(kind: str, name: str) -> None:
    """A strategy's ``sched.partition``: one line naming the setting and ``kind``'s choices when unknown."""
    if name not in names(kind):
        raise ConfigError(f"unknown sched.partition '{name}' (choose from {', '.join(names(kind))})")


NODE_PARTITIONERS = names("node")
ONLINE_PARTITIONERS = names("online")  # DistDy's own first, then its baselines
VERTEX_PARTITIONERS = names("vertex")

__all__ = [
    "checked_partition",
    "KINDS",
    "NODE_PARTITIONERS",
    "ONLINE_PARTITIONERS",
    "PARTITIONERS",
    "VERTEX_PARTITIONERS",
    "Partitioner",
    "names",
    "partitioner",
]
