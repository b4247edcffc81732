"""What a memory-based continuous-time model reads of an ``EventStream`` per batch.

* ``RecentNeighbours``: each node's ``k`` most recent neighbours strictly before a query time
  (TGL's "recent" sampler). Every event ``(u, v, t)`` makes ``v`` a neighbour of ``u`` and ``u`` a
  neighbour of ``v`` at ``t`` (a self-loop once). Queries are vectorised: the neighbour lists are one
  array sorted by (node, time, event), and a query is one ``searchsorted``.
* ``negative_destinations``: uniformly random destinations from all nodes (TGL's and TGLite's
  rule), ``per_event`` of them per event, drawn from a generator seeded by (seed, phase, epoch,
  global batch), so every rank draws the same global batch's negatives and takes its slice: a run
  on ``M`` ranks with batch ``b`` sees exactly the negatives of one process with batch ``M b``.
* ``rank_slice``: a rank's contiguous share of a global batch.
* ``batch_series``: what a slice of events reads: its roots (sources, destinations, negatives) at
  the events' times, their ``k`` recent neighbours, and the flattened series of both (the vertices
  whose node state the batch needs, roots first).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from dygsched.data.events import EventStream

PHASE_CODES = {"train": 0, "val": 1, "test": 2, "val_new": 3, "test_new": 4}
# ``eval.inductive=apart`` (DyGLib's protocol): a second pass over a phase's events with a new
# endpoint, replayed alone; its batches name the pass, so its draws are seeded apart from the phase's
NEW_NODE_PASSES = {"val": "val_new", "test": "test_new"}


def evaluated_phase(phase: str) -> str:
    """The phase whose events a batch's phase reads: ``test`` for ``test_new`` (a new-node pass)."""
    return next((base for base, new_node_pass in NEW_NODE_PASSES.items() if new_node_pass == phase), phase)


@dataclass(frozen=True)
class SampledNeighbours:
    """Per query row: ``nodes``, ``times`` and ``events`` of up to ``k`` neighbours, oldest first,
    ``mask`` False on padding (padding rows hold node 0, time 0, event -1)."""

    nodes: torch.Tensor
    times: torch.Tensor
    events: torch.Tensor
    mask: torch.Tensor


class RecentNeighbours:
    """The ``k`` most recent neighbours of a node with an event time strictly below the query time."""

    def __init__(self, stream: EventStream, times: torch.Tensor | None = None, events: torch.Tensor | None = None) -> None:
        """``events``: the stream indices that make neighbours (default: every event); the
        sampled ``events`` are stream indices either way."""
        times = stream.t if times is None else times
        event = torch.arange(stream.num_events) if events is None else events
        src, dst = stream.src[event], stream.dst[event]
        keep = src != dst  # a self-loop once: only its forward copy
        owner = torch.cat([src, dst[keep]])
        other = torch.cat([dst, src[keep]])
        events = torch.cat([event, event[keep]])
        # Time ranks make the (node, time) key exact integers whatever the timestamps are.
        distinct, time_rank = torch.unique(times, return_inverse=True)
        self._distinct_times = distinct
        self._stride = int(distinct.numel()) + 1
        key = owner * self._stride + time_rank[events]
        order = torch.argsort(key * (stream.num_events + 1) + events)  # by node, then time, then event
        self._key = key[order].contiguous()
        self._neighbour = other[order]
        self._event = events[order]
        self._time = times[events[order]]
        self.num_nodes = stream.num_nodes

    def sample(self, nodes: torch.Tensor, query_times: torch.Tensor, k: int) -> SampledNeighbours:
        rows = int(nodes.numel())
        if k == 0 or rows == 0:
            empty_long = torch.zeros(rows, k, dtype=torch.int64)
            return SampledNeighbours(
                empty_long, torch.zeros(rows, k, dtype=self._time.dtype), empty_long - 1, torch.zeros(rows, k, dtype=torch.bool)
            )
        # First position whose time is >= the query time: every earlier slot of the same node is strictly earlier.
        query_rank = torch.searchsorted(self._distinct_times, query_times.to(self._distinct_times.dtype), right=False)
        stop = torch.searchsorted(self._key, nodes * self._stride + query_rank, right=False)
        start_of_node = torch.searchsorted(self._key, nodes * self._stride, right=False)
        slots = stop[:, None] - k + torch.arange(k)[None, :]
        mask = slots >= start_of_node[:, None]
        safe = slots.clamp(min=0)
        return SampledNeighbours(
            torch.where(mask, self._neighbour[safe], 0),
            torch.where(mask, self._time[safe], torch.zeros((), dtype=self._time.dtype)),
            torch.where(mask, self._event[safe], -1),
            mask,
        )


def negative_destinations(
    seed: int, phase: str, epoch: int, global_batch: int, count: int, num_nodes: int, per_event: int = 1
) -> torch.Tensor:
    """``[per_event, count]`` uniform destinations in ``[0, num_nodes)`` for the ``count`` events of
    one global batch (the same on every rank); row 0 is the same whatever ``per_event`` is."""
    entropy = np.random.SeedSequence([int(seed), PHASE_CODES[phase], int(epoch), int(global_batch)])
    generator = torch.Generator().manual_seed(int(entropy.generate_state(1, dtype=np.uint64)[0] >> 1))
    return torch.randint(0, num_nodes, (per_event * count,), generator=generator).view(per_event, count)


def rank_slice(start: int, stop: int, rank: int, world_size: int) -> tuple[int, int]:
    """Rank ``rank``'s contiguous share of the events ``[start, stop)`` (sizes differ by at most one)."""
    count = stop - start
    return start + count * rank // world_size, start + count * (rank + 1) // world_size


@dataclass(frozen=True)
class BatchSeries:
    roots: torch.Tensor  # [(2 + m) n (+ extra)]: sources, destinations, m blocks of n negatives (then any extra roots)
    root_times: torch.Tensor  # [(2 + m) n]
    neighbours: SampledNeighbours  # [(2 + m) n, k]
    vertices: torch.Tensor  # roots, then the sampled neighbours row by row
    times: torch.Tensor  # each series vertex's query time (its root's)


def batch_series(
    sampler: RecentNeighbours,
    src: torch.Tensor,
    dst: torch.Tensor,
    negatives: torch.Tensor,
    times: torch.Tensor,
    k: int,
    extra: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> BatchSeries:
    """``extra``: more roots (vertices, query times) after the link roots (node property prediction's rows)."""
    roots = torch.cat([src, dst, negatives])
    root_times = times.repeat(roots.numel() // max(times.numel(), 1))
    if extra is not None:
        roots, root_times = torch.cat([roots, extra[0]]), torch.cat([root_times, extra[1].to(root_times.dtype)])
    sampled = sampler.sample(roots, root_times, k)
    vertices = torch.cat([roots, sampled.nodes[sampled.mask]])
    series_times = torch.cat([root_times, root_times[:, None].expand(-1, k)[sampled.mask]])
    return BatchSeries(roots, root_times, sampled, vertices, series_times)


def relative_times(stream: EventStream) -> torch.Tensor:
    """Event times shifted so the stream starts at 0, in the default floating dtype (float32 unless
    a caller changes it): what the models and the sampler see."""
    return (stream.t - stream.t[0]).to(torch.get_default_dtype())
