"""The memory backend contract: where the node state lives, how a step reads it, how writes reach it.

``NodeMemoryStrategy`` runs the loop (batches, negatives, embedding, loss, metrics); a backend owns
the node state: who holds which vertex's rows (``build_ownership``), this rank's rows (``table``),
the recomputed memory of a step's series (``memory_of``) and the step's writes (``aggregate``).
The one-process reference, DepCache, DepComm and Sven are the backends (one module each); they
move state between ranks only through their ``Transport``, which counts and times it.

A backend may also prepare a series ahead (``prepare``: Sven's redundancy-free organisation),
prepare batches ahead (``ahead``: Sven's prefetch) and cut a rank's batch into ``micro_batches``.
``exact``: its parameters equal the one-process reference's step for step; ``gradient_staleness``:
1 when each step applies the previous step's summed gradients; ``communicates_in_backward``: its
exchanges run inside the backward pass (DepComm's answers' gradients).

A backend is built from the strategy's configuration (``NodeMemoryConfig``), whose class names it
(``memory``): a backend needs no strategy class of its own.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

from dygsched.data.event_batches import RecentNeighbours
from dygsched.data.events import EventStream
from dygsched.data.kinds import DynamicData
from dygsched.engine import comm
from dygsched.engine.node_memory.batches import DistinctPairs, Series
from dygsched.engine.node_memory.config import NodeMemoryConfig
from dygsched.engine.node_memory.state import NodeState, NodeStateTable, Ownership
from dygsched.engine.node_memory.transport import Transport
from dygsched.engine.node_memory.updates import StateUpdates
from dygsched.engine.run_config import RunConfig
from dygsched.engine.strategy import IterationStats
from dygsched.models.memory_base import MemoryModel, gather_rows

T = TypeVar("T")


@dataclass(frozen=True)
class MemoryRun:
    """What a backend is given on every rank once the model exists."""

    name: str  # the strategy's, for messages
    stream: EventStream
    settings: RunConfig
    train_events: tuple[int, int]  # the training phase's events, [start, stop)
    batch_size: int  # events per rank per step
    rank: int
    world_size: int
    device: torch.device
    model: MemoryModel
    neighbours: RecentNeighbours  # every event's most recent neighbours
    time_dtype: torch.dtype
    transport: Transport


class NodeMemory(ABC):
    """One way of keeping and moving node state over ranks (see the module docstring)."""

    micro_batches: int = 1
    exact: bool = True
    gradient_staleness: int = 0
    communicates_in_backward: bool = False

    def __init__(self, config: NodeMemoryConfig) -> None:
        self.config = config

    def check(self, name: str, data: DynamicData, settings: RunConfig, world_size: int) -> None:
        """Raise ``ConfigError`` if the backend cannot run (launching process, before any rank starts)."""

    def attach(self, run: MemoryRun) -> None:
        """Decide ownership and build this rank's table (every rank, once the model exists)."""
        self.run, self.model, self.transport = run, run.model, run.transport
        self.rank, self.world_size, self.device = run.rank, run.world_size, run.device
        self.ownership = self.build_ownership()
        self.row_on_device = self.ownership.row.to(self.device)  # moved once: every step's state writes index it there
        rows = int(self.ownership.rows_on(self.rank))
        self.table = NodeStateTable(rows, self.model.memory_dim, self.model.mail_dim, self.model.mailbox_size, self.device)

    @abstractmethod
    def build_ownership(self) -> Ownership:
        """Who holds each vertex's state rows (called on every rank once the model exists)."""

    def prepare(self, series: Series) -> Series:
        """``series`` with what this backend works out ahead of the step (nothing by default)."""
        return series

    def ahead(self, prepared: Iterator[T]) -> Iterator[T]:
        """The prepared batches as the loop takes them (a backend may prepare them ahead)."""
        return prepared

    @abstractmethod
    def memory_of(
        self, series: Series, stats: IterationStats, upcoming: Series | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``s'`` (differentiable in the model's memory updater) and the stored ``tau`` of every series
        vertex; ``upcoming`` is the series the next micro-batch will ask for (a backend may start
        fetching it: the state does not change within a batch)."""

    @abstractmethod
    def aggregate(self, updates: StateUpdates, stats: IterationStats) -> None:
        """Write ``updates`` (this rank's, all ranks' together) wherever the state lives."""

    def describe(self) -> dict[str, Any]:
        """Run-level facts for the summary."""
        return {}

    def full_state(self, rows: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...] | None:
        """Every vertex's state, in vertex order, on rank 0 (``None`` on the others), from each rank's
        copy of its table (``NodeStateTable.snapshot``): the owners' rows gathered (a collective)."""
        parts = comm.gather_object(tuple(tensor.cpu() for tensor in rows))
        if parts is None:
            return None
        owner, row = self.ownership.owner, self.ownership.row
        full = tuple(tensor.new_zeros((owner.numel(), *tensor.shape[1:])) for tensor in parts[0])
        for rank, part in enumerate(parts):
            mine = (owner == rank).nonzero().flatten()
            for into, tensor in zip(full, part, strict=True):
                into[mine] = tensor[row[mine]]
        return full

    # ---- for the backends -------------------------------------------------------------------------
    def memory_at(self, pairs: DistinctPairs, read: Callable[[torch.Tensor], NodeState]) -> tuple[torch.Tensor, torch.Tensor]:
        """``s'`` and ``tau`` of every series row: row ``i`` is the state ``read(keys[i])`` at ``times[i]``,
        for the series' ``keys`` and ``times`` whose distinct pairs (``distinct_pairs``, found on the
        host) are ``pairs``, on the device.

        The updater runs once per distinct (key, time) pair and its rows are expanded back: a batch's
        series repeats pairs (neighbours read at their root's time, tied event times), on Enron 87%
        of them. Rows are independent, so the values are those of one call per row (TGL's dedup).
        The state is read once per distinct key, and the updater computes what depends on the key
        alone once per key (``update_memory(..., rows=)``: 5.3 pairs per key on the Wikipedia-sized stream)."""
        state = read(pairs.keys)
        memory = self.model.update_memory(
            state.memory, state.memory_time, state.mail, state.mail_time, pairs.times, rows=pairs.key_of_pair
        )
        return gather_rows(memory, pairs.inverse), state.memory_time[pairs.key_of_pair][pairs.inverse]
