"""The sparse-dense product of the incremental GCN update (``spmm``), also what the engine's
aggregation timing measures, and a node set's local ids (``node_set``)."""

from __future__ import annotations

import torch
from torch import Tensor


def spmm(rows: Tensor, cols: Tensor, coef: Tensor, dense: Tensor, num_rows: int) -> Tensor:
    """``out[r] = sum_k coef[k] * dense[cols[k]]`` over the ``k`` with ``rows[k] = r``: ``[num_rows, F]``.

    One sparse-dense product (no ``[messages, F]`` intermediate); differentiable in ``dense``.
    """
    if rows.numel() == 0:
        return dense.new_zeros(num_rows, dense.size(1))
    size = (num_rows, dense.size(0))
    matrix = torch.sparse_coo_tensor(torch.stack([rows, cols]), coef.to(dense.dtype), size, check_invariants=False)
    return torch.sparse.mm(matrix, dense)


def node_set(num_nodes: int, *parts: Tensor) -> tuple[Tensor, Tensor]:
    """The sorted distinct ids in ``parts`` and a map from id to position in them (-1 elsewhere)."""
    device = parts[0].device
    mark = torch.zeros(num_nodes, dtype=torch.bool, device=device)
    for part in parts:
        mark[part] = True
    ids = mark.nonzero().flatten()
    local = torch.full((num_nodes,), -1, dtype=torch.long, device=device)
    local[ids] = torch.arange(ids.numel(), device=device)
    return ids, local
