"""What every DGNN looks like to the engine: ``DGNNLayer`` (a spatial aggregation and a temporal
update) and ``DGNN`` (a stack of them, one layer loop with hooks, and a linear head)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

import torch
from torch import nn

from dygsched.data.temporal_graph import Snapshot
from dygsched.models.hooks import PLAIN, GivenFirstConv, LayerHooks

if TYPE_CHECKING:
    from dygsched.data.diffmap import DiffMap, EdgeSet
    from dygsched.models.partitioned import PartitionOps

State = tuple[torch.Tensor, ...]


class ZeroState(tuple[torch.Tensor, ...]):
    """A state whose tensors are all zeros, as ``initial_state`` returns it (a group's start).

    A layer may skip the products with such a state (TGCN skips its state's share of the gates);
    every other state is a plain tuple, so a state that went through a hook, a checkpoint or
    another rank is never mistaken for one."""

    __slots__ = ()


class DGNNLayer(nn.Module, ABC):
    """One spatio-temporal block (REAL eq. 1-2).

    ``spatial`` is the structure encoder on one snapshot (message passing); ``temporal`` is the
    time encoder that folds the spatial output into the layer's recurrent ``state`` and returns
    the layer's output for this snapshot (the next layer's input) and the new state. Keeping the
    two apart lets an executor cache or reuse aggregations (REAL) and ship states between ranks
    (ESDG) without a second copy of the model.

    ``reuse`` names the part of ``spatial`` that depends on the snapshot alone and can be computed
    once per chain of snapshots (``conv_chain``) and passed back as ``spatial(..., conv_out=...)``:

    * ``"gcn"``: a GCN applied to the layer input (WD-GCN's conv, MPNN-LSTM's ``conv_1``, TGCN's
      convolution with its gate linears folded in); transformation and aggregation are both
      reusable. MPNN-LSTM's ``conv_2`` is not: it reads ``s1`` after batch norm and dropout.
    * ``"gcn_aggregate"``: the parameter-free aggregation ``A_t X_t`` (EvolveGCN-O/H, whose
      projection changes with every snapshot).
    * ``"gat"``: a ``GATConv`` (GAT-LSTM): projection, attention and aggregation.
    * ``None``: nothing reusable.

    Reuse across snapshots only holds for the first layer, whose input features do not depend on
    the recurrent state (REAL 4.3); ``conv_chain`` on a higher layer is only correct if given that
    layer's actual inputs.

    ``spatial_partitioned`` is ``spatial`` on a node-partitioned snapshot (a rank holds its owned
    rows; the engine's ``PartitionOps`` fetches the halo rows a convolution reads and keeps the
    owned rows of its output). ``partitionable`` says whether the layer's spatial part can run that
    way exactly; a layer that pools over every node of a snapshot cannot without more collectives.
    """

    reuse: ClassVar[str | None] = None
    partitionable: ClassVar[bool] = True
    not_partitionable_because: ClassVar[str] = ""  # where partitionable is False: why, in a clause, for the refusal
    node_state: ClassVar[bool] = True  # the state's rows are the nodes (RNNs); False: one state per graph (EvolveGCN's weight)

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels

    @abstractmethod
    def initial_state(self, num_nodes: int, device: torch.device, dtype: torch.dtype) -> State:
        """The state before the first snapshot of a group (h_0 = 0, or the initial weights)."""

    @abstractmethod
    def spatial(
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor, state: State | None, conv_out: Any = None
    ) -> Any:
        """Structure encoding of ``x`` on one snapshot's graph.

        ``state``: the layer's state before this snapshot, or None where the caller runs a layer's
        spatial parts ahead of its temporal steps (``LayerHooks.spatial_layer``, BLAD's stage 1); no
        layer's spatial part reads it.
        ``conv_out``: this snapshot's reusable convolution output from ``conv_chain``; when given,
        it replaces that computation and everything else runs unchanged, in the same order.
        """

    def conv_chain(
        self, x: torch.Tensor, first: EdgeSet, diffs: Sequence[DiffMap], paths: Sequence[str] | None = None
    ) -> list[Any]:
        """The reusable convolution output of every snapshot of a chain (``1 + len(diffs)`` of them).

        ``x``: the chain's first snapshot's input; ``first``: its ``EdgeSet``; ``diffs``: the diff
        maps to each later snapshot; ``paths``: ``"full"`` or ``"diff"`` per diff map (default all
        ``"diff"``). See ``dygsched.models.incremental_kernels``.
        """
        raise NotImplementedError(f"{type(self).__name__} has no reusable convolution (reuse = None)")

    def step_sizes(self, before: EdgeSet, after: EdgeSet, diff: DiffMap) -> object | None:
        """What ``conv_chain``'s incremental step from the graph ``before`` to ``after`` along ``diff`` finds (its
        sets' sizes), computed on the host where the diff maps are built; the reuse engine hands it
        to the device with the diff map (``DiffMap.step_sizes``), so a GPU need not read it back.
        ``None`` where the kernel takes none (GAT: the rows it recomputes depend on values the
        device computes)."""
        return None

    def projection_widths(self) -> tuple[int, int] | None:
        """``(input, projected)`` widths where ``conv_chain`` runs in either order of REAL 4.1.2
        and takes ``project_first=``: project then aggregate (case 1), or aggregate then project
        the rows a step rewrote (case 2). The reuse engine then picks the order from its fitted
        cost curves. None where the order is fixed (GAT scores projected rows; an order set in
        the config)."""
        return None

    @abstractmethod
    def temporal(self, spatial_out: Any, state: State) -> tuple[torch.Tensor, State]:
        """Temporal update: ``(output [N, out_channels], new state)``."""

    def temporal_window(
        self, spatial_outs: Sequence[Any], state: State, keep_outputs: bool = True
    ) -> tuple[list[torch.Tensor | None], State]:
        """The temporal updates of a whole window, in time order from ``state``: each step's output
        and the state after the last. The engine calls it when nothing runs between the steps (no
        hook changes a state or times a step), every spatial output being known by then.

        ``keep_outputs=False``: only the last step's output is read (the top layer: the head reads
        the last snapshot), so a layer may skip building the others and give ``None`` for them.
        The default runs ``temporal`` step by step; a layer overrides it where the window as a
        whole is cheaper (MPNN-LSTM skips its per-step concatenations)."""
        outputs: list[torch.Tensor | None] = []
        for spatial_out in spatial_outs:
            out, state = self.temporal(spatial_out, state)
            outputs.append(out)
        return outputs, state

    def spatial_partitioned(self, x: torch.Tensor, snapshot: Snapshot, state: State | None, ops: PartitionOps) -> Any:
        """``spatial`` on this rank's owned rows ``x`` of a node-partitioned snapshot: every
        convolution reads the halo rows too (``ops.with_halo``), its output keeps the owned rows.
        ``snapshot``'s edges refer to owned + halo rows. Layers with more than one convolution or
        with statistics over all nodes override this."""
        return ops.owned(self.spatial(ops.with_halo(x), snapshot.edge_index, snapshot.edge_weight, state))


class DGNN(nn.Module):
    """A stack of ``DGNNLayer`` and a linear head on the last layer's output at the last snapshot."""

    def __init__(self, layers: Sequence[DGNNLayer], out_channels: int) -> None:
        super().__init__()
        if not 1 <= len(layers) <= 3:
            raise ValueError(f"num_layers must be 1, 2 or 3, got {len(layers)}")
        self.layers = nn.ModuleList(layers)
        self.head = nn.Linear(layers[-1].out_channels, out_channels)

    def dgnn_layers(self) -> list[DGNNLayer]:
        """``layers`` as the ``DGNNLayer``s they are (torch types a ``ModuleList``'s items as ``Module``)."""
        return cast("list[DGNNLayer]", list(self.layers))

    def initial_states(self, num_nodes: int, device: torch.device, dtype: torch.dtype = torch.float32) -> list[State]:
        return [layer.initial_state(num_nodes, device, dtype) for layer in self.dgnn_layers()]

    def unroll(
        self,
        snapshots: Sequence[Snapshot],
        states: list[State] | None = None,
        hooks: LayerHooks = PLAIN,
        layer_major: bool = False,
    ) -> tuple[torch.Tensor, list[State]]:
        """Run ``snapshots`` in order through every layer: the top layer's output at the last one, and
        the states after it. ``states``: where to start (default ``initial_states``, i.e. a group's
        start; ESDG passes the states another rank sent).

        ``layer_major``: the same computation one layer at a time (every snapshot's spatial part,
        through ``hooks.spatial_layer``, then the temporal updates in time order), so the spatial
        parts of a layer can be interleaved; the result is the same. Hooks that do not act between
        temporal steps (``hooks.per_step`` false, e.g. ``PLAIN``) always run layer by layer, each
        layer's temporal steps as one window (``DGNNLayer.temporal_window``); with dropout in more
        than one layer the masks are then drawn layer by layer (the same distribution).
        """
        if not snapshots:
            raise ValueError("unroll needs at least one snapshot")
        if states is None:
            first = snapshots[0]
            states = self.initial_states(first.num_nodes, first.x.device, first.x.dtype)
        if layer_major or not hooks.per_step:
            return self._unroll_layers(snapshots, states, hooks)
        h, layers = snapshots[0].x, self.dgnn_layers()
        for t, snapshot in enumerate(snapshots):
            x = snapshot.x
            new_states = []
            for depth, (layer, state) in enumerate(zip(layers, states, strict=True)):
                state = hooks.state_in(depth, t, snapshot, state)
                spatial_out = hooks.spatial(depth, t, layer, x, snapshot, state)
                x, state = hooks.temporal(depth, t, layer, spatial_out, state)
                hooks.state_out(depth, t, state)
                new_states.append(state)
            h, states = x, new_states
        return h, states

    def _unroll_layers(
        self, snapshots: Sequence[Snapshot], states: list[State], hooks: LayerHooks
    ) -> tuple[torch.Tensor, list[State]]:
        xs: list[Any] = [snapshot.x for snapshot in snapshots]
        final = []
        top = len(self.layers) - 1
        for depth, (layer, state) in enumerate(zip(self.dgnn_layers(), states, strict=True)):
            spatial_outs = hooks.spatial_layer(depth, layer, xs, snapshots)
            if not hooks.per_step:
                xs, state = layer.temporal_window(spatial_outs, state, keep_outputs=depth < top)
                final.append(state)
                continue
            for t, snapshot in enumerate(snapshots):
                state = hooks.state_in(depth, t, snapshot, state)
                xs[t], state = hooks.temporal(depth, t, layer, spatial_outs[t], state)
                hooks.state_out(depth, t, state)
            final.append(state)
        return xs[-1], final

    def step(self, snapshot: Snapshot, states: list[State]) -> tuple[torch.Tensor, list[State]]:
        """One snapshot through every layer (``unroll`` of one): the top layer's output and the new states."""
        return self.unroll((snapshot,), states)

    def readout(self, h: torch.Tensor) -> torch.Tensor:
        """Predictions from the top layer's output: ``[N]`` for regression, ``[N, C]`` logits otherwise."""
        out = self.head(h)
        return out.squeeze(-1) if out.shape[-1] == 1 else out

    def forward(
        self, snapshots: Sequence[Snapshot], first_conv_outs: Sequence[Any] | None = None, hooks: LayerHooks = PLAIN
    ) -> torch.Tensor:
        """Predict the targets of the last snapshot of a group from all of its snapshots.

        ``first_conv_outs``: one precomputed reusable convolution output of the first layer per
        snapshot (``self.layers[0].conv_chain(...)``), shorthand for ``hooks=GivenFirstConv(...)``.
        """
        if first_conv_outs is not None:
            if len(first_conv_outs) != len(snapshots):
                raise ValueError(f"{len(first_conv_outs)} first-layer conv outputs for {len(snapshots)} snapshots")
            hooks = GivenFirstConv(first_conv_outs, hooks)
        h, _ = self.unroll(snapshots, hooks=hooks)
        return self.readout(h)


def check_sizes(in_channels: int, out_channels: int, hidden_channels: int, num_layers: int) -> None:
    """Reject sizes a model cannot be built with, before any layer is built."""
    if not isinstance(num_layers, int) or not 1 <= num_layers <= 3:
        raise ValueError(f"num_layers must be 1, 2 or 3, got {num_layers!r}")
    for name, value in (("hidden_channels", hidden_channels), ("in_channels", in_channels), ("out_channels", out_channels)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def stack_layers(
    make_layer: Callable[[int], DGNNLayer], in_channels: int, out_channels: int, hidden_channels: int, num_layers: int
) -> list[DGNNLayer]:
    """``num_layers`` layers from ``make_layer(input width)``; each reads the previous one's output."""
    check_sizes(in_channels, out_channels, hidden_channels, num_layers)
    layers: list[DGNNLayer] = []
    width = in_channels
    for _ in range(num_layers):
        layers.append(make_layer(width))
        width = layers[-1].out_channels
    return layers
