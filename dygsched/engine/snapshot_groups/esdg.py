"""ESDG (Chakaravarthy et al., 2021): every group trained by all ranks, its snapshots split by time.

Snapshot-based partitioning, as DyGNeX (appendix B) and REAL (section 2.3) describe it: each
snapshot group is trained by *all* ranks together. Rank ``r`` holds a contiguous block of the
group's snapshots (earlier snapshots on lower ranks, blocks differing by at most one snapshot),
runs the spatial and temporal parts of its snapshots from the recurrent states it receives from
rank ``r - 1`` (rank 0 starts from ``DGNN.initial_states``), and sends its final states on to rank
``r + 1``; the last rank reads out, takes the loss and starts the backward, whose gradient with
respect to each received state travels back down the chain the same way. The hidden-state
transfers (and the ranks idling while they wait for them) are the cost this strategy pays.

Message layout: one contiguous tensor per message, the per-layer states of ``DGNN.step`` flattened
in order (layer 0's tuple first, each tensor row-major); the gradient message has the same layout.
Shapes come from ``DGNN.initial_states`` (the states keep their shapes from snapshot to snapshot:
``[N, hidden]`` per tensor for the RNN models, the ``[d_in, d_out]`` weight for EvolveGCN), so
receive buffers are preallocated. The top layer's output is not sent: every rank has at least one
snapshot (``check_esdg``), ``DGNN.step`` reads the snapshot's own features, and the last rank reads
out from the output of its own last snapshot.

The plan is an ordinary PSG plan; ESDG ignores which rank it names and uses it only for the order
of the groups and the iteration boundaries. Scaling: the last rank's loss of each group is scaled
by ``1 / m`` for the ``m`` groups of the iteration (as every executor does); each rank's parameter
gradients are its part of the group's gradient, so over the iteration the ranks' accumulated
gradients sum to the mean of the ``m`` groups' gradients: the step single-process training takes
on the same groups. Every rank runs the model's own layer loop (``DGNN.unroll``) from the states
it received.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

import torch

from dygsched.data.groups import SnapshotGroup
from dygsched.data.temporal_graph import Snapshot
from dygsched.engine import comm
from dygsched.engine.snapshot_groups.executor import EpochRun, GroupExecutor, Iteration, fetch, loss_scale
from dygsched.engine.strategy import IterationStats
from dygsched.errors import ConfigError
from dygsched.models.dgnn import DGNN, State


def check_esdg(window: int, world_size: int) -> None:
    """ESDG gives every rank at least one snapshot of every group."""
    if window < world_size:
        raise ConfigError(f"ESDG needs at least as many snapshots per group (window={window}) as ranks (world_size={world_size})")


def snapshot_block(size: int, world_size: int, rank: int) -> tuple[int, int]:
    """``(start, stop)`` of ``rank``'s contiguous block of a group of ``size`` snapshots.

    Earlier snapshots go to lower ranks; the first ``size % world_size`` ranks get one more.
    """
    base, extra = divmod(size, world_size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


class StateLayout:
    """How a list of per-layer state tuples is laid out in one flat message tensor."""

    def __init__(self, states: Sequence[State]) -> None:
        self.shapes = [[tuple(t.shape) for t in state] for state in states]
        self.dtype = states[0][0].dtype
        self.numel = sum(t.numel() for state in states for t in state)

    @classmethod
    def of(cls, model: DGNN, snapshot: Snapshot) -> StateLayout:
        with torch.no_grad():
            return cls(model.initial_states(snapshot.num_nodes, snapshot.x.device, snapshot.x.dtype))

    def empty(self, device: torch.device) -> torch.Tensor:
        return torch.empty(self.numel, dtype=self.dtype, device=device)

    @staticmethod
    def flatten(states: Sequence[State]) -> torch.Tensor:
        return torch.cat([t.reshape(-1) for state in states for t in state])

    def unflatten(self, flat: torch.Tensor) -> list[State]:
        states, offset = [], 0
        for shapes in self.shapes:
            parts = []
            for shape in shapes:
                n = math.prod(shape)
                parts.append(flat[offset : offset + n].view(shape))
                offset += n
            states.append(tuple(parts))
        return states


class ESDGExecutor(GroupExecutor):
    """Trains every group of an iteration on all ranks, each rank a contiguous block of its snapshots.

    Per iteration: ``wait_s`` is the time blocked receiving states (forward) and gradients
    (backward); ``comm_s`` the time sending them; ``busy_s`` the rest (fetch, forward and backward
    of this rank's snapshots, and the readout and loss on the last rank); ``bytes["hidden_state"]``
    the bytes of states and state gradients this rank sent. Every rank takes part in every group,
    but only the last rank has the losses, so it reports ``units`` = the iteration's group count and
    ``loss_sum`` = the sum of their (unscaled) losses, and the other ranks report 0 and 0: summed
    over ranks, as the worker does, ``loss_sum / units`` is the mean loss over the groups. ESDG
    does not profile: it never runs a group whole on one rank.
    """

    profiles = False

    def check(self, window: int, world_size: int, profile_epochs: int) -> None:
        check_esdg(window, world_size)
        super().check(window, world_size, profile_epochs)

    def train_iteration(self, run: EpochRun, iteration: Iteration, stats: IterationStats) -> None:
        order = [k for groups in iteration for k in groups]  # the plan's ranks do not matter here
        last_rank = run.rank == run.world_size - 1
        stats.units = len(order) if last_rank else 0
        stats.add_bytes("hidden_state", 0)
        stats.add_bytes("host_to_device", 0)
        scale = loss_scale(iteration)
        for k in order:
            loss = self.train_group(run, run.train_groups[k], scale, stats)
            if loss is not None:
                stats.add_loss(loss, scale)

    def train_group(self, run: EpochRun, group: SnapshotGroup, scale: float, stats: IterationStats) -> torch.Tensor | None:
        """Forward and backward of this rank's block of ``group``; the scaled loss on the last rank.

        Parameter gradients accumulate into ``.grad`` (this rank's part of the group's gradient).
        """
        rank, world_size, device = run.rank, run.world_size, run.device
        check_esdg(group.size, world_size)
        model = run.objective.model
        first, last_rank = rank == 0, rank == world_size - 1

        lo, hi = snapshot_block(group.size, world_size, rank)
        block = SnapshotGroup(group.index, group.start + lo, group.start + hi)
        snapshots, moved = fetch(run.graph, block, device)
        stats.add_bytes("host_to_device", moved)
        layout = StateLayout.of(model, snapshots[0])

        received = None
        if first:
            states = model.initial_states(snapshots[0].num_nodes, device, snapshots[0].x.dtype)
        else:
            received = self._recv(layout.empty(device), rank - 1, device, stats)
            received.requires_grad_(True)
            states = layout.unflatten(received)
        h, states = model.unroll(snapshots, states)

        loss_value = None
        if last_rank:
            loss = run.objective.loss_from_predictions(model.readout(h), snapshots[-1], scale)
            loss.backward()
            loss_value = loss.detach()
        else:
            sent = layout.flatten(states)
            self._send(sent.detach(), rank + 1, device, stats)
            grad = self._recv(layout.empty(device), rank + 1, device, stats)
            if sent.requires_grad:
                torch.autograd.backward(sent, grad)

        if received is not None:
            # The gradient with respect to the state this rank started from continues the backward on rank - 1.
            self._send(received.grad if received.grad is not None else torch.zeros_like(received), rank - 1, device, stats)
        return loss_value

    @staticmethod
    def _send(tensor: torch.Tensor, dst: int, device: torch.device, stats: IterationStats) -> None:
        # timed from once the stream's queued compute is done: the send alone (staged through the host under gloo)
        comm.send(tensor, dst, into=partial(stats.add_time, "comm_s"))
        stats.add_bytes("hidden_state", tensor.numel() * tensor.element_size())

    @staticmethod
    def _recv(buffer: torch.Tensor, src: int, device: torch.device, stats: IterationStats) -> torch.Tensor:
        return comm.recv(buffer, src, into=partial(stats.add_time, "wait_s"))
