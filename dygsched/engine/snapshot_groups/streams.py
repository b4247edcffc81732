"""CUDA streams for pipelined executors, with a CPU stand-in that runs the same code in order.

``Streams`` names the three streams of REAL's pipeline (section 4.1.3): ``copy`` for host-to-device
transfers, ``conv`` for the first layer's graph convolutions and the main stream for the dense work
(transformations, recurrent cells, backward). Work is handed from one stream to the next with
events (``handoff``), so each stage waits only for what it reads. On CPU, or with streams off,
every context is a no-op and the code runs in program order: one code path for both.

Host-to-device copies are asynchronous (``non_blocking=True``) only from page-locked memory: a
run on CUDA pins its graph's tensors once (``pinned_graph``) when the data reaches its rank. Pinned
memory is a process's own, so each rank of a node pins a copy (the ranks of the local launcher share
the loaded graph, a memory-mapped file, but not their pinned copies); docs/architecture.md says why
one registered copy per node is not done yet.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

import torch

from dygsched.data.temporal_graph import Snapshot, TemporalGraph


def record_stream(value: Any, stream: torch.cuda.Stream) -> None:
    """Tell the caching allocator that tensors made on another stream are used on ``stream``.

    Walks tensors, tuples/lists, snapshots and frozen dataclasses of tensors (edge sets, diff maps).
    """
    if isinstance(value, torch.Tensor):
        if value.is_cuda:
            value.record_stream(stream)
    elif isinstance(value, (tuple, list)):
        for item in value:
            record_stream(item, stream)
    elif isinstance(value, Snapshot):
        for tensor in (value.edge_index, value.edge_weight, value.x, value.y, value.node_mask):
            record_stream(tensor, stream)
    elif hasattr(value, "__dataclass_fields__"):
        for name in value.__dataclass_fields__:
            record_stream(getattr(value, name), stream)


def pinned_graph(graph: TemporalGraph, device: torch.device) -> TemporalGraph:
    """``graph`` with every snapshot tensor in page-locked memory when ``device`` is a CUDA device
    (so its ``non_blocking`` copies overlap), else ``graph`` itself. A tensor that snapshots share
    (features, weights) is pinned once and stays shared."""
    if device.type != "cuda" or not torch.cuda.is_available():
        return graph
    pinned: dict[int, torch.Tensor] = {}

    def pin(tensor: torch.Tensor) -> torch.Tensor:
        if id(tensor) not in pinned:
            pinned[id(tensor)] = tensor if tensor.is_cuda or tensor.is_pinned() else tensor.pin_memory()
        return pinned[id(tensor)]

    def pinned_snapshot(s: Snapshot) -> Snapshot:
        links = None if s.links is None else pin(s.links)
        return replace(
            s,
            edge_index=pin(s.edge_index),
            edge_weight=pin(s.edge_weight),
            x=pin(s.x),
            y=pin(s.y),
            node_mask=pin(s.node_mask),
            links=links,
        )

    snapshots = tuple(pinned_snapshot(s) for s in graph.snapshots)
    return replace(graph, snapshots=snapshots)


@dataclass
class Streams:
    """The copy and conv streams on a CUDA device (``None`` on CPU or when disabled)."""

    device: torch.device
    copy: torch.cuda.Stream | None = None
    conv: torch.cuda.Stream | None = None

    @classmethod
    def create(cls, device: torch.device, enabled: bool) -> Streams:
        if device.type != "cuda" or not enabled:
            return cls(device)
        return cls(device, torch.cuda.Stream(device), torch.cuda.Stream(device))

    @property
    def active(self) -> bool:
        return self.copy is not None

    def on(self, stream: torch.cuda.Stream | None) -> AbstractContextManager[Any]:
        return torch.cuda.stream(stream) if stream is not None else nullcontext()

    def mark(self, stream: torch.cuda.Stream | None) -> torch.cuda.Event | None:
        """An event recorded on ``stream`` now: the point a consumer waits for (``handoff_at``)."""
        if stream is None:
            return None
        event = torch.cuda.Event()
        event.record(stream)
        return event

    def handoff_at(self, produced: Any, ready: torch.cuda.Event | None, consumer: torch.cuda.Stream | None = None) -> None:
        """Make ``consumer`` (default: the current stream) wait for ``ready`` alone (not for what its
        stream queued after it) and own ``produced``."""
        if ready is None:
            return
        consumer = consumer if consumer is not None else torch.cuda.current_stream(self.device)
        consumer.wait_event(ready)
        record_stream(produced, consumer)

    def handoff(self, produced: Any, producer: torch.cuda.Stream | None, consumer: torch.cuda.Stream | None = None) -> None:
        """Make ``consumer`` (default: the current stream) wait for ``producer`` and own ``produced``."""
        if producer is None:
            return
        consumer = consumer if consumer is not None else torch.cuda.current_stream(self.device)
        consumer.wait_stream(producer)
        record_stream(produced, consumer)
