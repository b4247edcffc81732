"""BLAD-like training (Fu et al., SC'23, as DyGNeX and REAL run it as a baseline): two groups, two stages.

Each rank trains two consecutive snapshot groups per iteration as a two-stage pipeline: while the
main thread runs the dense and temporal work and the backward of the current group, a second
thread (on GPU with its own CUDA stream) loads the next group (host-to-device copy) and runs its
message passing: the first layer's spatial aggregation of every snapshot, which depends only on
the snapshot's features and graph. Groups go to ranks round-robin in time order with no load
balancing (the ``blad`` solver of ``dygsched.planner``, a plan with capacity 2).

The result is exact: the same parameter gradients as training the rank's groups one after another
(autograd graphs built in the stage-1 thread are backpropagated from the main thread; parameters do
not change within an iteration, so a first-layer aggregation computed early is the one the
sequential forward would compute). The one exception is randomness inside the first layer's
spatial part (dropout in training mode, e.g. MPNN-LSTM with ``dropout > 0``): the two threads draw
from one generator in a different order than sequential training would, so the dropout masks
differ (the expectation does not). Precomputing also requires that the first layer's ``spatial``
does not read the recurrent state, which holds for every model in ``dygsched.models`` (it is the
BLAD setting: message passing on inputs and graph only); the stage-1 thread passes ``None`` as the
state, so a layer that did read it fails loudly instead of training on a wrong state.

Loss scaling and the end-of-iteration step are those of every snapshot-group executor; ``busy_s``
is the wall time of the rank's pipelined work (the overlapped stage-1 work included once),
``bytes["host_to_device"]`` what its loads moved. Both stages run the model's own layer loop
(``DGNN.unroll``): stage 2 with layer 0's spatial outputs given (``GivenFirstSpatial``).

Threads: ``torch.set_num_threads`` (set per rank by the worker) sizes one intra-op pool per
process; the stage-1 thread shares it with the main thread.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from dygsched.data.groups import SnapshotGroup
from dygsched.data.temporal_graph import Snapshot, TemporalGraph
from dygsched.engine.snapshot_groups.executor import EpochRun, Iteration, SequentialExecutor, fetch, first_layer, loss_scale
from dygsched.engine.snapshot_groups.streams import record_stream
from dygsched.engine.strategy import IterationStats
from dygsched.models.dgnn import DGNN
from dygsched.models.hooks import GivenFirstSpatial


def first_layer_spatial(model: DGNN, snapshots: Sequence[Snapshot]) -> list[Any]:
    """Layer 0's spatial output for every snapshot (message passing on inputs and graph only).

    The state passed is ``None``: a layer whose spatial part read it would fail loudly here
    instead of training on a wrong state."""
    layer = first_layer(model)
    return [layer.spatial(s.x, s.edge_index, s.edge_weight, None) for s in snapshots]


def forward_with_first_layer(model: DGNN, snapshots: Sequence[Snapshot], spatial_outs: Sequence[Any]) -> torch.Tensor:
    """``model(snapshots)`` with layer 0's spatial outputs given, one per snapshot."""
    if len(spatial_outs) != len(snapshots):
        raise ValueError(f"{len(spatial_outs)} first-layer spatial outputs for {len(snapshots)} snapshots")
    return model(snapshots, hooks=GivenFirstSpatial(spatial_outs))


@dataclass
class StageOne:
    """A group after stage 1: its snapshots on the device, their first-layer spatial outputs, bytes moved."""

    snapshots: tuple[Snapshot, ...]
    spatial: list[Any]
    moved: int


class BLADExecutor(SequentialExecutor):
    """Runs a plan with each group's load and first-layer aggregation one group ahead.

    With the ``blad`` plan (two consecutive groups per rank per iteration) this is BLAD's two-stage
    pipeline; with any plan, each group's stage 1 overlaps the previous group's stage 2 within the
    iteration (not across iterations: the optimizer step in between changes the weights). BLAD
    does not profile (its plan ignores group times).
    """

    profiles = False

    @contextmanager
    def epoch_scope(self, run: EpochRun) -> Iterator[None]:
        self.side_stream = torch.cuda.Stream(run.device) if run.device.type == "cuda" else None
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="blad-stage1") as self.stage_one_thread:
            yield

    def train_iteration(self, run: EpochRun, iteration: Iteration, stats: IterationStats) -> None:
        """Stage 2 (dense work, loss, backward) of each group while stage 1 of the next runs aside."""
        mine = iteration[run.rank]
        scale = loss_scale(iteration)
        stats.units = len(mine)
        objective = run.objective
        graph, train_groups, device = run.graph, run.train_groups, run.device
        stats.add_bytes("host_to_device", 0)
        if self.side_stream is not None:  # the weights changed at the last step: stage 1 aside starts after it
            self.side_stream.wait_stream(torch.cuda.current_stream(device))
        ahead = self.stage_one(objective.model, graph, train_groups[mine[0]], device, None) if mine else None
        for j in range(len(mine)):
            current = ahead
            assert current is not None
            pending = None
            if j + 1 < len(mine):
                group = train_groups[mine[j + 1]]
                pending = self.stage_one_thread.submit(self.stage_one, objective.model, graph, group, device, self.side_stream)
            stats.add_bytes("host_to_device", current.moved)
            loss = objective.loss_from_predictions(
                forward_with_first_layer(objective.model, current.snapshots, current.spatial), current.snapshots[-1], scale
            )
            run.backward(loss, final=j == len(mine) - 1)
            stats.add_loss(loss, scale)
            if pending is not None:
                ahead = pending.result()
                if self.side_stream is not None:
                    main_stream = torch.cuda.current_stream(device)
                    main_stream.wait_stream(self.side_stream)
                    record_stream([ahead.snapshots, ahead.spatial], main_stream)

    @staticmethod
    def stage_one(
        model: DGNN, graph: TemporalGraph, group: SnapshotGroup, device: torch.device, stream: torch.cuda.Stream | None
    ) -> StageOne:
        """Load ``group`` onto ``device`` and run layer 0's spatial part on each snapshot (autograd on)."""
        with ExitStack() as stack:
            stack.enter_context(torch.enable_grad())  # grad mode is per thread: be explicit
            if stream is not None:
                stack.enter_context(torch.cuda.device(device))
                stack.enter_context(torch.cuda.stream(stream))
            snapshots, moved = fetch(graph, group, device)
            return StageOne(snapshots, first_layer_spatial(model, snapshots), moved)
