"""APAN (Wang et al., 2021) as TGL configures it: attention over a mailbox, mails sent to neighbours."""

from __future__ import annotations

import torch
from torch import nn

from dygsched.models.memory_base import MemoryModel, attend, gather_rows


class APAN(MemoryModel):
    """APAN with TGL semantics (TGL's ``APAN.yml``: transformer memory updater over a mailbox of
    ``mailbox_size`` mails, mails also delivered to the ``neighbours`` most recent neighbours of each
    endpoint, identity embedding).

    Memory (TGL's ``TransformerMemoryUpdater``), for mail slots ``j = 1..B`` with mails ``m_j`` at ``t_j``::

        q   = W_q s
        k_j = W_k [m_j || phi(t_query - t_j)],  v_j = W_v [same]
        a   = per head softmax_j(LeakyReLU_0.2(q . k_j)) over all B slots, dropout
        s'  = ReLU(dropout(MLP(LayerNorm(sum_j a_j v_j + s))))

    Every slot takes part, empty ones included (zero mail at time 0), as in TGL. Embedding (TGL's
    ``IdentityNormLayer``): ``z = LayerNorm(s')``; no neighbours are read (``embedding_neighbours = 0``).
    """

    def __init__(
        self,
        num_nodes: int,
        edge_dim: int,
        memory_dim: int = 100,
        time_dim: int = 100,
        mailbox_size: int = 10,
        neighbours: int = 10,
        heads: int = 2,
        dropout: float = 0.1,
    ) -> None:
        super().__init__(
            num_nodes,
            edge_dim,
            memory_dim,
            time_dim,
            dropout,
            mailbox_size=mailbox_size,
            embedding_neighbours=0,
            mail_neighbours=neighbours,
        )
        if self.memory_dim % heads:
            raise ValueError(f"memory_dim ({memory_dim}) must be a multiple of heads ({heads})")
        self.heads = int(heads)
        self.w_q = nn.Linear(self.memory_dim, self.memory_dim)
        self.w_k = nn.Linear(self.mail_dim + self.time_dim, self.memory_dim)
        self.w_v = nn.Linear(self.mail_dim + self.time_dim, self.memory_dim)
        self.updater_norm = nn.LayerNorm(self.memory_dim)
        self.mlp = nn.Linear(self.memory_dim, self.memory_dim)
        self.att_dropout = nn.Dropout(dropout)
        self.dropout = nn.Dropout(dropout)
        self.norm = nn.LayerNorm(self.memory_dim)

    def update_memory(
        self,
        memory: torch.Tensor,
        memory_time: torch.Tensor,
        mail: torch.Tensor,
        mail_time: torch.Tensor,
        query_time: torch.Tensor,
        rows: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if rows is not None:  # the mailbox attention is per row: expand the vertices' state
            memory, memory_time, mail, mail_time = (gather_rows(v, rows) for v in (memory, memory_time, mail, mail_time))
        self._check_mailbox(memory, mail)
        slots = torch.cat([mail, self.time_encoder(query_time[:, None] - mail_time)], dim=-1)
        attended = attend(self.w_q(memory), self.w_k(slots), self.w_v(slots), None, self.heads, self.att_dropout)
        return torch.relu(self.dropout(self.mlp(self.updater_norm(attended + memory))))

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
        return self.norm(memory)
