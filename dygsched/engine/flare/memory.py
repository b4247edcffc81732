"""What a training step keeps in memory for its backward, measured without a GPU.

On a CPU the process's resident set mixes the interpreter, the data and the allocator's caches;
what a strategy changes is the activations autograd saves for the backward. ``SavedTensors``
counts them as they are saved (``torch.autograd.graph.saved_tensors_hooks``), each storage once,
so ``bytes`` is the step's activation memory; parameters and kept states are added by the caller.
On a GPU the allocator's own peak (``max_memory_allocated``) is the figure to read instead.
"""

from __future__ import annotations

from typing import Any

import torch


class SavedTensors:
    """Context manager: ``bytes`` saved for the backward by the operations run inside it (each storage once)."""

    def __init__(self) -> None:
        self.bytes = 0
        self._seen: set[int] = set()

    def _pack(self, tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        key = storage.data_ptr()
        if key not in self._seen:
            self._seen.add(key)
            self.bytes += storage.nbytes()
        # Detached, as PyTorch's docs for these hooks advise: the tensor itself would keep its own
        # grad_fn alive from that grad_fn's saved variables, a cycle through C++ that Python's gc
        # cannot break, so every part of a graph no backward ran through (the outputs of a window's
        # earlier blocks when the loss reads the last, with EvolveGCN's per-graph state) stayed in
        # memory: 1.2 GB more resident per epoch on the FlareDTDG tables' graph. Autograd puts the
        # grad_fn back when it unpacks a saved tensor.
        return tensor.detach()

    def __enter__(self) -> SavedTensors:
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda tensor: tensor)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._hooks.__exit__(*exc)
        self._seen.clear()


def tensor_bytes(value: Any) -> int:
    """Bytes of the tensors in ``value`` (nested lists, tuples and dicts)."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, dict):
        return sum(tensor_bytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(tensor_bytes(v) for v in value)
    return 0
