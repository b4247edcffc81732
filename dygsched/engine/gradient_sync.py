"""Gradient synchronisation: one explicit, bucketed all-reduce per optimizer step, in one place.

Every rank accumulates the gradients of the work it did in an iteration (any number of units,
possibly none); strategies scale their losses so that the *sum* over ranks of those gradients is
the gradient of the iteration's mean loss. ``GradientSync.synchronize`` then sums them with one
``all_reduce`` per bucket of parameters (about ``bucket_bytes`` each, flattened, in a fixed order
that every rank shares) and averages the floating-point buffers (batch-norm statistics). A
parameter no unit used gets a zero gradient on every rank, so every rank steps identically.

With ``overlap`` on, buckets whose parameters all received their gradient in the iteration's
last backward (``final_backward``) are all-reduced asynchronously while that backward still runs
(as DistributedDataParallel does); buckets are always launched in bucket order, so ranks that
ran no backward, or another one, still pair their collectives up. ``synchronize`` launches what
is left and waits. With one rank nothing is communicated.

With ``staleness=1`` (Sven's asynchronous all-reduce) step ``t`` applies the summed gradients of
step ``t - 1``: ``synchronize`` launches this step's all-reduce without waiting and puts the one
launched at the step before into the gradients (zeros at the first step), so the all-reduce
overlaps the next step's work. The pending sum does not outlive the ``GradientSync`` (a resumed
run starts again from zeros).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

from dygsched.engine import comm
from dygsched.engine.run_config import GradSync

DEFAULT_BUCKET_BYTES = int(GradSync().bucket_mb * 2**20)  # outside a run: the run's default grad_sync.bucket_mb


@dataclass
class _Bucket:
    params: list[nn.Parameter]
    numel: int
    flat: torch.Tensor | None = None
    work: comm.Pending | None = None  # the pending all-reduce
    ready: set[int] = field(default_factory=set)

    @property
    def nbytes(self) -> int:
        return self.numel * self.params[0].element_size()


class GradientSync:
    """Sums the ranks' accumulated gradients of ``module``'s trainable parameters (see the module docstring)."""

    def __init__(
        self,
        module: nn.Module,
        world_size: int,
        bucket_bytes: int = DEFAULT_BUCKET_BYTES,
        overlap: bool = False,
        staleness: int = 0,
    ) -> None:
        if bucket_bytes < 1:
            raise ValueError(f"bucket_bytes must be positive, got {bucket_bytes}")
        if staleness not in (0, 1):
            raise ValueError(f"gradient staleness must be 0 or 1, got {staleness}")
        self.staleness = staleness
        self._stale: list[tuple[torch.Tensor | None, comm.Pending | None]] | None = None  # the previous step's launched sums
        self.module = module
        self.world_size = world_size
        self.overlap = overlap and world_size > 1
        params = [p for p in module.parameters() if p.requires_grad]
        # Reverse registration order: the backward reaches the last layers first, as DDP orders its buckets.
        self.buckets: list[_Bucket] = []
        for param in reversed(params):
            last = self.buckets[-1] if self.buckets else None
            if (
                last is None
                or last.params[0].dtype != param.dtype
                or last.params[0].device != param.device
                or (last.nbytes + param.numel() * param.element_size() > bucket_bytes)
            ):
                self.buckets.append(_Bucket([], 0))
                last = self.buckets[-1]
            last.params.append(param)
            last.numel += param.numel()
        self._bucket_of = {id(p): b for b, bucket in enumerate(self.buckets) for p in bucket.params}
        self._armed = False
        self._next_launch = 0
        self._handles = [p.register_post_accumulate_grad_hook(self._on_grad) for p in params] if self.overlap else []
        self.buffers = [b for b in module.buffers() if b.is_floating_point()]

    def zero_grad(self) -> None:
        for param in self.module.parameters():
            if param.grad is not None:
                param.grad.zero_()

    @contextmanager
    def final_backward(self) -> Iterator[None]:
        """Wrap the iteration's last backward on this rank: with ``overlap``, buckets start their
        all-reduce as soon as their gradients are final."""
        self._armed = self.overlap
        try:
            yield
        finally:
            self._armed = False

    def _on_grad(self, param: torch.Tensor) -> None:
        if not self._armed:
            return
        b = self._bucket_of[id(param)]
        self.buckets[b].ready.add(id(param))
        while self._next_launch < len(self.buckets):
            bucket = self.buckets[self._next_launch]
            if len(bucket.ready) < len(bucket.params):
                break
            self._launch(bucket)
            self._next_launch += 1

    def _launch(self, bucket: _Bucket) -> None:
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in bucket.params]
        bucket.flat = torch.cat([g.reshape(-1) for g in grads])
        if self.world_size > 1:
            bucket.work = comm.all_reduce_async(bucket.flat)

    def synchronize(self) -> int:
        """Sum the gradients over ranks (and average the buffers); the bytes all-reduced."""
        if self.staleness:
            return self._synchronize_stale()
        if self.world_size == 1:
            for bucket in self.buckets:
                for param in bucket.params:
                    if param.grad is None:
                        param.grad = torch.zeros_like(param)
            return 0
        moved = 0
        for bucket in self.buckets[self._next_launch :]:
            self._launch(bucket)
        for bucket in self.buckets:
            if bucket.work is not None:
                bucket.work.wait()
                moved += bucket.nbytes
            assert bucket.flat is not None
            self._set_grads(bucket, bucket.flat)
            bucket.flat, bucket.work = None, None
            bucket.ready.clear()
        self._next_launch = 0
        return moved + self._average_buffers()

    def _synchronize_stale(self) -> int:
        """Launch this step's sums, then apply the previous step's (zeros at the first)."""
        launched = []
        for bucket in self.buckets:
            self._launch(bucket)
            launched.append((bucket.flat, bucket.work))
            bucket.flat, bucket.work = None, None
            bucket.ready.clear()
        self._next_launch = 0
        previous, self._stale = self._stale, launched
        moved = 0
        for b, bucket in enumerate(self.buckets):
            flat = None
            if previous is not None:
                flat, work = previous[b]
                if work is not None:
                    work.wait()
                    moved += bucket.nbytes
            self._set_grads(bucket, flat)
        return moved + (self._average_buffers() if self.world_size > 1 else 0)

    @staticmethod
    def _set_grads(bucket: _Bucket, flat: torch.Tensor | None) -> None:
        """Each parameter's gradient becomes its slice of ``flat`` (zeros when ``flat`` is None)."""
        offset = 0
        for param in bucket.params:
            chunk = flat[offset : offset + param.numel()].view_as(param) if flat is not None else torch.zeros_like(param)
            if param.grad is None:
                param.grad = chunk.clone()
            else:
                param.grad.copy_(chunk)
            offset += param.numel()

    def _average_buffers(self) -> int:
        """Average the floating-point buffers over ranks; the bytes all-reduced."""
        if not self.buffers:
            return 0
        flat = torch.cat([b.reshape(-1) for b in self.buffers])
        comm.all_reduce(flat)
        flat.div_(self.world_size)
        offset = 0
        for buffer in self.buffers:
            buffer.copy_(flat[offset : offset + buffer.numel()].view_as(buffer))
            offset += buffer.numel()
        return flat.numel() * flat.element_size()

    def close(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
