"""Counting the floating-point work of graph convolutions (REAL figure 20: GraphConv FLOPs).

``with count_conv_flops(model) as counter: model(snapshots)`` counts every ``GCNConv``,
``GATConv`` and ``SAGEConv`` call inside ``model`` (forward hooks, registered for the duration of the block only),
every ``gcn_aggregate`` call and EvolveGCN's projections (explicit calls), and what the
incremental chains of ``dygsched.models.incremental_kernels`` compute. Outside such a block nothing is
counted and nothing costs anything beyond one empty-list check.

Counting never synchronises a GPU with the host: a count that depends on tensor values (the
self-loops GCN replaces, GAT's changed attention terms) is kept as a device tensor and summed
when ``total`` or ``by_kind`` is read, which the engine does once per epoch, outside its timed
regions. Counters may be fed from several threads (BLAD's stage-1 thread).

Conventions (one multiply-add is 2 FLOPs; integer index work is free):

* ``transform``: ``2 * rows * in * out`` per dense projection (a bias add is ``elementwise``).
* ``aggregate``: ``2 * messages * width``: each message scaled by its coefficient and summed
  (SAGE's mean: ``messages * width`` sums and ``rows * width`` divisions).
* ``normalize``: scalar GCN normalisation: ``messages`` degree sums, ``rows`` inverse square
  roots, 2 multiplies per message coefficient (``3 * messages + rows`` for a full ``gcn_norm``).
* ``attention``: GAT scores: ``4 * rows * heads * channels`` for the source and target logits,
  and per message and head 5 operations (add, leaky ReLU, shift, exp, sum into the denominator)
  plus 1 for PyG's per-edge division by the denominator.
* ``elementwise``: other width-proportional row operations (bias, rescaling, differences).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

if TYPE_CHECKING:
    from torch_geometric.nn import GATConv, GCNConv, SAGEConv

KINDS = ("transform", "aggregate", "normalize", "attention", "elementwise")


class FlopCounter:
    """Running totals: ``total`` and ``by_kind`` (one entry per kind in ``KINDS``).

    ``add`` takes an integer or a 0-dimensional integer tensor; tensors are summed only when the
    totals are read (one host-device synchronisation then, none while counting).
    """

    def __init__(self) -> None:
        self._counts: dict[str, int] = dict.fromkeys(KINDS, 0)
        self._pending: dict[str, list[torch.Tensor]] = {kind: [] for kind in KINDS}
        self._lock = threading.Lock()

    @property
    def by_kind(self) -> dict[str, int]:
        with self._lock:
            for kind, pending in self._pending.items():
                for device in {t.device for t in pending}:
                    self._counts[kind] += int(torch.stack([t for t in pending if t.device == device]).sum())
                pending.clear()
            return dict(self._counts)

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())

    def add(self, kind: str, flops: int | torch.Tensor) -> None:
        if kind not in self._counts:
            raise ValueError(f"unknown FLOP kind {kind!r} (choose from {', '.join(KINDS)})")
        with self._lock:
            if isinstance(flops, torch.Tensor):
                self._pending[kind].append(flops.detach().to(torch.int64))
            else:
                self._counts[kind] += int(flops)

    def __repr__(self) -> str:
        return f"FlopCounter(total={self.total}, by_kind={self.by_kind})"


_ACTIVE: list[FlopCounter] = []


def counting() -> bool:
    """Whether any counter is active (callers skip computing sizes otherwise)."""
    return bool(_ACTIVE)


def add_flops(kind: str, flops: int | torch.Tensor) -> None:
    """Add ``flops`` of ``kind`` to every active counter (no-op when none is)."""
    for counter in _ACTIVE:
        counter.add(kind, flops)


def _non_loop_edges(edge_index: torch.Tensor) -> int | torch.Tensor:
    """Edges that are not self-loops: an integer on the CPU, a device tensor (no sync) on a GPU."""
    count = (edge_index[0] != edge_index[1]).sum()
    return count if count.is_cuda else int(count)


def gcn_conv_flops(counter: FlopCounter, conv: GCNConv, x: torch.Tensor, edge_index: torch.Tensor) -> None:
    """What ``GCNConv.forward`` computes on ``x`` and ``edge_index``."""
    n = x.size(0)
    messages = _non_loop_edges(edge_index) + n if conv.normalize and conv.add_self_loops else edge_index.size(1)
    counter.add("transform", 2 * n * conv.in_channels * conv.out_channels)
    if conv.normalize:
        counter.add("normalize", 3 * messages + n)
    counter.add("aggregate", 2 * messages * conv.out_channels)
    if conv.bias is not None:
        counter.add("elementwise", n * conv.out_channels)


def gat_conv_flops(counter: FlopCounter, conv: GATConv, x: torch.Tensor, edge_index: torch.Tensor) -> None:
    """What ``GATConv.forward`` computes on ``x`` and ``edge_index`` (self-loops replaced by one per node)."""
    n = x.size(0)
    heads, channels = conv.heads, conv.out_channels
    width = heads * channels
    messages = _non_loop_edges(edge_index) + n if conv.add_self_loops else edge_index.size(1)
    counter.add("transform", 2 * n * conv.in_channels * width)
    if conv.res is not None:
        counter.add("transform", 2 * n * conv.in_channels * (width if conv.concat else channels))
    counter.add("attention", 4 * n * width + 6 * messages * heads)
    counter.add("aggregate", 2 * messages * width)
    out_width = width if conv.concat else channels
    if not conv.concat:
        counter.add("elementwise", n * width)
    if conv.res is not None:
        counter.add("elementwise", n * out_width)
    if conv.bias is not None:
        counter.add("elementwise", n * out_width)


def sage_conv_flops(counter: FlopCounter, conv: SAGEConv, x: Any, edge_index: torch.Tensor) -> None:
    """What ``SAGEConv.forward`` computes (mean aggregation of the sources, on the destinations the
    root weight, both linear maps): ``x`` is a tensor or a (sources, destinations) pair."""
    sources, targets = x if isinstance(x, tuple) else (x, x)
    n_dst = targets.size(0) if targets is not None else sources.size(0)
    width_in = sources.size(1)
    if conv.project:
        counter.add("transform", 2 * sources.size(0) * width_in * width_in)
    counter.add("aggregate", edge_index.size(1) * width_in + n_dst * width_in)  # sums, then the mean's division
    counter.add("transform", 2 * n_dst * width_in * conv.out_channels)
    if conv.root_weight and targets is not None:
        counter.add("transform", 2 * n_dst * targets.size(1) * conv.out_channels)
        counter.add("elementwise", n_dst * conv.out_channels)
    if conv.lin_l.bias is not None:
        counter.add("elementwise", n_dst * conv.out_channels)


def _hook(counter: FlopCounter, module: nn.Module) -> Any:
    from torch_geometric.nn import GATConv, GCNConv, SAGEConv

    def count(mod: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
        x = args[0] if args else kwargs["x"]
        edge_index = args[1] if len(args) > 1 else kwargs["edge_index"]
        if isinstance(mod, GCNConv):
            gcn_conv_flops(counter, mod, x, edge_index)
        elif isinstance(mod, GATConv):
            gat_conv_flops(counter, mod, x, edge_index)
        elif isinstance(mod, SAGEConv):
            sage_conv_flops(counter, mod, x, edge_index)

    if isinstance(module, (GCNConv, GATConv, SAGEConv)):
        return module.register_forward_hook(count, with_kwargs=True)
    return None


@contextmanager
def count_conv_flops(model: nn.Module | None = None) -> Iterator[FlopCounter]:
    """Count graph-convolution FLOPs inside the block (see the module docstring for the formulas).

    With ``model``, every ``GCNConv``/``GATConv`` in it is counted through a forward hook that
    exists only inside the block and reports to this counter alone; explicit counts
    (``gcn_aggregate``, the incremental chains) go to every active counter.
    """
    counter = FlopCounter()
    handles = []
    if model is not None:
        for module in model.modules():
            handle = _hook(counter, module)
            if handle is not None:
                handles.append(handle)
    _ACTIVE.append(counter)
    try:
        yield counter
    finally:
        _ACTIVE.remove(counter)
        for handle in handles:
            handle.remove()
