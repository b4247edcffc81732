"""A real model that fails on purpose on one rank, mid-run: a worker's exception, its running out of
memory, as a user's model would, or its process aborting as NCCL's watchdog aborts it (named by
``model._target_`` in the tests)."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from dygsched.models.tgcn import TGCN

ERRORS = {
    "oom": lambda: torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (simulated)"),
    "value": lambda: ValueError("NaN in the hidden state (simulated)"),
}


class FailingTGCN(TGCN):
    """T-GCN whose forward pass fails on ``fail_rank`` after ``fail_after`` calls in training (or, with
    ``in_training=False``, in evaluation): it raises ``error``, or with ``error="abort"`` the process
    calls ``abort()`` (SIGABRT, no Python handler runs), as NCCL's watchdog does after a failed collective."""

    def __init__(
        self, *args, fail_rank: int = 1, fail_after: int = 4, error: str = "oom", in_training: bool = True, **kwargs
    ) -> None:
        super().__init__(*args, **kwargs)
        self.fail_rank, self.fail_after, self.error, self.in_training = fail_rank, fail_after, error, in_training
        self.calls = 0

    def forward(self, snapshots, *args, **kwargs):
        if self.training == self.in_training and dist.is_initialized() and dist.get_rank() == self.fail_rank:
            self.calls += 1
            if self.calls > self.fail_after:
                if self.error == "abort":
                    os.abort()
                raise ERRORS[self.error]()
        return super().forward(snapshots, *args, **kwargs)
