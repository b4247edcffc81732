"""A real model that fails on purpose on one rank, mid-run: a worker's exception, or its running
out of memory, as a user's model would (named by ``model._target_`` in the tests)."""

from __future__ import annotations

import torch
import torch.distributed as dist

from dygsched.models.tgcn import TGCN

ERRORS = {
    "oom": lambda: torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (simulated)"),
    "value": lambda: ValueError("NaN in the hidden state (simulated)"),
}


class FailingTGCN(TGCN):
    """T-GCN whose training forward pass raises ``error`` on ``fail_rank`` after ``fail_after`` calls."""

    def __init__(self, *args, fail_rank: int = 1, fail_after: int = 4, error: str = "oom", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fail_rank, self.fail_after, self.error = fail_rank, fail_after, error
        self.calls = 0

    def forward(self, snapshots, *args, **kwargs):
        if self.training and dist.is_initialized() and dist.get_rank() == self.fail_rank:
            self.calls += 1
            if self.calls > self.fail_after:
                raise ERRORS[self.error]()
        return super().forward(snapshots, *args, **kwargs)
