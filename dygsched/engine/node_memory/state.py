"""The node state a memory-based model keeps outside its parameters, and who holds which rows.

Every vertex ``v`` has a memory ``s_v``, the time ``tau_v`` it was last written, and a mailbox of
``B`` mails with their times (a ring buffer; ``B = 1`` keeps the latest mail). Sven calls it N&M.

``Ownership`` is the dual hash of the paper: ``owner`` (``lambda1``: vertex -> rank, the same on
every rank) and ``row`` (``lambda2``: vertex -> row on its owner). A rank's ``NodeStateTable``
holds the rows of the vertices it owns (DepComm, Sven), or of every vertex (one process; DepCache's
replica, where ``owner`` is the rank itself). Rows travel between ranks packed in one float
tensor (``pack``/``unpack``), so one exchange moves a vertex's whole state.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

STATE_FIELDS = ("memory", "memory_time", "mail", "mail_time", "next_slot")  # a table's tensors, as ``snapshot`` orders them


@dataclass(frozen=True)
class Ownership:
    owner: torch.Tensor  # [N] rank of each vertex (lambda1)
    row: torch.Tensor  # [N] row of each vertex on its owner (lambda2)
    world_size: int

    @classmethod
    def from_owner(cls, owner: torch.Tensor, world_size: int) -> Ownership:
        owner = owner.to(torch.int64)
        row = torch.empty_like(owner)
        for rank in range(world_size):
            mine = (owner == rank).nonzero().flatten()
            row[mine] = torch.arange(mine.numel())
        return cls(owner, row, world_size)

    @classmethod
    def everywhere(cls, num_vertices: int, rank: int, world_size: int) -> Ownership:
        """Every vertex local to ``rank`` (a full table: one process, or a DepCache replica)."""
        return cls(torch.full((num_vertices,), rank, dtype=torch.int64), torch.arange(num_vertices), world_size)

    def rows_on(self, rank: int) -> int:
        return int((self.owner == rank).sum())


def packed_row_width(memory_dim: int, mail_dim: int, mailbox_size: int) -> int:
    """Values per packed row: memory, its time, the mailbox and the mails' times."""
    return memory_dim + 1 + mailbox_size * (mail_dim + 1)


@dataclass(frozen=True)
class NodeState:
    """State rows: ``memory`` [n, d_mem], ``memory_time`` [n], ``mail`` [n, B, d_msg], ``mail_time`` [n, B]."""

    memory: torch.Tensor
    memory_time: torch.Tensor
    mail: torch.Tensor
    mail_time: torch.Tensor


class NodeStateTable:
    """One rank's rows of node state, all zero at the start of every epoch (TGL resets memory per epoch)."""

    def __init__(self, rows: int, memory_dim: int, mail_dim: int, mailbox_size: int, device: torch.device) -> None:
        self.rows, self.memory_dim, self.mail_dim, self.mailbox_size = rows, memory_dim, mail_dim, mailbox_size
        self.memory = torch.zeros(rows, memory_dim, device=device)
        self.memory_time = torch.zeros(rows, device=device)
        self.mail = torch.zeros(rows, mailbox_size, mail_dim, device=device)
        self.mail_time = torch.zeros(rows, mailbox_size, device=device)
        self.next_slot = torch.zeros(rows, dtype=torch.int64, device=device)

    def reset(self) -> None:
        for tensor in self._tensors():
            tensor.zero_()

    def _tensors(self) -> tuple[torch.Tensor, ...]:
        return (self.memory, self.memory_time, self.mail, self.mail_time, self.next_slot)

    def snapshot(self) -> tuple[torch.Tensor, ...]:
        """A copy of every row's state (``restore`` puts it back): DyGLib's memory backup."""
        return tuple(tensor.clone() for tensor in self._tensors())

    def restore(self, snapshot: tuple[torch.Tensor, ...]) -> None:
        for tensor, saved in zip(self._tensors(), snapshot, strict=True):
            tensor.copy_(saved)

    @property
    def row_width(self) -> int:
        """Floats per packed row (``pack``)."""
        return packed_row_width(self.memory_dim, self.mail_dim, self.mailbox_size)

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self._tensors())

    def read(self, rows: torch.Tensor) -> NodeState:
        return NodeState(self.memory[rows], self.memory_time[rows], self.mail[rows], self.mail_time[rows])

    def pack(self, rows: torch.Tensor) -> torch.Tensor:
        n = rows.numel()
        return torch.cat(
            [self.memory[rows], self.memory_time[rows, None], self.mail[rows].reshape(n, -1), self.mail_time[rows]], dim=1
        )

    def unpack(self, packed: torch.Tensor) -> NodeState:
        d, b, m = self.memory_dim, self.mailbox_size, self.mail_dim
        n = packed.shape[0]
        return NodeState(
            packed[:, :d], packed[:, d], packed[:, d + 1 : d + 1 + b * m].reshape(n, b, m), packed[:, d + 1 + b * m :]
        )

    def write_memory(self, rows: torch.Tensor, memory: torch.Tensor, time: torch.Tensor) -> None:
        """Set the rows' memory and its time (rows distinct)."""
        self.memory[rows] = memory
        self.memory_time[rows] = time

    def write_mail(self, rows: torch.Tensor, mail: torch.Tensor, time: torch.Tensor) -> None:
        """Put one mail in each row's mailbox (rows distinct): the next ring slot, the oldest mail's."""
        slot = self.next_slot[rows] % self.mailbox_size
        self.mail[rows, slot] = mail
        self.mail_time[rows, slot] = time
        self.next_slot[rows] += 1
