"""Graph normalisations computed once per graph and kept while that graph lives.

GCN's normalised adjacency (``gcn_norm``: self-loops filled in, ``D^-1/2 (A + I) D^-1/2``) and
Chebyshev's scaled Laplacian (``ChebConv``'s ``2 L / lambda_max - I``) depend only on a snapshot's
edges, which do not change from one epoch to the next, yet a layer recomputes them at every call:
some twenty small tensor operations per snapshot and layer. ``normalized_edges`` and
``scaled_laplacian_edges`` keep the result for as long as the edge tensors it was computed from
are alive and unmodified (checked by identity and version counter; an entry disappears with its
tensors), so every later call on the same graph costs one dictionary lookup. The values are the
ones ``gcn_norm`` and ``ChebConv`` compute: results do not change.

Edge weights that require gradients, and calls under ``torch.inference_mode`` (whose tensors
autograd cannot save later), are computed and not kept. Only what is computed is counted as
``normalize`` FLOPs (``dygsched.models.flops``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from dygsched.models import flops

if TYPE_CHECKING:
    from torch_geometric.nn import ChebConv

_KEPT: dict[tuple[Any, ...], tuple[Any, Any, tuple[int, int], tuple[torch.Tensor, torch.Tensor]]] = {}


def _absent() -> None:
    return None


def kept_per_graph(
    kind: tuple[Any, ...],
    edge_index: torch.Tensor,
    edge_weight: torch.Tensor | None,
    compute: Callable[[], tuple[torch.Tensor, torch.Tensor]],
) -> tuple[torch.Tensor, torch.Tensor]:
    """``compute()``, kept for these edge tensors: ``kind`` names the normalisation and its settings
    (one kept result per graph and kind), ``compute`` counts its own FLOPs."""
    key = (id(edge_index), id(edge_weight), *kind)
    versions = (edge_index._version, -1 if edge_weight is None else edge_weight._version)
    kept = _KEPT.get(key)
    if kept is not None and kept[0]() is edge_index and kept[1]() is edge_weight and kept[2] == versions:
        return kept[3]
    normalized = compute()
    differentiable = edge_weight is not None and edge_weight.requires_grad
    if not differentiable and not torch.is_inference_mode_enabled():
        forget = lambda _dead, key=key: _KEPT.pop(key, None)  # noqa: E731
        weight_ref = _absent if edge_weight is None else weakref.ref(edge_weight, forget)
        _KEPT[key] = (weakref.ref(edge_index, forget), weight_ref, versions, normalized)
    return normalized


def normalized_edges(
    edge_index: torch.Tensor,
    edge_weight: torch.Tensor | None,
    num_nodes: int,
    improved: bool,
    add_self_loops: bool,
    dtype: torch.dtype,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``gcn_norm(edge_index, edge_weight, num_nodes, improved, add_self_loops, dtype=dtype)``:
    the edges (self-loops included) and their coefficients, from the kept copy when there is one."""

    def compute() -> tuple[torch.Tensor, torch.Tensor]:
        normalized = gcn_norm(
            edge_index, edge_weight, num_nodes=num_nodes, improved=improved, add_self_loops=add_self_loops, dtype=dtype
        )
        if flops.counting():
            flops.add_flops("normalize", 3 * normalized[0].size(1) + num_nodes)
        return normalized

    return kept_per_graph(("gcn", num_nodes, improved, add_self_loops, dtype), edge_index, edge_weight, compute)


def scaled_laplacian_edges(
    conv: ChebConv, edge_index: torch.Tensor, edge_weight: torch.Tensor | None, num_nodes: int, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """The edges (a self-loop on every node included) and coefficients of the scaled Laplacian
    ``2 L / lambda_max - I`` that ``conv`` (a ``ChebConv``) propagates over, with its normalisation
    and ``lambda_max`` left to ``ChebConv``'s default (``2`` times the Laplacian's largest entry),
    as ``conv(x, edge_index, edge_weight)`` computes them; from the kept copy when there is one."""

    def compute() -> tuple[torch.Tensor, torch.Tensor]:
        laplacian = conv.__norm__(edge_index, num_nodes, edge_weight, conv.normalization, None, dtype=dtype)
        if flops.counting():  # degree sums, inverse roots, 2 products per coefficient, the rescaling by 2 / lambda_max
            flops.add_flops("normalize", 4 * laplacian[0].size(1) + num_nodes)
        return laplacian

    return kept_per_graph(("chebyshev", num_nodes, conv.normalization, dtype), edge_index, edge_weight, compute)
