"""Timed regions read finished work: the timer waits for asynchronous work, on CPU and (with a fake
CUDA event class) on the CUDA path, and never relies on a device-wide synchronize."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from dygsched.engine import timing
from dygsched.engine.timing import Region, Tally, timed

DELAY_S = 0.05


class FakeWork:
    """An asynchronous operation that finishes ``delay_s`` after it starts, on a thread."""

    def __init__(self, delay_s: float = DELAY_S) -> None:
        self.finished = threading.Event()
        self.waited = False
        self._thread = threading.Thread(target=self._run, args=(delay_s,))
        self._thread.start()

    def _run(self, delay_s: float) -> None:
        time.sleep(delay_s)
        self.finished_at = time.perf_counter()
        self.finished.set()

    def is_completed(self) -> bool:
        return self.finished.is_set()

    def wait(self) -> bool:
        self.waited = True
        self._thread.join()
        return True


class FakeStream:
    """Where fake events are recorded; ``pending_s``: how long its queued work still runs."""

    def __init__(self) -> None:
        self.pending_s = 0.0


class FakeEvent:
    """A CUDA event on a fake device: it completes when its stream's queued work has (host clock)."""

    made: list[FakeEvent] = []

    def __init__(self, enable_timing: bool = False) -> None:
        assert enable_timing, "timing events must be made with enable_timing=True"
        self.at: float | None = None
        self.synchronized = False
        FakeEvent.made.append(self)

    def record(self, stream: FakeStream) -> None:
        self.at = time.perf_counter() + stream.pending_s

    def query(self) -> bool:
        return self.at is not None and time.perf_counter() >= self.at

    def synchronize(self) -> None:
        assert self.at is not None
        self.synchronized = True
        time.sleep(max(0.0, self.at - time.perf_counter()))

    def elapsed_time(self, end: FakeEvent) -> float:
        assert self.at is not None and end.at is not None
        assert end.query(), "elapsed_time read before the end event completed"
        return (end.at - self.at) * 1000.0


@pytest.fixture
def no_device_synchronize(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a timed region relied on a device-wide synchronize")

    monkeypatch.setattr(torch.cuda, "synchronize", refuse)


@pytest.fixture
def fake_cuda(monkeypatch, no_device_synchronize):
    stream = FakeStream()
    FakeEvent.made = []
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: stream)
    return stream


CUDA = torch.device("cuda")
CPU = torch.device("cpu")


def test_cpu_region_waits_for_asynchronous_work(no_device_synchronize):
    region = Region(CPU)
    work = FakeWork()
    region.stop_after(work)
    assert work.waited and work.is_completed()
    assert region.done
    assert region.seconds >= DELAY_S


def test_cpu_region_without_waiting_misses_the_work(no_device_synchronize):
    """The contrast that makes the test above mean something: a plain stop does not wait."""
    region = Region(CPU)
    work = FakeWork(0.2)
    region.stop()
    assert region.seconds < 0.2
    work.wait()


def test_cuda_region_waits_for_work_then_records_on_the_stream(fake_cuda):
    region = Region(CUDA)
    work = FakeWork()
    region.stop_after(work)
    assert work.waited
    start, end = FakeEvent.made
    assert start.at is not None and end.at is not None and end.at - start.at >= DELAY_S
    assert region.seconds >= DELAY_S
    assert end.synchronized  # read through its own end event


def test_cuda_region_is_read_lazily_and_covers_queued_work(fake_cuda):
    """Stopping records an event and returns; the figure waits for the stream's queued work when read."""
    with timed(CUDA) as region:
        fake_cuda.pending_s = DELAY_S  # work queued on the stream, still running on the device
    before = time.perf_counter()
    assert not region.done
    assert time.perf_counter() - before < DELAY_S
    assert region.seconds >= DELAY_S
    assert region.done


def test_cuda_region_on_a_given_stream(fake_cuda):
    side = FakeStream()
    side.pending_s = DELAY_S
    region = Region(CUDA, stream=side)
    side.pending_s = 2 * DELAY_S
    region.stop()
    assert region.seconds >= DELAY_S  # the side stream's work, not the current stream's (idle)


def test_tally_sums_pending_regions_and_known_seconds(fake_cuda):
    tally = Tally()
    for _ in range(2):
        tally.add("comm_s", Region(CUDA).stop_after(FakeWork()))
    tally.add("comm_s", 1.0)
    tally.add("wait_s", 0.25)
    assert not all(event.synchronized for event in FakeEvent.made)  # nothing read yet
    totals = tally.totals()
    assert set(totals) == {"comm_s", "wait_s"}
    assert totals["comm_s"] >= 1.0 + 2 * DELAY_S
    assert totals["wait_s"] == 0.25
    assert tally.seconds("absent") == 0.0


def test_region_misuse_is_refused():
    region = Region(CPU)
    with pytest.raises(RuntimeError, match="before it was stopped"):
        _ = region.seconds
    region.stop()
    with pytest.raises(RuntimeError, match="stopped twice"):
        region.stop()


def test_module_uses_no_device_wide_synchronize():
    import inspect

    assert "synchronize(" not in inspect.getsource(timing).replace("_end_event.synchronize()", "")


def test_iteration_stats_settle_pending_regions(no_device_synchronize):
    from dygsched.engine.strategy import IterationStats

    stats = IterationStats(iteration=0)
    with timed(CPU) as step:
        stats.add_time("comm_s", Region(CPU).stop_after(FakeWork()))
    assert stats.comm_s == 0.0  # pending until read
    stats.busy_from(step)
    assert stats.comm_s >= DELAY_S and not stats.pending
    assert stats.busy_s == pytest.approx(step.seconds - stats.comm_s)
    with pytest.raises(ValueError, match="no time field"):
        stats.add_time("loss_sum", step)


def test_posted_halo_wait_covers_the_exchange(no_device_synchronize):
    """A posted (asynchronous) exchange is timed until its work completes, not until it was posted."""
    from dygsched.engine.node_partition.exchange import HaloAccounting, PendingHalo

    accounting = HaloAccounting()
    work = FakeWork()  # its delay runs from here, a little before the exchange's timer starts
    pending = PendingHalo(torch.zeros(3, 2), torch.ones(1, 2), work, accounting)
    posted = time.perf_counter()
    rows = pending.wait()
    assert rows.shape == (4, 2)
    assert accounting.seconds >= work.finished_at - posted > DELAY_S / 2  # not only the posting
    assert accounting.backward_seconds == 0.0


def test_overlap_log_reads_regions_when_gathered(fake_cuda):
    from dygsched.engine.node_partition.overlap import TaskLog

    log = TaskLog()
    log.add([0.0], 0.01, 0.02)
    with timed(CUDA) as whole:
        wait = Region(CUDA).stop_after(FakeWork())
    log.add_overlapped([1.0], [wait], whole)
    assert not any(event.synchronized for event in FakeEvent.made)
    (comm0, compute0), (comm1, compute1) = log.seconds
    assert (comm0, compute0) == (0.01, 0.02)
    assert comm1 >= DELAY_S and compute1 == pytest.approx(whole.seconds - wait.seconds)


def test_engine_never_synchronizes_the_whole_device():
    """Timed regions and overlap use events and stream-local waits (the grep behind the docs' claim)."""
    from pathlib import Path

    import dygsched.engine

    root = Path(dygsched.engine.__file__).parent
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py") if "cuda.synchronize" in p.read_text()]
    assert offenders == []


# ---- on a real CUDA device (make test-gpu, or pytest -m gpu tests/engine/test_timing.py) ----------


def _queue_work(device: torch.device, size: int = 4096, repeats: int = 40) -> torch.Tensor:
    a = torch.randn(size, size, device=device)
    out = a
    for _ in range(repeats):
        out = torch.tanh(out @ a) * 0.01
    return out


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_real_cuda_region_measures_the_kernels_not_their_launch(monkeypatch):
    device = torch.device("cuda")
    _queue_work(device, repeats=2)
    torch.cuda.synchronize()
    launched = time.perf_counter()
    with timed(device) as region:
        _queue_work(device)
    launch_s = time.perf_counter() - launched
    monkeypatch.setattr(
        torch.cuda, "synchronize", lambda *a, **k: (_ for _ in ()).throw(AssertionError("device-wide synchronize"))
    )
    measured = region.seconds  # waits for the end event only
    monkeypatch.undo()
    torch.cuda.synchronize()
    started = time.perf_counter()
    _queue_work(device)
    torch.cuda.synchronize()
    reference = time.perf_counter() - started
    print(f"launch {launch_s * 1e3:.2f} ms, region {measured * 1e3:.2f} ms, synchronised host clock {reference * 1e3:.2f} ms")
    assert measured > 2 * launch_s  # the host clock around the launch missed the work
    assert 0.5 * reference < measured < 1.5 * reference


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_real_cuda_region_on_a_side_stream_and_stream_local_wait():
    device = torch.device("cuda")
    side = torch.cuda.Stream(device)
    torch.cuda.synchronize()
    with torch.cuda.stream(side), timed(device, side) as region:
        out = _queue_work(device)
    ready = torch.cuda.Event()
    ready.record(side)
    torch.cuda.current_stream(device).wait_event(ready)  # the consumer waits for that stream alone
    out.record_stream(torch.cuda.current_stream(device))
    total = float(out.sum())
    assert region.done and region.seconds > 0 and total == total


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_real_cuda_pinned_graph_pins_each_tensor_once():
    from dygsched.data.temporal_graph import Snapshot, Task, TemporalGraph
    from dygsched.engine.snapshot_groups.streams import pinned_graph

    x = torch.randn(5, 3)
    edges = torch.tensor([[0, 1], [1, 2]])
    snaps = tuple(Snapshot(edges, torch.ones(2), x, torch.randn(5), torch.ones(5, dtype=torch.bool)) for _ in range(3))
    graph = TemporalGraph("tiny", snaps, Task.REGRESSION)
    pinned = pinned_graph(graph, torch.device("cuda"))
    assert all(t.is_pinned() for s in pinned.snapshots for t in (s.edge_index, s.edge_weight, s.x, s.y, s.node_mask))
    assert len({id(s.x) for s in pinned.snapshots}) == 1  # shared before, shared after
    assert pinned_graph(graph, torch.device("cpu")) is graph
