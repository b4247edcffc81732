"""A batch's writes to the node state, and where they go.

After a batch, each positive endpoint's memory becomes its recomputed ``s'`` at the event's time
and it gets a mail ``[s'_self || s'_other || e]`` (APAN also delivers that mail to the endpoint's
sampled neighbours). Several events of a batch, on several ranks, may write one vertex: the write
with the greatest key wins, and keys order writes by global event index, then source before
destination, then neighbour deliveries (``event * slots + slot``), so the result is the same
whatever the ranks and batch sizes.

``StateUpdates`` carries the writes: endpoint rows (memory and mail, one time) and delivery rows
(mail only). ``deduplicated()`` keeps each vertex's winning write (Sven's last-occurrence index);
``apply(table, rows)`` writes them. Both commute with splitting the writes over ranks: the latest of
all writes is the latest of each part's latest.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from dygsched.engine.node_memory.organise import latest_per_vertex
from dygsched.engine.node_memory.state import NodeStateTable


@dataclass(frozen=True)
class StateUpdates:
    vertices: torch.Tensor  # [n] endpoint writes
    keys: torch.Tensor
    memory: torch.Tensor  # [n, d_mem]
    mail: torch.Tensor  # [n, d_msg]
    time: torch.Tensor  # [n] the event's time: memory time and mail time
    delivered_to: torch.Tensor  # [m] mail-only writes (neighbour deliveries)
    delivered_keys: torch.Tensor
    delivered_mail: torch.Tensor  # [m, d_msg]
    delivered_time: torch.Tensor

    @classmethod
    def cat(cls, parts: list[StateUpdates]) -> StateUpdates:
        return cls(*(torch.cat([getattr(p, f) for p in parts]) for f in cls.__dataclass_fields__))

    def select(self, endpoints: torch.Tensor, deliveries: torch.Tensor) -> StateUpdates:
        return StateUpdates(
            self.vertices[endpoints],
            self.keys[endpoints],
            self.memory[endpoints],
            self.mail[endpoints],
            self.time[endpoints],
            self.delivered_to[deliveries],
            self.delivered_keys[deliveries],
            self.delivered_mail[deliveries],
            self.delivered_time[deliveries],
        )

    def deduplicated(self) -> StateUpdates:
        """Each vertex's latest endpoint write and latest delivery (what crosses ranks: ``N2 (1 - eta2)`` rows)."""
        return self.select(latest_per_vertex(self.vertices, self.keys), latest_per_vertex(self.delivered_to, self.delivered_keys))

    @property
    def endpoint_count(self) -> int:
        return int(self.vertices.numel())

    # ---- packing for an exchange: one float tensor and one index tensor per kind ----------------------
    def endpoint_rows(self) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.stack([self.vertices, self.keys], 1), torch.cat([self.memory, self.time[:, None], self.mail], 1)

    def delivery_rows(self) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.stack([self.delivered_to, self.delivered_keys], 1), torch.cat(
            [self.delivered_mail, self.delivered_time[:, None]], 1
        )

    @classmethod
    def from_rows(
        cls,
        endpoint_index: torch.Tensor,
        endpoint_rows: torch.Tensor,
        delivery_index: torch.Tensor,
        delivery_rows: torch.Tensor,
        memory_dim: int,
    ) -> StateUpdates:
        d = memory_dim
        return cls(
            endpoint_index[:, 0],
            endpoint_index[:, 1],
            endpoint_rows[:, :d],
            endpoint_rows[:, d + 1 :],
            endpoint_rows[:, d],
            delivery_index[:, 0],
            delivery_index[:, 1],
            delivery_rows[:, :-1],
            delivery_rows[:, -1],
        )

    def apply(self, table: NodeStateTable, row_of: torch.Tensor) -> None:
        """Write the winning updates into ``table``, whose row of vertex ``v`` is ``row_of[v]``. The
        winners are found where the vertices and keys are (on the host, where a step builds them:
        finding them on the device would make the host wait for it); only positions move."""
        device = table.memory.device
        win = latest_per_vertex(self.vertices, self.keys)
        at = win.to(self.memory.device, non_blocking=True)
        table.write_memory(row_of[self.vertices[win].to(device, non_blocking=True)], self.memory[at], self.time[at])
        vertices = torch.cat([self.vertices, self.delivered_to])
        keys = torch.cat([self.keys, self.delivered_keys])
        mail = torch.cat([self.mail, self.delivered_mail])
        times = torch.cat([self.time, self.delivered_time])
        win = latest_per_vertex(vertices, keys)
        at = win.to(mail.device, non_blocking=True)
        table.write_mail(row_of[vertices[win].to(device, non_blocking=True)], mail[at], times[at])
