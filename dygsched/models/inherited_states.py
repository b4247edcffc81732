"""Hidden states inherited from window to window, as the model's layer loop runs a window.

Used by FlareDTDG (its windows' blocks, oldest to newest: a block's rows are a prefix of the rank's
owned rows in the shrinking order, growing from the oldest decayed block to the full ones) and by
UTG's training procedure on snapshot groups (``link.procedure=utg``: whole snapshots, each window
starting from the state the window before left; truncated backpropagation through time). Blocks
run oldest to newest (``DGNN.unroll``).

Inheritance (the authors' rule; the spec's "Hidden-state inheritance"): ``saved[k]`` is the
detached state entering snapshot ``k``, left by the window before. The window's oldest block starts
from ``saved[k]`` whole (zeros where it is absent or shorter); every later block takes its first
rows (as many as the block before it had) from the state flowing in, with its gradient, and the
rest from ``saved[k]``. After each block its detached state is saved for the next snapshot.
Backpropagation stops at the window. A layer whose state is not per node (EvolveGCN's weight)
starts the window from its saved state and otherwise flows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from dygsched.data.temporal_graph import Snapshot
from dygsched.models.dgnn import DGNN, DGNNLayer, State
from dygsched.models.hooks import PLAIN, DelegatingHooks, LayerHooks


def _rows(source: torch.Tensor | None, like: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """Rows ``[start, stop)`` of ``source``, zeros where ``source`` is absent or too short."""
    width = like.shape[1:]
    if stop <= start:
        return like.new_zeros((0, *width))
    if source is None:
        return like.new_zeros((stop - start, *width))
    taken = source[start:stop].to(like.device)
    missing = (stop - start) - taken.shape[0]
    return taken if missing <= 0 else torch.cat([taken, like.new_zeros((missing, *width))])


class InheritedStates(DelegatingHooks):
    """Hooks that give each block of a window the states of the inheritance rule (module docstring).

    ``snapshot_ids[t]``: the snapshot index of block ``t``; ``saved``: the dictionary of saved states,
    read and updated in place (``None``: no inheritance, every window starts from the initial states).
    """

    def __init__(
        self, model: DGNN, snapshot_ids: Sequence[int], saved: dict[int, list[State | None]] | None, inner: LayerHooks = PLAIN
    ) -> None:
        super().__init__(inner)
        self.layers = model.dgnn_layers()
        self.ids, self.saved = list(snapshot_ids), saved
        self.outputs: list[torch.Tensor] = []  # the top layer's output of each block

    def state_in(self, depth: int, t: int, snapshot: Snapshot, state: State) -> State:
        state = self.inner.state_in(depth, t, snapshot, state)
        stored = self.saved.get(self.ids[t]) if self.saved is not None else None
        kept = stored[depth] if stored is not None else None
        if not self.layers[depth].node_state:
            return kept if t == 0 and kept is not None else state
        rows = snapshot.x.shape[0]
        parts = []
        for i, tensor in enumerate(state):
            flowing = 0 if t == 0 else tensor.shape[0]
            if flowing > rows:
                raise ValueError(f"block {t} has {rows} rows, fewer than the {flowing} of the block before it")
            tail = _rows(kept[i] if kept is not None else None, tensor, flowing, rows)
            parts.append(torch.cat([tensor[:flowing], tail]) if flowing else tail)
        return tuple(parts)

    def state_out(self, depth: int, t: int, state: State) -> None:
        self.inner.state_out(depth, t, state)
        if self.saved is not None:
            self.saved.setdefault(self.ids[t] + 1, [None] * len(self.layers))[depth] = tuple(tensor.detach() for tensor in state)

    def temporal(self, depth: int, t: int, layer: DGNNLayer, spatial_out: Any, state: State) -> tuple[torch.Tensor, State]:
        out, new_state = self.inner.temporal(depth, t, layer, spatial_out, state)
        if depth == len(self.layers) - 1:
            self.outputs.append(out)
        return out, new_state
