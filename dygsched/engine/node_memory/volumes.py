"""What the node-memory strategies read, write and move between ranks, counted in one process.

Which vertices a training step reads and writes depends only on the stream, the batch size, the
rank count and the seed (the recent-neighbour series, the seeded negatives), never on the model's
values. So an epoch's traffic for any number of *virtual* ranks is counted here exactly, rank pair by
rank pair, as the strategies move it (a test checks the counts against what real gloo ranks
record), and the partitioners get their pre-sampling demand from the same reads.

``epoch_reads`` yields, per global batch and rank, the series (every occurrence), the positive
endpoints written and the vertices that receive a delivered mail (APAN). ``dispatch_pairs`` gives
Sven's dispatch per step and trainer pair (what section 5.4's balance cost reads). ``count_traffic`` turns
them into bytes per kind, ``[from rank, to rank]``, for ``depcache``, ``depcomm`` and ``sven``
under an owner map, with the row sizes of a model (``RowSizes``):

* Sven: the ids of the distinct foreign vertices of a series go to their owners (``dispatch_index``)
  and their packed rows come back (``dispatch``); each distinct written vertex goes to its owner
  once (``aggregate`` and its ``aggregate_index``: id and key).
* DepComm: an (id, time) request per foreign occurrence (``dispatch_index``), an (s', tau) reply
  (``dispatch``) and its gradient back in the backward (``dispatch_grad``); writes as Sven's.
* DepCache: each rank's distinct writes to every other rank; no dispatch.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from dygsched.data.event_batches import RecentNeighbours, batch_series, negative_destinations, rank_slice, relative_times
from dygsched.data.events import EventStream
from dygsched.engine.node_memory.state import packed_row_width

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

    from dygsched.models.memory_base import MemoryModel

STRATEGIES = ("depcache", "depcomm", "sven")
ID = 8  # bytes of an int64 id or key


@dataclass(frozen=True)
class RowSizes:
    """Bytes per row of each exchange, from a memory model's widths."""

    memory_dim: int
    mail_dim: int
    mailbox_size: int
    value_bytes: int = 4  # a float32 state value

    @classmethod
    def of(cls, model: MemoryModel) -> RowSizes:
        value_bytes = next(model.parameters()).element_size()
        return cls(int(model.memory_dim), int(model.mail_dim), int(model.mailbox_size), value_bytes)

    @property
    def packed(self) -> int:  # Sven's dispatch row: NodeStateTable.pack
        return self.value_bytes * packed_row_width(self.memory_dim, self.mail_dim, self.mailbox_size)

    @property
    def reply(self) -> int:  # DepComm: s' and tau
        return self.value_bytes * (self.memory_dim + 1)

    @property
    def write(self) -> int:  # an endpoint's memory, time and mail
        return self.value_bytes * (self.memory_dim + 1 + self.mail_dim)

    @property
    def delivery(self) -> int:  # a delivered mail and its time
        return self.value_bytes * (self.mail_dim + 1)


@dataclass(frozen=True)
class RankReads:
    batch: int
    rank: int
    series: torch.Tensor  # every vertex occurrence the rank's slice reads
    written: torch.Tensor  # its positive endpoints (sources, destinations)
    delivered: torch.Tensor  # the vertices its endpoints deliver mail to (APAN's neighbours)


def epoch_reads(
    stream: EventStream,
    events: tuple[int, int],
    batch_size: int,
    world_size: int,
    seed: int,
    epoch: int,
    embedding_neighbours: int,
    mail_neighbours: int = 0,
    sampler: RecentNeighbours | None = None,
) -> Iterator[RankReads]:
    """The reads and writes of every training step over ``events`` (``[start, stop)``), rank by rank."""
    times = relative_times(stream)
    sampler = sampler or RecentNeighbours(stream, times)
    start, stop = events
    for index, (g0, g1) in enumerate(stream.batches(start, stop, batch_size * world_size)):
        negatives = negative_destinations(seed, "train", epoch, index, g1 - g0, stream.num_nodes)[0]
        for rank in range(world_size):
            a, b = rank_slice(g0, g1, rank, world_size)
            src, dst, t = stream.src[a:b], stream.dst[a:b], times[a:b]
            read = batch_series(sampler, src, dst, negatives[a - g0 : b - g0], t, embedding_neighbours)
            written = torch.cat([src, dst])
            delivered = torch.zeros(0, dtype=torch.int64)
            if mail_neighbours:
                sampled = sampler.sample(written, t.repeat(2), mail_neighbours)
                delivered = sampled.nodes[sampled.mask]
            yield RankReads(index, rank, read.vertices, written, delivered)


def demand_matrix(reads: Iterator[RankReads], world_size: int, num_nodes: int) -> csr_matrix:
    """Re-FlexBiCut's pre-sampling: ``[rank, vertex]`` = the steps in which the rank's series holds the vertex (scipy CSR)."""
    from scipy.sparse import coo_matrix

    rows, cols = [], []
    for read in reads:
        unique = torch.unique(read.series).numpy()
        rows.append(np.full(unique.size, read.rank))
        cols.append(unique)
    row = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    col = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    return coo_matrix((np.ones(row.size), (row, col)), shape=(world_size, num_nodes)).tocsr()


def dispatch_pairs(reads: Iterator[RankReads], owner: np.ndarray, world_size: int) -> np.ndarray:
    """Sven's dispatch, step by step: ``[steps, M, M]`` with ``[s, i, j]`` the distinct vertices of
    trainer ``i``'s series in step ``s`` that trainer ``j`` owns (the rows ``i`` receives from ``j``,
    in units of one vertex's N&M; the diagonal is what ``i`` owns itself, never sent, kept 0)."""
    owner = np.asarray(owner)
    steps: dict[int, np.ndarray] = {}
    for read in reads:
        matrix = steps.setdefault(read.batch, np.zeros((world_size, world_size), np.int64))
        matrix[read.rank] += np.bincount(owner[torch.unique(read.series).numpy()], minlength=world_size)
    pairs = np.stack([steps[index] for index in sorted(steps)]) if steps else np.zeros((0, world_size, world_size), np.int64)
    pairs[:, np.arange(world_size), np.arange(world_size)] = 0
    return pairs


def count_traffic(
    reads: Iterator[RankReads], owner: np.ndarray, world_size: int, sizes: RowSizes
) -> dict[str, dict[str, np.ndarray]]:
    """Bytes per strategy and kind, ``[from, to]`` (the diagonal, a rank's own rows, stays 0)."""
    owner = np.asarray(owner)
    out: dict[str, dict[str, np.ndarray]] = {name: {} for name in STRATEGIES}

    def add(strategy: str, kind: str, source: int, targets: np.ndarray, row_bytes: int, backwards: bool = False) -> None:
        per_peer = np.bincount(targets, minlength=world_size).astype(np.int64) * row_bytes
        per_peer[source] = 0
        matrix = out[strategy].setdefault(kind, np.zeros((world_size, world_size), np.int64))
        if backwards:  # the owners send to ``source``
            matrix[:, source] += per_peer
        else:
            matrix[source] += per_peer

    for read in reads:
        r = read.rank
        occurrences = owner[read.series.numpy()]
        distinct = owner[torch.unique(read.series).numpy()]
        written = torch.unique(read.written).numpy()
        delivered = torch.unique(read.delivered).numpy()
        add("sven", "dispatch_index", r, distinct, ID)
        add("sven", "dispatch", r, distinct, sizes.packed, backwards=True)
        add("depcomm", "dispatch_index", r, occurrences, 2 * ID)
        add("depcomm", "dispatch", r, occurrences, sizes.reply, backwards=True)
        add("depcomm", "dispatch_grad", r, occurrences, sizes.reply)
        everyone = np.arange(world_size)
        for strategy in ("sven", "depcomm"):
            add(strategy, "aggregate", r, owner[written], sizes.write)
            add(strategy, "aggregate_index", r, owner[written], 2 * ID)
            add(strategy, "aggregate", r, owner[delivered], sizes.delivery)
            add(strategy, "aggregate_index", r, owner[delivered], 2 * ID)
        add("depcache", "aggregate", r, np.repeat(everyone, written.size), sizes.write)
        add("depcache", "aggregate_index", r, np.repeat(everyone, written.size), 2 * ID)
        add("depcache", "aggregate", r, np.repeat(everyone, delivered.size), sizes.delivery)
        add("depcache", "aggregate_index", r, np.repeat(everyone, delivered.size), 2 * ID)
    return out
