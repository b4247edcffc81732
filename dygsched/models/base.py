"""What every DGNN looks like to the engine: layers of (spatial aggregation, temporal update)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import torch
from torch import nn
from torch_geometric.utils import scatter

from dygsched.data.temporal_graph import Snapshot
from dygsched.models import flops
from dygsched.models.gcn_normalization import normalized_edges

if TYPE_CHECKING:
    from dygsched.data.diffmap import DiffMap, EdgeSet

State = tuple[torch.Tensor, ...]


class ZeroState(tuple):
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
        self, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor, state: State, conv_out: Any = None
    ) -> Any:
        """Structure encoding of ``x`` on one snapshot's graph.

        ``conv_out``: this snapshot's reusable convolution output from ``conv_chain``; when given,
        it replaces that computation and everything else runs unchanged, in the same order.
        """

    def conv_chain(
        self, x: torch.Tensor, first: EdgeSet, diffs: Sequence[DiffMap], paths: Sequence[str] | None = None
    ) -> list[Any]:
        """The reusable convolution output of every snapshot of a chain (``1 + len(diffs)`` of them).

        ``x``: the chain's first snapshot's input; ``first``: its ``EdgeSet``; ``diffs``: the diff
        maps to each later snapshot; ``paths``: ``"full"`` or ``"diff"`` per diff map (default all
        ``"diff"``). See ``dygsched.models.incremental``.
        """
        raise NotImplementedError(f"{type(self).__name__} has no reusable convolution (reuse = None)")

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

    def spatial_partitioned(self, x: torch.Tensor, snapshot: Snapshot, state: State, ops: PartitionOps) -> Any:
        """``spatial`` on this rank's owned rows ``x`` of a node-partitioned snapshot: every
        convolution reads the halo rows too (``ops.with_halo``), its output keeps the owned rows.
        ``snapshot``'s edges refer to owned + halo rows. Layers with more than one convolution or
        with statistics over all nodes override this."""
        return ops.owned(self.spatial(ops.with_halo(x), snapshot.edge_index, snapshot.edge_weight, state))


class PartitionOps(Protocol):
    """What a node-partitioned rank offers a layer's ``spatial_partitioned`` (the engine implements it)."""

    def with_halo(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` (owned rows) followed by the halo rows, fetched from their owners."""

    def owned(self, out: Any) -> Any:
        """The owned rows of a tensor over owned + halo rows (or of each tensor of a tuple)."""

    def sum_over_ranks(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` summed over every rank, differentiably."""


def synced_batch_norm(norm: torch.nn.BatchNorm1d, x: torch.Tensor, ops: PartitionOps) -> torch.Tensor:
    """``norm(x)`` as if every rank's rows were one batch: in training mode the batch statistics are
    summed over ranks (and the running statistics updated with them, as ``BatchNorm1d`` does); in
    eval mode the running statistics apply as usual."""
    if not norm.training:
        return norm(x)
    count = ops.sum_over_ranks(x.new_tensor([float(x.shape[0])]))
    mean = ops.sum_over_ranks(x.sum(dim=0)) / count
    centred = x - mean
    var = ops.sum_over_ranks((centred * centred).sum(dim=0)) / count
    if norm.track_running_stats and norm.running_mean is not None and norm.running_var is not None:
        with torch.no_grad():
            momentum = norm.momentum if norm.momentum is not None else 1.0 / float(norm.num_batches_tracked + 1)
            unbiased = var * count / (count - 1).clamp(min=1)
            norm.running_mean.mul_(1 - momentum).add_(momentum * mean)
            norm.running_var.mul_(1 - momentum).add_(momentum * unbiased)
            norm.num_batches_tracked.add_(1)
    out = centred / torch.sqrt(var + norm.eps)
    return out * norm.weight + norm.bias if norm.affine else out


class LayerHooks:
    """What an executor may do between a ``DGNN``'s layers; the defaults run each layer as it is.

    ``DGNN.unroll`` is the one layer loop every executor, the profiler and BLAD's pipeline run:
    for each snapshot ``t`` of a sequence and each layer ``depth``, it takes the layer's state
    (``state_in``), calls ``spatial`` on the layer's input ``x`` and ``temporal`` on the result, and
    hands the new state on (``state_out``). A hook may supply a precomputed first-layer convolution
    (REAL's chains) or spatial output (BLAD's stage 1), fetch halo rows before the aggregation
    (node-partitioned ranks), time the two parts (profiling), or change the states between
    snapshots (FlareDTDG's inheritance); it must return what the layer itself would.
    ``spatial_layer`` runs one layer's spatial parts over every snapshot at once; ``unroll``
    calls it when run layer by layer (``layer_major=True``), so a hook can interleave them
    (overlapping halo exchanges with computation).
    """

    def spatial(self, depth: int, t: int, layer: DGNNLayer, x: torch.Tensor, snapshot: Snapshot, state: State | None) -> Any:
        return layer.spatial(x, snapshot.edge_index, snapshot.edge_weight, state)  # type: ignore[arg-type]

    def spatial_layer(self, depth: int, layer: DGNNLayer, xs: Sequence[torch.Tensor], snapshots: Sequence[Snapshot]) -> list[Any]:
        """Layer ``depth``'s spatial part of every snapshot (no model's spatial part reads the state)."""
        return [self.spatial(depth, t, layer, x, snapshot, None) for t, (x, snapshot) in enumerate(zip(xs, snapshots, strict=True))]

    def temporal(self, depth: int, t: int, layer: DGNNLayer, spatial_out: Any, state: State) -> tuple[torch.Tensor, State]:
        return layer.temporal(spatial_out, state)

    def state_in(self, depth: int, t: int, snapshot: Snapshot, state: State) -> State:
        """The state layer ``depth`` starts snapshot ``t`` from (default: what the snapshot before left)."""
        return state

    def state_out(self, depth: int, t: int, state: State) -> None:
        """The state layer ``depth`` left after snapshot ``t`` (default: nothing kept)."""

    @property
    def per_step(self) -> bool:
        """Whether these hooks act between temporal steps (``temporal``, ``state_in`` or
        ``state_out`` changed); if not, ``unroll`` lets each layer run its window's temporal steps
        at once (``DGNNLayer.temporal_window``)."""
        return _overrides(type(self), LayerHooks, _STEP_HOOKS)


_STEP_HOOKS = ("temporal", "state_in", "state_out")


def _overrides(cls: type, base: type, names: Sequence[str]) -> bool:
    return any(getattr(cls, name) is not getattr(base, name) for name in names)


PLAIN = LayerHooks()


class DelegatingHooks(LayerHooks):
    """Hooks that change some steps and leave every other one to ``inner`` (so hooks compose).

    A subclass that does not change ``spatial`` leaves whole layers to ``inner.spatial_layer`` too
    (which may interleave them); one that does runs its own ``spatial`` snapshot by snapshot.
    """

    def __init__(self, inner: LayerHooks = PLAIN) -> None:
        self.inner = inner

    def spatial(self, depth: int, t: int, layer: DGNNLayer, x: torch.Tensor, snapshot: Snapshot, state: State | None) -> Any:
        return self.inner.spatial(depth, t, layer, x, snapshot, state)

    def spatial_layer(self, depth: int, layer: DGNNLayer, xs: Sequence[torch.Tensor], snapshots: Sequence[Snapshot]) -> list[Any]:
        if type(self).spatial is DelegatingHooks.spatial:
            return self.inner.spatial_layer(depth, layer, xs, snapshots)
        return super().spatial_layer(depth, layer, xs, snapshots)

    def temporal(self, depth: int, t: int, layer: DGNNLayer, spatial_out: Any, state: State) -> tuple[torch.Tensor, State]:
        return self.inner.temporal(depth, t, layer, spatial_out, state)

    def state_in(self, depth: int, t: int, snapshot: Snapshot, state: State) -> State:
        return self.inner.state_in(depth, t, snapshot, state)

    def state_out(self, depth: int, t: int, state: State) -> None:
        self.inner.state_out(depth, t, state)

    @property
    def per_step(self) -> bool:
        return _overrides(type(self), DelegatingHooks, _STEP_HOOKS) or self.inner.per_step


class GivenFirstConv(DelegatingHooks):
    """Layer 0 with its reusable convolution given per snapshot (``conv_outs[t]``, from
    ``DGNNLayer.conv_chain``); everything else, layer 0's remaining spatial work included, runs."""

    def __init__(self, conv_outs: Sequence[Any], inner: LayerHooks = PLAIN) -> None:
        super().__init__(inner)
        self.conv_outs = conv_outs

    def spatial(self, depth: int, t: int, layer: DGNNLayer, x: torch.Tensor, snapshot: Snapshot, state: State) -> Any:
        if depth == 0:
            return layer.spatial(x, snapshot.edge_index, snapshot.edge_weight, state, conv_out=self.conv_outs[t])
        return self.inner.spatial(depth, t, layer, x, snapshot, state)


class GivenFirstSpatial(DelegatingHooks):
    """Layer 0's whole spatial output given per snapshot (``spatial_outs[t]``): BLAD's stage 1
    computed it ahead, possibly in another thread."""

    def __init__(self, spatial_outs: Sequence[Any], inner: LayerHooks = PLAIN) -> None:
        super().__init__(inner)
        self.spatial_outs = spatial_outs

    def spatial(self, depth: int, t: int, layer: DGNNLayer, x: torch.Tensor, snapshot: Snapshot, state: State) -> Any:
        if depth == 0:
            return self.spatial_outs[t]
        return self.inner.spatial(depth, t, layer, x, snapshot, state)


class DGNN(nn.Module):
    """A stack of ``DGNNLayer`` and a linear head on the last layer's output at the last snapshot."""

    def __init__(self, layers: Sequence[DGNNLayer], out_channels: int) -> None:
        super().__init__()
        if not 1 <= len(layers) <= 3:
            raise ValueError(f"num_layers must be 1, 2 or 3, got {len(layers)}")
        self.layers = nn.ModuleList(layers)
        self.head = nn.Linear(layers[-1].out_channels, out_channels)

    def initial_states(self, num_nodes: int, device: torch.device, dtype: torch.dtype = torch.float32) -> list[State]:
        return [layer.initial_state(num_nodes, device, dtype) for layer in self.layers]

    def unroll(
        self, snapshots: Sequence[Snapshot], states: list[State] | None = None, hooks: LayerHooks = PLAIN, layer_major: bool = False
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
        h = snapshots[0].x
        for t, snapshot in enumerate(snapshots):
            x = snapshot.x
            new_states = []
            for depth, (layer, state) in enumerate(zip(self.layers, states, strict=True)):
                state = hooks.state_in(depth, t, snapshot, state)
                spatial_out = hooks.spatial(depth, t, layer, x, snapshot, state)
                x, state = hooks.temporal(depth, t, layer, spatial_out, state)
                hooks.state_out(depth, t, state)
                new_states.append(state)
            h, states = x, new_states
        return h, states

    def _unroll_layers(self, snapshots: Sequence[Snapshot], states: list[State], hooks: LayerHooks) -> tuple[torch.Tensor, list[State]]:
        xs: list[Any] = [snapshot.x for snapshot in snapshots]
        final = []
        top = len(self.layers) - 1
        for depth, (layer, state) in enumerate(zip(self.layers, states, strict=True)):
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


class GCNStack(DGNN):
    """A DGNN of ``num_layers`` GCN-based layers of one kind (``layer_type``) and a linear head.

    TGCN, WD-GCN and EvolveGCN-O/-H differ only in their layer; ``improved`` and
    ``add_self_loops`` are GCN's normalisation options, passed to every layer with any option of
    the layer's own (``layer_options``, e.g. TGCN's ``project_first``).
    """

    layer_type: Callable[..., DGNNLayer]  # (input width, hidden, improved, add_self_loops, **layer_options)

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        hidden_channels: int = 64,
        num_layers: int = 2,
        improved: bool = False,
        add_self_loops: bool = True,
        **layer_options: Any,
    ) -> None:
        make_layer = lambda width: type(self).layer_type(width, hidden_channels, improved, add_self_loops, **layer_options)  # noqa: E731
        super().__init__(stack_layers(make_layer, in_channels, out_channels, hidden_channels, num_layers), out_channels)


def gcn_aggregate(
    x: torch.Tensor,
    edge_index: torch.Tensor,
    edge_weight: torch.Tensor | None = None,
    *,
    improved: bool = False,
    add_self_loops: bool = True,
) -> torch.Tensor:
    """``D^-1/2 (A + I) D^-1/2 x``: GCN's neighbourhood aggregation without the projection (the
    normalised edges are kept per graph, ``dygsched.models.gcn_normalization``).

    The same normalisation as ``torch_geometric.nn.GCNConv`` (messages flow from row 0 to row 1
    of ``edge_index``), so ``gcn_aggregate(x, ...) @ W`` equals ``GCNConv`` with weight ``W`` and
    no bias up to float rounding. Models whose weights change with time (EvolveGCN) aggregate
    here, in ``spatial``, and project in ``temporal``, which keeps the aggregation reusable.
    """
    num_nodes = x.size(0)
    edge_index, weight = normalized_edges(edge_index, edge_weight, num_nodes, improved, add_self_loops, x.dtype)
    if flops.counting():
        flops.add_flops("aggregate", 2 * edge_index.size(1) * x.size(1))
    messages = x.index_select(0, edge_index[0]) * weight.unsqueeze(-1)
    return scatter(messages, edge_index[1], dim=0, dim_size=num_nodes, reduce="sum")


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """``F.dropout(x, p, training)`` in distribution (each entry kept with probability ``1 - p``,
    scaled by ``1 / (1 - p)``), its mask drawn from a uniform sample: on a CPU this is 3x faster
    than the Bernoulli sampling ``F.dropout`` runs (0.28 against 0.9 ms forward and backward for
    ``[1000, 64]``), which made dropout the second cost of an MPNN-LSTM step. The masks differ
    from ``F.dropout``'s for the same seed."""
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return torch.zeros_like(x)
    mask = torch.empty_like(x).uniform_().ge_(p).div_(1.0 - p)
    return x * mask


def lstm_cell(
    cell: nn.LSTMCell, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor], zero_state: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """``cell(x, state)``; with ``zero_state`` (``H = C = 0``, a group's start) the recurrent
    product and the forget gate's term vanish, so only ``x``'s share of the gates is computed:
    ``C' = sigmoid(i) * tanh(g)``, ``H' = sigmoid(o) * tanh(C')`` (the same numbers up to rounding)."""
    if not zero_state:
        return cell(x, state)
    hidden = cell.hidden_size
    bias = cell.bias_ih + cell.bias_hh if cell.bias else None
    gates = torch.nn.functional.linear(x, cell.weight_ih, bias)
    c = torch.sigmoid(gates[:, :hidden]) * torch.tanh(gates[:, 2 * hidden : 3 * hidden])
    return torch.sigmoid(gates[:, 3 * hidden :]) * torch.tanh(c), c


def gcn_conv(conv: nn.Module, x: torch.Tensor, edge_index: torch.Tensor, edge_weight: torch.Tensor | None) -> torch.Tensor:
    """``conv(x, edge_index, edge_weight)`` for a ``torch_geometric.nn.GCNConv``, with the normalised
    edges kept per graph (``gcn_aggregate``): the module's computation (projection, aggregation,
    bias) and FLOP counts. A conv that does not normalise, caches one graph or reverses the flow
    is called as it is."""
    if not conv.normalize or conv.cached or conv.flow != "source_to_target":
        return conv(x, edge_index, edge_weight)
    if flops.counting():
        flops.add_flops("transform", 2 * x.size(0) * conv.in_channels * conv.out_channels)
        if conv.bias is not None:
            flops.add_flops("elementwise", x.size(0) * conv.out_channels)
    out = gcn_aggregate(conv.lin(x), edge_index, edge_weight, improved=conv.improved, add_self_loops=conv.add_self_loops)
    return out if conv.bias is None else out + conv.bias
