"""What a memory-based continuous-time temporal GNN looks like to the engine (TGL semantics).

Each node ``v`` has a memory ``s_v``, the time ``tau_v`` of its last update and a mailbox of ``B``
mails ``(m, t_m)``. None of that state lives in the model: the engine stores it (sharded over ranks),
gathers the rows a batch needs and calls

* ``update_memory``: ``s'``, the memory after applying the stored mail(s), row by row;
* ``embed``: the roots' embeddings ``z`` from their ``s'`` (and, for TGN, their neighbours' ``s'``);
* ``score``: the link-prediction logits of (source, destination) embedding pairs;
* ``mail``: the mail an event leaves at an endpoint, ``[s'_self || s'_other || e]``.

Every method is row-independent: row ``i`` of an output depends on row ``i`` of the inputs alone (no
batch norm, no cross-row reductions), so the engine can compute any subset of rows, in any order or
on another rank, and get the same values. Randomness only comes from ``nn.Dropout`` modules, so a
model built with ``dropout=0`` (or in ``eval()`` mode) is deterministic.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
from torch import nn
from torch_geometric.nn.models.tgn import TimeEncoder

LEAKY_SLOPE = 0.2  # TGL's attention activation: LeakyReLU(0.2) on the raw dot products (no 1/sqrt(d) scaling)


class TimeEncoding(TimeEncoder):
    """TGL's ``TimeEncode``: ``phi(dt) = cos(w dt + b)`` with ``w_k = 10^(-9k/(d-1))`` and ``b = 0`` at
    initialisation, both trainable.

    PyG's ``TimeEncoder`` (a ``Linear(1, d)`` and a cosine) with TGL's initialisation (PyG's default is
    a uniform one, which ``reset_parameters`` here replaces). Unlike PyG's, ``forward`` takes ``dt`` of
    any shape ``[...]`` and returns ``[..., d]``.
    """

    def __init__(self, out_channels: int) -> None:
        if out_channels < 1:
            raise ValueError(f"the time encoding needs at least one dimension, got {out_channels}")
        super().__init__(out_channels)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        d = self.out_channels
        exponent = torch.linspace(0.0, 9.0, d, dtype=torch.float64) if d > 1 else torch.zeros(1, dtype=torch.float64)
        with torch.no_grad():
            self.lin.weight.copy_((10.0**-exponent).to(torch.float32).reshape(d, 1))
            self.lin.bias.zero_()

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return super().forward(t.reshape(-1)).reshape(*t.shape, self.out_channels)


def gather_rows(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``x[index]`` for an integer ``index`` of any shape, through ``index_select``: on a CPU its
    backward (``index_add_``) is about 4.7x faster than advanced indexing's (``index_put_`` with
    accumulation) for ``[10000, 300]`` rows of 2,000."""
    return x.index_select(0, index.reshape(-1)).reshape(*index.shape, *x.shape[1:])


def recurrent_step(
    cell: nn.GRUCell | nn.RNNCell, per_vertex: torch.Tensor, per_row: torch.Tensor, hidden: torch.Tensor, rows: torch.Tensor
) -> torch.Tensor:
    """``cell([per_vertex[rows] || per_row], hidden[rows])`` with the products of what is per vertex
    (its input columns and its hidden state) computed once per vertex, then gathered: the cell's
    equations (PyTorch's ``GRUCell``, or a tanh ``RNNCell``) on every row, the same values up to
    float rounding. A batch's series reads each vertex at several times (5.3 rows per vertex on
    the Wikipedia-sized stream), so the updater's matrix products shrink by about that much."""
    width = per_vertex.shape[-1]
    gi = gather_rows(nn.functional.linear(per_vertex, cell.weight_ih[:, :width]), rows)
    gi = gi + nn.functional.linear(per_row, cell.weight_ih[:, width:], cell.bias_ih)
    gh = gather_rows(nn.functional.linear(hidden, cell.weight_hh, cell.bias_hh), rows)
    if isinstance(cell, nn.RNNCell):
        if cell.nonlinearity != "tanh":
            raise ValueError("recurrent_step supports tanh RNN cells")
        return torch.tanh(gi + gh)
    i_r, i_z, i_n = gi.chunk(3, dim=1)
    h_r, h_z, h_n = gh.chunk(3, dim=1)
    r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)
    return torch.lerp(n, gather_rows(hidden, rows), z)  # (1 - z) n + z h


class LinkPredictor(nn.Module):
    """TGL's ``EdgePredictor``: ``logit = w_o . ReLU(W_s z_u + b_s + W_d z_v + b_d) + b_o``."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.src = nn.Linear(dim, dim)
        self.dst = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, 1)

    def forward(self, z_src: torch.Tensor, z_dst: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.src(z_src) + self.dst(z_dst))).squeeze(-1)


def attend(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None, heads: int, dropout: nn.Module
) -> torch.Tensor:
    """Multi-head attention of one query per row over that row's ``k`` keys, TGL's way.

    ``query [n, d]``, ``key``/``value [n, k, d]``, ``mask [n, k]`` bool (False: padding) or None (all
    valid). Per head ``h``: ``a = softmax_j(LeakyReLU_0.2(q_h . k_jh))`` over the valid ``j``, dropout
    on ``a``, output ``sum_j a_j v_jh``; heads side by side, ``[n, d]``. A row with no valid key (or
    ``k = 0``) gets zeros, never NaN: padded scores are set to the lowest float (exactly zero weight
    after the softmax unless the whole row is padding) and the weights are multiplied by the mask.
    """
    n, k, d = key.shape
    if d % heads:
        raise ValueError(f"attention width {d} is not a multiple of {heads} heads")
    q = query.reshape(n, 1, heads, d // heads)
    scores = nn.functional.leaky_relu((q * key.reshape(n, k, heads, d // heads)).sum(-1), LEAKY_SLOPE)  # [n, k, heads]
    if mask is not None:
        valid = mask[:, :, None]
        scores = scores.masked_fill(~valid, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=1)
    if mask is not None:
        weights = weights * valid.to(weights.dtype)
    weights = dropout(weights)
    return (weights[..., None] * value.reshape(n, k, heads, d // heads)).sum(1).reshape(n, d)


class MemoryModel(nn.Module, ABC):
    """A memory-based temporal GNN whose node state lives outside it (see the module docstring).

    Attributes the engine reads:

    * ``memory_dim``: ``d_mem``, the width of ``s``.
    * ``mail_dim``: ``d_msg = 2 d_mem + edge_dim``, a mail ``[s'_self || s'_other || e]``.
    * ``mailbox_size``: ``B``, mail slots per node (a ring buffer the engine fills).
    * ``embedding_neighbours``: ``k`` most recent neighbours whose ``s'`` ``embed`` reads (0: none).
    * ``mail_neighbours``: ``k`` most recent neighbours of each positive endpoint that also receive its
      mail (0: the endpoints only).

    and ``embedding_dim`` (the width of ``z``, ``= memory_dim`` for every model here), ``edge_dim``,
    ``time_dim``, ``num_nodes`` (kept for validation and ``repr`` only: the state is outside).

    Subclasses set ``mailbox_size``/``embedding_neighbours``/``mail_neighbours`` through ``__init__``
    and implement ``update_memory`` and ``embed``; ``score`` (TGL's ``EdgePredictor``) and ``mail`` are
    shared. ``time_encoder`` is the memory updater's ``phi``.
    """

    graph_convolutions = False  # nothing for the graph-convolution FLOP counter: it reports the metric missing

    def __init__(
        self,
        num_nodes: int,
        edge_dim: int,
        memory_dim: int,
        time_dim: int,
        dropout: float,
        mailbox_size: int = 1,
        embedding_neighbours: int = 0,
        mail_neighbours: int = 0,
    ) -> None:
        super().__init__()
        for name, value, low in (
            ("num_nodes", num_nodes, 1),
            ("edge_dim", edge_dim, 0),
            ("memory_dim", memory_dim, 1),
            ("time_dim", time_dim, 1),
            ("mailbox_size", mailbox_size, 1),
            ("embedding_neighbours", embedding_neighbours, 0),
            ("mail_neighbours", mail_neighbours, 0),
        ):
            if isinstance(value, bool) or int(value) != value or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.num_nodes = int(num_nodes)
        self.edge_dim = int(edge_dim)
        self.memory_dim = int(memory_dim)
        self.time_dim = int(time_dim)
        self.mail_dim = 2 * self.memory_dim + self.edge_dim
        self.mailbox_size = int(mailbox_size)
        self.embedding_neighbours = int(embedding_neighbours)
        self.mail_neighbours = int(mail_neighbours)
        self.embedding_dim = self.memory_dim
        self.dropout_p = float(dropout)
        self.time_encoder = TimeEncoding(self.time_dim)
        self.predictor = LinkPredictor(self.embedding_dim)

    def extra_repr(self) -> str:
        return (
            f"num_nodes={self.num_nodes}, edge_dim={self.edge_dim}, memory_dim={self.memory_dim}, mail_dim={self.mail_dim}, "
            f"mailbox_size={self.mailbox_size}, embedding_neighbours={self.embedding_neighbours}, "
            f"mail_neighbours={self.mail_neighbours}, dropout={self.dropout_p}"
        )

    @abstractmethod
    def update_memory(
        self,
        memory: torch.Tensor,
        memory_time: torch.Tensor,
        mail: torch.Tensor,
        mail_time: torch.Tensor,
        query_time: torch.Tensor,
        rows: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``s' [n, d_mem]``: each row's memory after applying its stored mail(s).

        With ``rows [n]``, the state tensors hold one entry per vertex and row ``i`` reads entry
        ``rows[i]`` (the same vertex queried at several times): the same values as expanding them
        first, with each vertex's own products computed once.

        ``memory [n, d_mem]``, ``memory_time [n]`` (``tau``), ``mail [n, B, d_msg]``, ``mail_time [n, B]``,
        ``query_time [n]`` (the time the row is read at: its root's event time).
        """

    @abstractmethod
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
        """``z [R, embedding_dim]`` of ``R`` roots.

        ``memory [R, d_mem]`` the roots' ``s'``, ``memory_time [R]`` their ``tau`` before this batch,
        ``query_time [R]`` their event times; ``neighbour_memory [R, k, d_mem]`` the ``s'`` of each
        root's ``k`` most recent neighbours, ``neighbour_time [R, k]`` those events' times,
        ``neighbour_edge [R, k, edge_dim]`` their features, ``neighbour_mask [R, k]`` (False: padding).
        With ``neighbour_edge_index [R, k]``, ``neighbour_edge`` holds one row per distinct event
        (``[U, edge_dim]``) and the index picks each neighbour's (padding may pick any row).
        Models with ``embedding_neighbours == 0`` get ``k = 0`` and ignore the neighbour tensors.
        """

    def score(self, z_src: torch.Tensor, z_dst: torch.Tensor) -> torch.Tensor:
        """Link logits ``[R]`` of the pairs ``(z_src[i], z_dst[i])``."""
        return self.predictor(z_src, z_dst)

    def mail(self, memory_self: torch.Tensor, memory_other: torch.Tensor, edge: torch.Tensor) -> torch.Tensor:
        """The mail an event leaves at one endpoint: ``[s'_self || s'_other || e]``, ``[n, mail_dim]``."""
        if edge.shape[-1] != self.edge_dim:
            raise ValueError(f"edge features have width {edge.shape[-1]}, the model was built for edge_dim={self.edge_dim}")
        return torch.cat([memory_self, memory_other, edge.to(memory_self.dtype)], dim=-1)

    def _check_mailbox(self, memory: torch.Tensor, mail: torch.Tensor) -> None:
        n = memory.shape[0]
        if mail.shape != (n, self.mailbox_size, self.mail_dim):
            raise ValueError(f"mail must be [n={n}, B={self.mailbox_size}, mail_dim={self.mail_dim}], got {tuple(mail.shape)}")


class RecurrentMemoryModel(MemoryModel):
    """A memory updated by a recurrent cell (``updater``: TGN's GRU, JODIE's tanh RNN) from the node's
    one (latest) mail ``m`` and the time since its memory was written::

        s' = updater([m || phi(t_query - tau)], s)

    ``mail_time`` is not read (TGL encodes ``t_query - tau``, not the mail's age). A subclass builds
    ``updater`` (input width ``mail_dim + time_dim``) and implements ``embed``."""

    updater: nn.GRUCell | nn.RNNCell

    def update_memory(
        self,
        memory: torch.Tensor,
        memory_time: torch.Tensor,
        mail: torch.Tensor,
        mail_time: torch.Tensor,
        query_time: torch.Tensor,
        rows: torch.Tensor | None = None,
    ) -> torch.Tensor:
        self._check_mailbox(memory, mail)
        if rows is not None:  # one entry per vertex, several rows each: the vertex's products once
            return recurrent_step(self.updater, mail[:, 0], self.time_encoder(query_time - memory_time[rows]), memory, rows)
        x = torch.cat([mail[:, 0], self.time_encoder(query_time - memory_time)], dim=-1)
        return self.updater(x, memory)
