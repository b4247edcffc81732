"""How often a training step makes the host wait for the device (``metrics.count_syncs=true``).

A step that reads a value the device computed (``float(loss)``, ``.item()``, ``.tolist()``), asks
for a result whose size the device decides (``nonzero``, ``unique``, a boolean mask) or copies
pageable host memory to the device without ``non_blocking`` stops the host until the device has
caught up: the kernels queued behind the read wait for the host to queue them, and the device
idles while it does. The engine keeps such reads out of its steps (losses stay on the device and
are read once per epoch; the masks and unique sets that steer Python are built on the host); this
module counts what is left, per epoch, as an epoch metric:

* on CUDA, ``cuda_syncs`` and ``cuda_syncs_per_step``: every call that synchronises the host with
  the device, as torch itself reports them (``torch.cuda.set_sync_debug_mode("warn")``). Waiting
  for a timed region's end event (``dygsched.engine.timing``), which reads a figure at the end of
  a step, is not among them.
* on CPU there is no device to wait for, so the counter plays one: ``device_reads`` and
  ``device_reads_per_step`` count the calls that would read a device value on the host in a CUDA
  run. A torch function mode (``DeviceReads``) follows every tensor that would live on the device:
  the module's parameters and buffers, tensors made with ``device=`` the run's device or moved there
  with ``.to`` (a copy, as on a GPU), and whatever is computed from them. The device is told from
  the host by identity: the run's own ``torch.device`` object, which the engine hands down and which
  ``.device`` of a followed tensor returns (``.device`` of a host tensor, a string such as the
  ``"cpu"`` an optimizer writes, name the host). It counts the reads of
  those (``item``, ``float``/``int``/``bool``, ``tolist``, ``cpu``, ``numpy``, ``nonzero``,
  ``unique``, boolean-mask indexing, ``repeat_interleave`` by a tensor of repeats without its
  ``output_size``, a sparse-dense product of a COO matrix not marked coalesced, which a GPU
  coalesces first) and not of tensors the host built. It is what the tests use to
  prove, without a GPU, that a step reads nothing back (``tests/engine/test_host_syncs.py``).

Both are off by default: counting slows the step (a Python call per torch call on CPU, a warning
per synchronisation on CUDA). A run without the flag has no such rows.
"""

from __future__ import annotations

import os
import sys
import warnings
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

Tensor = torch.Tensor

# Calls that hand a device tensor's values to the host.
_READS = {
    Tensor.item,
    Tensor.tolist,
    Tensor.cpu,
    Tensor.numpy,
    Tensor.__float__,
    Tensor.__int__,
    Tensor.__bool__,
    Tensor.__index__,
    Tensor.__complex__,
}
# Calls whose result's size depends on the values (the host must read it to allocate the result).
_SIZED_BY_VALUES = {
    torch.nonzero,
    Tensor.nonzero,
    torch.argwhere,
    Tensor.argwhere,
    torch.unique,
    Tensor.unique,
    torch.unique_consecutive,
    Tensor.unique_consecutive,
    torch.masked_select,
    Tensor.masked_select,
    torch.equal,
    torch.allclose,
    Tensor.allclose,
    Tensor.equal,
}
# Calls whose result's size is the sum of a tensor of repeats, unless the caller gives it (``output_size``).
_REPEATS = {torch.repeat_interleave, Tensor.repeat_interleave}
# Sparse-dense products and the coalescing they start with: a COO matrix not known to be coalesced is
# coalesced first on a GPU, and its count of distinct entries is read on the host.
_COALESCES = {torch.sparse.mm, torch.mm, torch.matmul, torch.sparse.addmm, torch.addmm, Tensor.coalesce}
# Calls given a boolean tensor to select with (its count of True decides the result's size).
_MASKED = {Tensor.__getitem__, Tensor.__setitem__, Tensor.index_put_, Tensor.index_put, torch.index_put}
_MOVES = {Tensor.to, Tensor.cuda}
_DEVICE_PROPERTY = Tensor.__dict__.get("device") or torch._C.TensorBase.__dict__["device"]
_FACTORIES = {
    torch.zeros,
    torch.ones,
    torch.empty,
    torch.full,
    torch.arange,
    torch.tensor,
    torch.as_tensor,
    torch.rand,
    torch.randn,
    torch.randint,
    torch.zeros_like,
    torch.ones_like,
    torch.empty_like,
    torch.full_like,
    torch.linspace,
}


class DeviceReads(TorchFunctionMode):
    """Counts, on CPU, the reads of device values a CUDA run would make (see the module docstring).

    ``device``: the run's device (CPU here); ``seeds``: tensors that live there from the start (the
    trained module's parameters and buffers). ``reads``: the count so far; ``where``: the calls
    counted, by the call and its first caller outside torch (``"item in torch_geometric.utils.loop.f"``)."""

    def __init__(self, device: torch.device, seeds: Iterable[Tensor] = ()) -> None:
        super().__init__()
        self.device = device  # compared by identity (``_names_device``)
        self.reads = 0
        self.where: dict[str, int] = {}
        self._on_device: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()
        for tensor in seeds:
            self.mark(tensor)

    def mark(self, tensor: Tensor) -> None:
        self._on_device[id(tensor)] = tensor

    def on_device(self, value: Any) -> bool:
        return isinstance(value, Tensor) and self._on_device.get(id(value)) is value

    def _count(self, func: Any) -> None:
        """Count a read, by the call and the first caller outside torch (``where``: for a test's message)."""
        name = getattr(func, "__name__", str(func))
        frame: Any = sys._getframe(2)
        inside_torch = f"{os.sep}torch{os.sep}"
        while frame is not None and (inside_torch in frame.f_code.co_filename or frame.f_code.co_filename == __file__):
            frame = frame.f_back
        site = f"{frame.f_globals.get('__name__', '?')}.{frame.f_code.co_name}" if frame is not None else "?"
        self.reads += 1
        self.where[f"{name} in {site}"] = self.where.get(f"{name} in {site}", 0) + 1

    def _names_device(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether the call names the run's device: the very ``torch.device`` object the run was
        given (the engine hands it down); another one (``tensor.device`` of a host tensor, made anew
        by each call, or the string ``"cpu"`` an optimizer writes) names the host."""
        return any(value is self.device for value in (*args[1:], kwargs.get("device")))

    def _moves_to_device(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether a ``.to`` names a ``torch.device`` equal to the run's (any such object: a move
        there copies to the device on a GPU, whichever tensor's ``.device`` named it)."""
        return any(isinstance(value, torch.device) and value == self.device for value in (*args[1:], kwargs.get("device")))

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if getattr(func, "__self__", None) is _DEVICE_PROPERTY:  # ``tensor.device``
            return self.device if args and self.on_device(args[0]) else func(*args, **kwargs)
        flat, _ = tree_flatten((args, kwargs))
        from_device = any(self.on_device(value) for value in flat)
        if func in _READS and args and self.on_device(args[0]):
            self._count(func)
        elif func in _SIZED_BY_VALUES and from_device:
            self._count(func)
        elif func in _MASKED and any(
            self.on_device(value) and value.dtype == torch.bool for value in tree_flatten(_index(args, kwargs))[0]
        ):
            self._count(func)
        elif func in _REPEATS and kwargs.get("output_size") is None and self.on_device(_repeats(args, kwargs)):
            self._count(func)
        elif func in _COALESCES and any(
            self.on_device(value) and value.layout == torch.sparse_coo and not value.is_coalesced() for value in flat
        ):
            self._count(func)
        result = func(*args, **kwargs)
        if func in _READS:
            return result
        moved = func in _MOVES and self._moves_to_device(args, kwargs)
        made = func in _FACTORIES and kwargs.get("device") is not None and self._names_device((None,), kwargs)
        if from_device or moved or made:
            outputs, _ = tree_flatten(result)
            if moved and args and result is args[0] and not self.on_device(result):
                result = result.clone()  # a copy on the device, as on a GPU: the host tensor stays the host's
                outputs = [result]
            for out in outputs:
                if isinstance(out, Tensor):
                    self.mark(out)
        return result


def _index(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """What an indexing call selects with (not the values a ``__setitem__`` writes)."""
    return args[1] if len(args) > 1 else kwargs.get("indices")


def _repeats(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The ``repeats`` of a ``repeat_interleave`` call (``torch.repeat_interleave(repeats)`` alone: its only argument)."""
    if "repeats" in kwargs:
        return kwargs["repeats"]
    return args[1] if len(args) > 1 else (args[0] if args else None)


class SyncCount:
    """One epoch's count (``reads``) and its metric rows (none when counting is off)."""

    def __init__(self, kind: str | None) -> None:
        self.kind = kind  # "cuda_syncs", "device_reads" or None (off)
        self.count = 0

    def metrics(self, steps: int) -> list[tuple[str, float]]:
        if self.kind is None:
            return []
        rows = [(self.kind, float(self.count))]
        if steps:
            rows.append((f"{self.kind}_per_step", self.count / steps))
        return rows


@contextmanager
def counting_syncs(enabled: bool, device: torch.device, module: nn.Module | None = None) -> Iterator[SyncCount]:
    """Count the synchronisations inside the ``with`` block (``SyncCount.count`` once it ends)."""
    if not enabled:
        yield SyncCount(None)
        return
    if device.type == "cuda":
        count = SyncCount("cuda_syncs")
        previous = torch.cuda.get_sync_debug_mode()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                yield count
            finally:
                torch.cuda.set_sync_debug_mode(previous)
        count.count = sum("synchronizing CUDA operation" in str(w.message) for w in caught)
        for w in caught:  # other warnings still reach the user
            if "synchronizing CUDA operation" not in str(w.message):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return
    count = SyncCount("device_reads")
    seeds = list(module.parameters()) + list(module.buffers()) if module is not None else []
    with DeviceReads(device, seeds) as mode:
        try:
            yield count
        finally:
            count.count = mode.reads
