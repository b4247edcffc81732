"""What an executor may do between a ``DGNN``'s layers: ``LayerHooks`` and the hooks every strategy shares."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from dygsched.data.temporal_graph import Snapshot

if TYPE_CHECKING:
    from dygsched.models.dgnn import DGNNLayer, State


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
        return layer.spatial(x, snapshot.edge_index, snapshot.edge_weight, state)

    def spatial_layer(self, depth: int, layer: DGNNLayer, xs: Sequence[torch.Tensor], snapshots: Sequence[Snapshot]) -> list[Any]:
        """Layer ``depth``'s spatial part of every snapshot (no model's spatial part reads the state)."""
        return [
            self.spatial(depth, t, layer, x, snapshot, None) for t, (x, snapshot) in enumerate(zip(xs, snapshots, strict=True))
        ]

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

    def spatial(self, depth: int, t: int, layer: DGNNLayer, x: torch.Tensor, snapshot: Snapshot, state: State | None) -> Any:
        if depth == 0:
            return layer.spatial(x, snapshot.edge_index, snapshot.edge_weight, state, conv_out=self.conv_outs[t])
        return self.inner.spatial(depth, t, layer, x, snapshot, state)


class GivenFirstSpatial(DelegatingHooks):
    """Layer 0's whole spatial output given per snapshot (``spatial_outs[t]``): BLAD's stage 1
    computed it ahead, possibly in another thread."""

    def __init__(self, spatial_outs: Sequence[Any], inner: LayerHooks = PLAIN) -> None:
        super().__init__(inner)
        self.spatial_outs = spatial_outs

    def spatial(self, depth: int, t: int, layer: DGNNLayer, x: torch.Tensor, snapshot: Snapshot, state: State | None) -> Any:
        if depth == 0:
            return self.spatial_outs[t]
        return self.inner.spatial(depth, t, layer, x, snapshot, state)
