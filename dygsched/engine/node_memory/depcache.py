"""``sched=depcache``: every rank keeps a full replica of the node state (NeutronStar's DepCache).

Reads are local (local dispatch). After each step every rank sends its deduplicated writes to
every other rank (an all-gather done with one ``all_to_all_single``, which gloo supports with
uneven splits) and applies all ranks' writes to its replica, the latest event winning, so the
replicas stay identical. Memory grows with the rank count; traffic with ``M - 1``.
"""

from __future__ import annotations

from dygsched.engine.node_memory.single import LocalMemory
from dygsched.engine.node_memory.updates import StateUpdates
from dygsched.engine.strategy import IterationStats


class DepCacheMemory(LocalMemory):
    """A full replica on every rank, kept identical by sending every rank's writes to every other."""

    def aggregate(self, updates: StateUpdates, stats: IterationStats) -> None:
        mine = updates.deduplicated()
        parts = [mine]
        if self.world_size > 1:
            transport, peers = self.transport, self.world_size - 1
            endpoint_index, endpoint_rows = mine.endpoint_rows()
            delivery_index, delivery_rows = mine.delivery_rows()
            sent = [
                [0 if q == self.rank else int(x.shape[0]) for q in range(self.world_size)]
                for x in (endpoint_index, delivery_index)
            ]
            got = transport.counts_together(sent)  # both kinds' counts in one exchange, read once
            parts.append(
                StateUpdates.from_rows(
                    transport.exchange(endpoint_index.repeat(peers, 1), sent[0], got[0], "aggregate_index", stats),
                    transport.exchange(endpoint_rows.repeat(peers, 1), sent[0], got[0], "aggregate", stats),
                    transport.exchange(delivery_index.repeat(peers, 1), sent[1], got[1], "aggregate_index", stats),
                    transport.exchange(delivery_rows.repeat(peers, 1), sent[1], got[1], "aggregate", stats),
                    self.model.memory_dim,
                )
            )
        StateUpdates.cat(parts).apply(self.table, self.row_on_device)
