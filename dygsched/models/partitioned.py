"""What a layer's ``spatial_partitioned`` is given on a node-partitioned rank (``PartitionOps``, the
engine implements it), and batch norm over every rank's rows (``synced_batch_norm``)."""

from __future__ import annotations

from typing import Any, Protocol

import torch


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
    tracked = norm.num_batches_tracked
    if norm.track_running_stats and norm.running_mean is not None and norm.running_var is not None and tracked is not None:
        with torch.no_grad():
            momentum = norm.momentum if norm.momentum is not None else 1.0 / float(tracked + 1)
            unbiased = var * count / (count - 1).clamp(min=1)
            norm.running_mean.mul_(1 - momentum).add_(momentum * mean)
            norm.running_var.mul_(1 - momentum).add_(momentum * unbiased)
            tracked.add_(1)
    out = centred / torch.sqrt(var + norm.eps)
    return out * norm.weight + norm.bias if norm.affine else out
