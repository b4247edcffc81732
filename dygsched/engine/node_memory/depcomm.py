"""``sched=depcomm``: disjoint node state; owners compute memory updates and send them per occurrence.

NeutronStar's DepComm as the Sven paper describes it: a rank sends each vertex occurrence of its
series (id and query time, no deduplication) to the vertex's owner; the owner reads its rows,
runs the memory updater and sends ``s'`` (and ``tau``) back, one row per occurrence. The exchange is
differentiable: in the backward, the gradients of ``s'`` travel back to the owners
(``dispatch_grad`` bytes), which back-propagate them through the updater. Writes go to the owners
deduplicated (``ShardedMemory.aggregate``).
"""

from __future__ import annotations

import torch

from dygsched.engine.node_memory.batches import Series
from dygsched.engine.node_memory.sharded import ShardedMemory
from dygsched.engine.strategy import IterationStats


class DepCommMemory(ShardedMemory):
    """Owners compute the memory of their vertices' occurrences and send it back, differentiably."""

    communicates_in_backward = True  # the answers' gradients go back to the owners inside backward

    def memory_of(
        self, series: Series, stats: IterationStats, upcoming: Series | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        transport = self.transport
        order, send_counts = self.route(series.vertices)
        recv_counts = transport.counts(send_counts)
        request = torch.stack([series.vertices[order].to(torch.float64), series.times[order].to(torch.float64)], 1)
        asked = transport.exchange(request, send_counts, recv_counts, "dispatch_index", stats)
        state = self.table.read(self.ownership.row[asked[:, 0].long()].to(self.device))
        query_time = asked[:, 1].to(self.device, self.run.time_dtype)
        updated = self.model.update_memory(state.memory, state.memory_time, state.mail, state.mail_time, query_time)
        reply = torch.cat([updated, state.memory_time[:, None]], 1)
        answered = transport.exchange(reply, recv_counts, send_counts, "dispatch", stats)
        if torch.is_grad_enabled():  # the backward sends the answers' gradients back, row for row
            transport.traffic.record("dispatch_grad", send_counts, recv_counts, reply.shape[1] * reply.element_size(), stats)
        restored = answered[torch.argsort(order).to(answered.device)]
        return restored[:, :-1], restored[:, -1].detach()
