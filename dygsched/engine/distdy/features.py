"""The features a rank's sampled neighbourhoods read, from the additive stores that hold them (section 3.1).

A rank computes the structural embeddings of its targets in each snapshot of the window; the nodes
their neighbourhoods read live on whichever store that snapshot placed them. ``fetch_features``
reads its own from its store and asks the other stores for the rest: one all-to-all of requests
(``(slot, node)``), one of rows, each rank answering from its store's reconstruction of the
snapshot (``GraphStore.features``). It counts what it moves: bytes per peer, in and out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from dygsched.data.partition.snapshot_graph import SnapshotPartition
from dygsched.engine.distdy.sampler import Neighbourhood
from dygsched.engine.node_partition.exchange import exchange_counts, exchange_rows
from dygsched.engine.strategy import IterationStats
from dygsched.engine.timing import HOST, Region


def fetch_features(
    window: list[int],
    hoods: Mapping[int, Neighbourhood],
    held: Mapping[int, tuple[np.ndarray, np.ndarray]],
    placements: Sequence[SnapshotPartition],
    rank: int,
    world_size: int,
    width: int,
    traffic: dict[str, Any],
    stats: IterationStats,
) -> dict[int, torch.Tensor]:
    """The ``width`` features of every node of this rank's neighbourhoods (``hoods``, per snapshot of
    ``window``): its own from its store (``held``: per snapshot, its nodes and rows), the others from
    their stores, ordered by (owner, slot, node)."""
    slot_of = np.concatenate([np.full(hoods[t].nodes.size, slot) for slot, t in enumerate(window)])
    nodes = np.concatenate([hoods[t].nodes for t in window])
    owner = np.concatenate([placements[t].store[hoods[t].nodes] for t in window])
    remote = np.flatnonzero(owner != rank)
    remote = remote[np.argsort(owner[remote], kind="stable")]
    send_counts = np.bincount(owner[remote], minlength=world_size).tolist()
    fetching = Region(HOST)  # host requests and rows through gloo, and the host's lookups: the host clock
    recv_counts = exchange_counts(send_counts)
    asked = torch.from_numpy(np.stack([slot_of[remote], nodes[remote]], axis=1).astype(np.int64))
    incoming = exchange_rows(asked, send_counts, recv_counts).numpy() if world_size > 1 else asked.numpy()[:0]
    answers = np.zeros((len(incoming), width), dtype=np.float32)  # the requests this rank received, from its store
    for slot, t in enumerate(window):
        ask = np.flatnonzero(incoming[:, 0] == slot)
        if ask.size:
            held_nodes, held_rows = held[t]
            answers[ask] = held_rows[np.searchsorted(held_nodes, incoming[ask, 1])]
    replies = exchange_rows(torch.from_numpy(answers), recv_counts, send_counts) if world_size > 1 else torch.from_numpy(answers)
    stats.add_time("comm_s", fetching.stop())
    row_bytes = width * answers.itemsize
    for q in range(world_size):
        if q != rank:
            traffic["fetch_out"][q] += recv_counts[q] * row_bytes
            traffic["fetch_in"][q] += send_counts[q] * row_bytes
    stats.add_bytes("feature_fetch", sum(recv_counts[q] for q in range(world_size) if q != rank) * row_bytes)
    rows = np.zeros((nodes.size, width), dtype=np.float32)
    rows[remote] = replies.numpy()
    out, offset = {}, 0
    for t in window:
        count = hoods[t].nodes.size
        local = offset + np.flatnonzero(owner[offset : offset + count] == rank)
        if local.size:
            held_nodes, held_rows = held[t]
            rows[local] = held_rows[np.searchsorted(held_nodes, nodes[local])]
        out[t] = torch.from_numpy(rows[offset : offset + count])
        offset += count
    return out
