"""TGN (Rossi et al., 2020) as TGL configures it: a GRU memory and one temporal-attention layer."""

from __future__ import annotations

import torch
from torch import nn

from dygsched.models.memory_base import RecurrentMemoryModel, TimeEncoding, attend, gather_rows


class TemporalAttention(nn.Module):
    """TGL's ``TransfomerAttentionLayer`` (one layer, no node features besides the memory).

    For a root with memory ``s'``, queried at ``t``, and neighbours ``j`` (memory ``s'_j``, event
    time ``t_j``, features ``e_j``)::

        q   = W_q [s' || phi(0)]
        k_j = W_k [s'_j || e_j || phi(t - t_j)],  v_j = W_v [same]
        a   = per head softmax_j(LeakyReLU_0.2(q . k_j)) over the valid neighbours, dropout
        z   = LayerNorm(ReLU(dropout(W_out [sum_j a_j v_j || s'])))

    A root with no valid neighbour gets a zero attention sum (so ``z = LN(ReLU(W_out [0 || s']))``).
    Deviation: TGL returns all-zero embeddings for a whole batch whose sampled block has no edge at
    all; here every root is computed the same way (rows stay independent).
    """

    def __init__(self, memory_dim: int, edge_dim: int, time_dim: int, out_dim: int, heads: int, dropout: float) -> None:
        super().__init__()
        if out_dim % heads:
            raise ValueError(f"the attention output ({out_dim}) must be a multiple of heads ({heads})")
        self.heads = heads
        self.time_encoder = TimeEncoding(time_dim)
        self.w_q = nn.Linear(memory_dim + time_dim, out_dim)
        self.w_k = nn.Linear(memory_dim + edge_dim + time_dim, out_dim)
        self.w_v = nn.Linear(memory_dim + edge_dim + time_dim, out_dim)
        self.w_out = nn.Linear(out_dim + memory_dim, out_dim)
        self.att_dropout = nn.Dropout(dropout)
        self.dropout = nn.Dropout(dropout)
        self.norm = nn.LayerNorm(out_dim)

    def forward(
        self,
        memory: torch.Tensor,
        query_time: torch.Tensor,
        neighbour_memory: torch.Tensor,
        neighbour_time: torch.Tensor,
        neighbour_edge: torch.Tensor,
        neighbour_mask: torch.Tensor,
        neighbour_edge_index: torch.Tensor | None = None,
    ) -> torch.Tensor:
        zero_time = self.time_encoder(torch.zeros_like(query_time))
        query = self.w_q(torch.cat([memory, zero_time], dim=-1))
        time_code = self.time_encoder(query_time[:, None] - neighbour_time)
        if neighbour_edge_index is None:
            neighbour = torch.cat([neighbour_memory, neighbour_edge.to(memory.dtype), time_code], dim=-1)
            key, value = self.w_k(neighbour), self.w_v(neighbour)
        else:
            key, value = self._keys_values(neighbour_memory, neighbour_edge.to(memory.dtype), neighbour_edge_index, time_code)
        attended = attend(query, key, value, neighbour_mask.bool(), self.heads, self.att_dropout)
        out = self.w_out(torch.cat([attended, memory], dim=-1))
        return self.norm(torch.relu(self.dropout(out)))

    def _keys_values(
        self, neighbour_memory: torch.Tensor, edge_rows: torch.Tensor, edge_index: torch.Tensor, time_code: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``W_k`` and ``W_v`` of ``[s'_j || e_j || phi]`` as one product over the columns that vary
        per neighbour row (memory and time) plus the edge columns' product taken once per distinct
        event (``edge_rows[edge_index]``): the same values up to float rounding, and the features,
        constant inputs, need no gradient of their own. Neighbours repeat across a batch's roots."""
        memory_dim, edge_dim, out = neighbour_memory.shape[-1], edge_rows.shape[-1], self.w_k.out_features
        weight = torch.cat([self.w_k.weight, self.w_v.weight])  # [2 out, memory + edge + time]
        per_row = torch.cat([weight[:, :memory_dim], weight[:, memory_dim + edge_dim :]], dim=1)
        kv = nn.functional.linear(
            torch.cat([neighbour_memory, time_code], dim=-1), per_row, torch.cat([self.w_k.bias, self.w_v.bias])
        )
        if edge_dim:
            kv = kv + gather_rows(nn.functional.linear(edge_rows, weight[:, memory_dim : memory_dim + edge_dim]), edge_index)
        return kv[..., :out], kv[..., out:]


class TGN(RecurrentMemoryModel):
    """TGN with TGL semantics (TGL's ``TGN.yml``: GRU memory, mailbox of 1, one attention layer).

    Memory (TGL's ``GRUMemeoryUpdater``), with the node's one (latest) mail ``m`` (``B = 1``)::

        s' = GRUCell([m || phi(t_query - tau)], s)

    ``mail_time`` is not read (TGL encodes ``t_query - tau``, not the mail's age). Embedding: one layer
    of ``heads``-head temporal attention over the ``neighbours`` most recent neighbours
    (``TemporalAttention``, TGL's ``TransfomerAttentionLayer``), output width ``memory_dim``.
    Deviation: TGL's memory updater adds node features to ``s'`` when a data set has them; events
    here carry at most an edge weight, so there are none.
    """

    def __init__(
        self,
        num_nodes: int,
        edge_dim: int,
        memory_dim: int = 100,
        time_dim: int = 100,
        neighbours: int = 10,
        heads: int = 2,
        dropout: float = 0.1,
    ) -> None:
        super().__init__(
            num_nodes, edge_dim, memory_dim, time_dim, dropout, mailbox_size=1, embedding_neighbours=neighbours, mail_neighbours=0
        )
        self.heads = int(heads)
        self.updater = nn.GRUCell(self.mail_dim + self.time_dim, self.memory_dim)
        self.attention = TemporalAttention(self.memory_dim, self.edge_dim, self.time_dim, self.embedding_dim, self.heads, dropout)

    def embed(
        self,
        memory: torch.Tensor,
        memory_time: torch.Tensor,
        query_time: torch.Tensor,
        neighbour_memory: torch.Tensor,
        neighbour_time: torch.Tensor,
        neighbour_edge: torch.Tensor,
        neighbour_mask: torch.Tensor,
        neighbour_edge_index: torch.Tensor | None = None,
    ) -> torch.Tensor:
        return self.attention(
            memory, query_time, neighbour_memory, neighbour_time, neighbour_edge, neighbour_mask, neighbour_edge_index
        )
