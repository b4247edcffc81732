"""Timings of finished work, on any device.

A host clock around a call that only queues work (a CUDA kernel, an NCCL collective) measures the
queueing, not the work. So a timed region here is read as finished work:

* on CUDA, a pair of CUDA events recorded on the stream that did the work (by default the current
  stream). Recording does not wait; the figure is read later (``Region.seconds``), which waits for
  the end event only (that stream's work up to it), never for the whole device. Read regions when
  the figure is recorded, at the end of a step or an epoch (``Tally``), so that timing a region
  does not stall the host while the device still works.
* on CPU, ``time.perf_counter`` (CPU work has finished when the call returns).

Which clock is a matter of where the work runs, not of the run's device: a collective that blocks
the host (gloo: host counts and rows, and CUDA rows staged through the host) is host work and is
timed by the host clock (``Region(HOST)``) even in a CUDA run, so the time the host spent blocked is
counted even while the stream still runs queued kernels (events on the stream would start only
once those finished, and the blocked time would vanish from the region); an NCCL collective is
device work, timed by events (``comm.blocks_host`` tells which).

An asynchronous collective (a ``torch.distributed`` ``Work``, or anything with ``wait()``) is timed
by ``Region.stop_after(work)``: the region ends only once the work has completed. On CPU (gloo)
``wait()`` blocks until then; on CUDA ``wait()`` makes the current stream wait for the collective's
stream (NCCL's), and the end event, recorded on that stream after it, completes after the collective.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

import torch

HOST = torch.device("cpu")
"""The device of a region timed by the host clock: work the host itself does or is blocked in (a
gloo collective, whose call returns when its work is done), whatever the run's device."""


class Waitable(Protocol):
    """An asynchronous operation (``torch.distributed.Work`` and the like)."""

    def wait(self) -> object: ...


class Region:
    """One timed region on ``device``: started when made, ended by ``stop`` or ``stop_after``.

    On CUDA, ``stream`` is the stream whose work the region covers (the current stream of
    ``device`` when not given); both events are recorded on it.
    """

    def __init__(self, device: torch.device, stream: torch.cuda.Stream | None = None) -> None:
        self.device = device
        self._seconds: float | None = None
        self._stopped = False
        if device.type == "cuda":
            self._stream = stream if stream is not None else torch.cuda.current_stream(device)
            self._start_event = torch.cuda.Event(enable_timing=True)
            self._end_event = torch.cuda.Event(enable_timing=True)
            self._start_event.record(self._stream)
            self._start = 0.0
        else:
            self._start = time.perf_counter()

    @property
    def on_device(self) -> bool:
        """Whether the region is timed by CUDA events (else by the host clock)."""
        return self.device.type == "cuda"

    def stop(self) -> Region:
        """End the region here (on CUDA: after the work queued so far on its stream)."""
        if self._stopped:
            raise RuntimeError("a timed region was stopped twice")
        self._stopped = True
        if self.on_device:
            self._end_event.record(self._stream)
        else:
            self._seconds = time.perf_counter() - self._start
        return self

    def stop_after(self, work: Waitable | None) -> Region:
        """End the region once ``work`` (an asynchronous collective; None: nothing pending) has
        completed: wait on it, then stop. On CUDA the wait orders the region's stream after the
        collective's, so the end event completes after it."""
        if work is not None:
            work.wait()
        return self.stop()

    @property
    def done(self) -> bool:
        """Whether the region's work has finished (reading ``seconds`` would not wait)."""
        if not self._stopped:
            return False
        return self._seconds is not None or bool(self._end_event.query())

    @property
    def seconds(self) -> float:
        """The region's duration in seconds; on CUDA this waits for its end event (not the device)."""
        if not self._stopped:
            raise RuntimeError("a timed region was read before it was stopped")
        if self._seconds is None:
            self._end_event.synchronize()
            self._seconds = float(self._start_event.elapsed_time(self._end_event)) / 1000.0
        return self._seconds


@contextmanager
def timed(device: torch.device, stream: torch.cuda.Stream | None = None) -> Iterator[Region]:
    """Time the ``with`` block's work on ``device`` (see ``Region``); read ``.seconds`` after it."""
    region = Region(device, stream)
    try:
        yield region
    finally:
        region.stop()


class Tally:
    """Named sums of timed regions (and of seconds already known), read once the work is done.

    ``add(name, region)`` keeps the region pending; ``seconds(name)`` (or ``totals()``) reads
    every pending region of that name, at the end of a step or an epoch when the figure is
    recorded, so timing never stalls the host in the middle of the work.
    """

    def __init__(self) -> None:
        self._pending: dict[str, list[Region]] = {}
        self._settled: dict[str, float] = {}

    def add(self, name: str, value: Region | float) -> None:
        if isinstance(value, Region):
            self._pending.setdefault(name, []).append(value)
        else:
            self._settled[name] = self._settled.get(name, 0.0) + float(value)

    def seconds(self, name: str) -> float:
        """The sum of ``name``'s regions (0.0 when none was added)."""
        pending = self._pending.pop(name, [])
        if pending:
            self._settled[name] = self._settled.get(name, 0.0) + sum(region.seconds for region in pending)
        return self._settled.get(name, 0.0)

    def names(self) -> list[str]:
        return sorted(set(self._pending) | set(self._settled))

    def totals(self) -> dict[str, float]:
        return {name: self.seconds(name) for name in self.names()}

    def clear(self) -> None:
        self._pending.clear()
        self._settled.clear()
