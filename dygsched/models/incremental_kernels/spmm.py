"""The sparse-dense product of the incremental GCN update (``spmm``), also what the engine's
aggregation timing measures, and a node set's local ids (``node_set``).

Both can be told a size the host knows (``distinct``, ``size``): on a GPU they then find what they
would have had to read back first (a product's distinct entries, a set's members) without
stopping the host, and compute the same values."""

from __future__ import annotations

import torch
from torch import Tensor

from dygsched.data import diffmap

NodePart = Tensor | tuple[Tensor, Tensor]
"""Node ids, or ``(ids, keep)``: the distinct ``ids`` where the boolean ``keep`` is true."""


def spmm(rows: Tensor, cols: Tensor, coef: Tensor, dense: Tensor, num_rows: int, distinct: int | None = None) -> Tensor:
    """``out[r] = sum_k coef[k] * dense[cols[k]]`` over the ``k`` with ``rows[k] = r``: ``[num_rows, F]``.

    One sparse-dense product (no ``[messages, F]`` intermediate); differentiable in ``dense``.
    ``distinct``: how many distinct ``(row, col)`` pairs there are, where the host knows it. A GPU
    coalesces the matrix before its product and reads that count back to size the result; given
    it, the coalesced matrix (entries sorted, duplicates' coefficients summed) is built here
    without the read and handed over as coalesced: the same matrix, so the same product. On CPU
    the product takes the matrix as it is, as before.
    """
    if rows.numel() == 0:
        return dense.new_zeros(num_rows, dense.size(1))
    size = (num_rows, dense.size(0))
    if distinct is not None and diffmap.on_gpu(dense):
        indices, values = coalesced(rows, cols, coef.to(dense.dtype), size[1], distinct)
        matrix = torch.sparse_coo_tensor(indices, values, size, is_coalesced=True, check_invariants=False)
    else:
        matrix = torch.sparse_coo_tensor(torch.stack([rows, cols]), coef.to(dense.dtype), size, check_invariants=False)
    return torch.sparse.mm(matrix, dense)


def coalesced(rows: Tensor, cols: Tensor, values: Tensor, num_cols: int, distinct: int) -> tuple[Tensor, Tensor]:
    """The indices and values of the COO matrix ``(rows, cols, values)`` coalesced, as
    ``Tensor.coalesce`` gives them (sorted by row, then column; a repeated pair's values summed),
    for a matrix with ``distinct`` distinct pairs, found without reading anything back."""
    keys = rows * num_cols + cols
    order = torch.argsort(keys)
    keys, values = keys[order], values[order]
    starts = torch.ones_like(keys, dtype=torch.bool)
    starts[1:] = keys[1:] != keys[:-1]
    slot = torch.cumsum(starts, 0) - 1  # each entry's place among the distinct pairs
    unique = torch.zeros(distinct, dtype=keys.dtype, device=keys.device).scatter_(0, slot, keys)  # a pair's copies agree
    summed = torch.zeros(distinct, dtype=values.dtype, device=values.device).index_add_(0, slot, values)
    return torch.stack([torch.div(unique, num_cols, rounding_mode="floor"), torch.remainder(unique, num_cols)]), summed


def node_set(num_nodes: int, *parts: NodePart, size: int | None = None) -> tuple[Tensor, Tensor]:
    """The sorted distinct ids in ``parts`` and a map from id to position in them (-1 elsewhere).

    A part is node ids, or ``(ids, keep)``: those of the distinct ``ids`` whose ``keep`` is true
    (no boolean selection, which would read its count back). ``size``: how many ids the set has,
    where the host knows it; a GPU then finds them without reporting that count."""
    device = (parts[0][0] if isinstance(parts[0], tuple) else parts[0]).device
    mark = torch.zeros(num_nodes, dtype=torch.bool, device=device)
    for part in parts:
        if isinstance(part, tuple):
            ids, keep = part
            mark[ids] = mark[ids] | keep
        else:
            mark[part] = True
    ids = _marked(mark, size).flatten()
    local = torch.full((num_nodes,), -1, dtype=torch.long, device=device)
    local[ids] = torch.arange(ids.numel(), device=device)
    return ids, local


def _marked(mark: Tensor, size: int | None) -> Tensor:
    """The positions of ``mark``'s true entries, in order; with their count ``size``, found without
    reading it back (where this torch has ``nonzero_static`` for the device, else as without it)."""
    if size is not None:
        try:
            return torch.nonzero_static(mark, size=size)
        except NotImplementedError:  # an older torch without it on this device
            pass
    return mark.nonzero()
