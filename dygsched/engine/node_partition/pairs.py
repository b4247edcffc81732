"""Link prediction over a node partition: each pair scored where its source lives.

Under ``task=link`` a node-partitioned rank holds the embeddings of its own nodes only. A pair
``(u, v)`` (a positive of the next snapshot, or one of its negatives ``(u, v')``) is scored by the
rank that owns ``u``; the destination's embedding, when another rank owns it, is fetched by one
``all_to_all_single`` of rows (``exchange_rows``: differentiable, so the gradient of a fetched row
travels back to its owner and adds into its row there).

Every rank knows every pair of a snapshot and the partition, so each works out alone, with no
exchange of requests, which of its rows each peer needs: ``PairRows.plan`` is host arithmetic on
the pairs. The pairs are the same whatever the partition, so the ranks' losses add up to the
one-process loss: the pair objective is exact under FlareDTDG's full blocks (its decayed blocks
score no link: see ``FlareStrategy.check``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from dygsched.engine import comm
from dygsched.engine.node_partition.exchange import exchange_rows


@dataclass(frozen=True)
class PairRows:
    """What this rank sends and receives to score its pairs, and where each pair's rows then sit.

    ``mine``: which of the snapshot's pairs (columns) this rank scores (its source is owned here);
    ``src_rows``/``dst_rows`` (and ``negative_dst_rows``, ``[k, mine]``): each scored pair's rows in
    the owned rows followed by the received ones; ``send_index``: the owned rows sent, peers in rank
    order; ``send_counts``/``recv_counts``: rows per peer."""

    mine: np.ndarray
    src_rows: torch.Tensor
    dst_rows: torch.Tensor
    negative_dst_rows: torch.Tensor
    send_index: torch.Tensor
    send_counts: tuple[int, ...]
    recv_counts: tuple[int, ...]

    @classmethod
    def plan(
        cls, pairs: np.ndarray, negatives: np.ndarray, part: np.ndarray, local: np.ndarray, rank: int, world_size: int
    ) -> PairRows:
        """``pairs`` ``[2, P]`` and negative destinations ``[k, P]`` in node ids; ``part[v]``: the
        owner of node ``v`` among ``world_size`` ranks; ``local[v]``: its owned row here (-1 elsewhere)."""
        owner = part[pairs[0]]  # who scores each pair
        # every destination a scoring rank reads, as (scorer, node) keys, once each
        scorers = np.concatenate([owner, np.tile(owner, negatives.shape[0])])
        reads = np.concatenate([pairs[1], negatives.reshape(-1)])
        remote = part[reads] != scorers
        keys = np.unique(scorers[remote] * part.size + reads[remote])
        scorer, node = keys // part.size, keys % part.size
        holder = part[node]
        # received here: my remote reads, by holder then id; sent from here: peers' reads of my rows
        received = node[scorer == rank]
        received = received[np.lexsort((received, holder[scorer == rank]))]
        sent = (holder == rank) & (scorer != rank)
        sent_nodes, sent_to = node[sent], scorer[sent]
        order = np.lexsort((sent_nodes, sent_to))
        row = local.copy()
        row[received] = int((local >= 0).sum()) + np.arange(received.size)
        mine = np.flatnonzero(owner == rank)
        return cls(
            mine=mine,
            src_rows=torch.from_numpy(row[pairs[0, mine]]),
            dst_rows=torch.from_numpy(row[pairs[1, mine]]),
            negative_dst_rows=torch.from_numpy(row[negatives[:, mine]]),
            send_index=torch.from_numpy(local[sent_nodes[order]]),
            send_counts=tuple(np.bincount(sent_to, minlength=world_size).tolist()),
            recv_counts=tuple(np.bincount(part[received], minlength=world_size).tolist()),
        )

    def rows(self, z: torch.Tensor) -> torch.Tensor:
        """The owned rows ``z`` followed by the rows received from their owners (differentiable)."""
        sent = z.index_select(0, on_device(self.send_index, z.device))
        return torch.cat([z, exchange_rows(sent, self.send_counts, self.recv_counts)])

    def scored_rows(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``src_rows``, ``dst_rows`` and ``negative_dst_rows`` on ``device`` (page-locked copies on a GPU)."""
        return on_device(self.src_rows, device), on_device(self.dst_rows, device), on_device(self.negative_dst_rows, device)

    @property
    def rows_sent(self) -> int:
        """Rows this rank sends (forward; their gradients come back as many)."""
        return int(sum(self.send_counts))


def on_device(index: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A host index built for this step, on ``device``: from page-locked memory on a GPU, so the copy
    is queued without the host waiting for it."""
    return index.pin_memory().to(device, non_blocking=True) if device.type == "cuda" else index


def every_row(nodes: np.ndarray, rows: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """``[num_nodes, d]`` on the host: every rank's ``rows`` (those of its ``nodes``) in node order, zeros
    where no rank has one; the same on every rank (one object gather, for evaluation: every rank then
    scores every pair on the whole graph's rows)."""
    every = torch.zeros(num_nodes, rows.shape[1], dtype=rows.dtype)
    for held, values in comm.all_gather_object((nodes, rows.cpu())):
        every[torch.from_numpy(held)] = values
    return every
