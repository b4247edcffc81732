"""``python -m dygsched.launch.gpu_check [RESULTS]``: one GPU, every strategy, every collective, in minutes.

What a first hour on a machine with a GPU should answer, as one table (``check_gpu.csv`` and
``check_gpu.md`` in ``RESULTS``, default ``results/check-gpu``, rewritten after every row so a run
cut short still leaves what it got):

1. ``probe``: the communication module (``dygsched.engine.comm``) on the backends a CUDA run uses.
   At one rank, the mixed backend ``cpu:gloo,cuda:nccl``: every collective helper on CPU and CUDA
   tensors, all-to-alls with uneven and zero-row splits, the asynchronous forms, the object
   collectives (the one-rank shortcut of the helpers is turned off, so each call goes through
   torch.distributed and its backend); then the same under ``nccl`` alone (``dist_backend=nccl``:
   CPU tensors staged through the GPU). At two ranks sharing the GPU (gloo, CUDA tensors staged
   through the host): the same helpers with real exchanges, send/recv included. Each probe rank is
   a child process with a deadline, so a backend that aborts (NCCL's SIGABRT) fails its rows only.
2. ``ws1``: every strategy of ``conf/sched`` on small data at ``world_size=1 device=cuda``.
3. ``ws2``: every strategy at ``world_size=2``, both ranks on the one GPU.

Each run of 2. and 3. is composed with the real configs and trained by the ``run(cfg)`` behind
``dygsched run`` (one process imports everything once), then again with ``device=cpu``: the table
puts the two final training losses side by side. A run that fails is one row with its one-line
reason; every run has a deadline (``--run-timeout-s``, collectives ``dist_timeout_s``), and the
whole check a budget (``--budget-s``) after which the runs left are rows marked ``skipped``.

Exit status: 0 when every run and probe row is ``ok``, 1 otherwise (each row that is not ``ok`` is
also printed last, with its reason), 2 for bad arguments; stopped by SIGTERM or Ctrl-C, it keeps the
table of the rows so far and exits 128 + the signal. Without a CUDA device it prints one line and
exits 0. ``--device cpu`` runs the same code on CPU
(a rehearsal: the probe's CUDA rows are left out, the "device" runs are CPU runs).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from dygsched.errors import DygschedError, Terminated

DEFAULT_RESULTS = Path("results") / "check-gpu"
TABLE = "check_gpu"
MIXED_BACKEND = "cpu:gloo,cuda:nccl"
SHARED_GPU_BACKEND = "gloo"  # what two ranks on one GPU use (NCCL refuses two ranks on one device)

# Small data, as the tests use: every override is a real config key.
TINY_SNAPSHOTS = (
    "dataset=synthetic",
    "dataset.num_nodes=120",
    "dataset.num_snapshots=12",
    "dataset.feature_dim=8",
    "model.hidden_channels=16",
    "model.num_layers=1",
)
TINY_STREAM = (
    "dataset=bipartite",
    "dataset.num_users=30",
    "dataset.num_items=10",
    "dataset.num_events=500",
    "model=tgn",
    "model.memory_dim=8",
    "model.time_dim=4",
    "model.neighbours=3",
    "model.dropout=0.0",
)
# What every run of the check sets: two epochs, nothing kept that it does not read, short deadlines.
COMMON = ("epochs=2", "seed=0", "checkpoint=false", "progress=false", "overwrite=true")

# A loss on the GPU within this relative distance of the CPU twin's reads "same"; within CLOSE, "close".
SAME, CLOSE = 1e-5, 1e-3


@dataclass(frozen=True)
class Variant:
    """One strategy's run of the check: its overrides on small data, the world sizes it runs at, and
    whether a ``device=cpu`` run must train the same (a plan solved from measured times, or by a
    multi-threaded solver under a time limit, may differ between devices: such a run gets no twin)."""

    name: str
    overrides: tuple[str, ...]
    world_sizes: tuple[int, ...] = (1, 2)
    comparable: bool = True


# Every strategy of conf/sched once, with the settings that make it quick on small data, the
# node-memory ones on a small event stream; the switches worth seeing on a GPU are on in them
# (REAL's reuse engine and its streams, FlareDTDG's overlapped exchange, Sven's stale all-reduce and
# two micro-batches). Then a few repeats with the switches off. In the order the check runs them (each
# at one rank, then at two): a check stopped by its budget misses repeats first.
COST_MODEL_PLAN = ("sched.timeline.profile_epochs=0", "sched.executor.reuse_path=diff")  # the same plan on every device
PROFILED = ("sched.timeline.profile_epochs=1",)  # one profiling epoch on this device, then the solved plan
VARIANTS: tuple[Variant, ...] = (
    Variant("psg", (*TINY_SNAPSHOTS, "sched=psg")),
    Variant("greedy", (*TINY_SNAPSHOTS, "sched=greedy", *COST_MODEL_PLAN)),  # REAL-G with the reuse engine
    # the REAL policy with the reuse engine: the ILP, given 10 s whatever the estimated epoch time
    # (not a budget the device's speed decides), one CP-SAT worker: the same plan on every device
    Variant(
        "real",
        (
            *TINY_SNAPSHOTS,
            "sched=real",
            *COST_MODEL_PLAN,
            "sched.planner.time_limit=10",
            "+sched.planner.options.epoch_time=100",
            "+sched.planner.options.workers=1",
        ),
    ),
    Variant("esdg", (*TINY_SNAPSHOTS, "sched=esdg")),
    Variant("blad", (*TINY_SNAPSHOTS, "sched=blad")),
    Variant("flare_overlap_rr", (*TINY_SNAPSHOTS, "sched=flare", "sched.chunks=4", "sched.overlap=rr")),
    Variant("distdy", (*TINY_SNAPSHOTS, "model=sage_temporal", "sched=distdy", "sched.fanouts=[3]", "sched.batch=32")),
    Variant("single", (*TINY_STREAM, "sched=single", "sched.batch_size=70"), world_sizes=(1,)),  # the one-process reference
    Variant("depcache", (*TINY_STREAM, "sched=depcache", "sched.batch_size=35")),
    Variant("depcomm", (*TINY_STREAM, "sched=depcomm", "sched.batch_size=35")),
    Variant(
        "sven_stale_micro2", (*TINY_STREAM, "sched=sven", "sched.batch_size=35", "sched.staleness=1", "sched.micro_batches=2")
    ),
    # the planners after a profiling epoch on this device (its group times, the all-reduce cost alpha)
    Variant(
        "ilp",
        (*TINY_SNAPSHOTS, "sched=ilp", *PROFILED, "sched.executor.reuse_path=diff", "sched.planner.time_limit=5"),
        comparable=False,
    ),
    Variant("dygnex_g", (*TINY_SNAPSHOTS, "sched=dygnex_g", *PROFILED), comparable=False),
    Variant("dygnex_l", (*TINY_SNAPSHOTS, "sched=dygnex_l", *PROFILED, "sched.planner.time_limit=5"), comparable=False),
    Variant(
        "real_g_paper", (*TINY_SNAPSHOTS, "sched=real_g_paper", *PROFILED, "sched.executor.reuse_path=diff"), comparable=False
    ),
    # repeats: the switches off, and the reuse engine on a second model
    Variant("flare", (*TINY_SNAPSHOTS, "sched=flare", "sched.chunks=4")),
    Variant("sven", (*TINY_STREAM, "sched=sven", "sched.batch_size=35")),
    Variant("greedy_gat_lstm", (*TINY_SNAPSHOTS, "model=gat_lstm", "sched=greedy", *COST_MODEL_PLAN)),
)


@dataclass
class Row:
    """One line of the table: a probe case, or a strategy's run on the device with its CPU twin."""

    part: str  # probe | ws1 | ws2
    name: str  # the probe case, or the variant
    world_size: int
    device: str
    status: str  # ok | failed | timeout | skipped | unprobed
    wall_s: float | None = None
    epoch_time_s: float | None = None
    gpu_peak_mb: str = ""  # per rank, "r0 r1 ..." (MB)
    final_loss: float | None = None
    cpu_status: str = ""
    cpu_epoch_time_s: float | None = None
    cpu_final_loss: float | None = None
    loss_rel_diff: float | None = None
    loss_check: str = ""  # same | close | differs (against the CPU twin)
    backend: str = ""
    reason: str = ""


COLUMNS = [f.name for f in fields(Row)]


# -- progress and the table ---------------------------------------------------------------------


class Clock:
    """Progress lines with the wall time and the seconds since the check began, flushed at once."""

    def __init__(self, budget_s: float) -> None:
        self.start = time.monotonic()
        self.budget_s = budget_s

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def left(self) -> float:
        return self.budget_s - self.elapsed()

    def say(self, line: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')} +{self.elapsed():5.0f}s] {line}", flush=True)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.3g}" if abs(value) < 1e-3 and value != 0 else f"{value:.4f}"
    return str(value).replace("|", "/").replace("\n", " ")


def markdown(rows: Sequence[Row]) -> str:
    """The table as GitHub markdown (the CSV holds the same rows unrounded)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cell(getattr(row, c)) for c in COLUMNS) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_table(rows: Sequence[Row], folder: Path) -> tuple[Path, Path]:
    """``check_gpu.csv`` and ``check_gpu.md`` in ``folder``, each replaced whole (never half-written)."""
    folder.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = folder / f"{TABLE}.csv", folder / f"{TABLE}.md"
    tmp = csv_path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in asdict(row).items()})
    tmp.replace(csv_path)
    tmp = md_path.with_suffix(".md.tmp")
    tmp.write_text(markdown(rows))
    tmp.replace(md_path)
    return csv_path, md_path


def tally(rows: Sequence[Row]) -> str:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    differs = sum(row.loss_check == "differs" for row in rows)
    text = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return text + (f"; {differs} with a final loss that differs from the CPU run's" if differs else "")


def one_line(text: str, limit: int = 300) -> str:
    """The first meaningful line of an error, cut to ``limit`` characters."""
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def loss_check(device_loss: float | None, cpu_loss: float | None) -> tuple[float | None, str]:
    """The relative distance of the device run's final loss from the CPU twin's, and its verdict."""
    if device_loss is None or cpu_loss is None or math.isnan(device_loss) or math.isnan(cpu_loss):
        return None, ""
    diff = abs(device_loss - cpu_loss) / max(abs(cpu_loss), 1e-12)
    return diff, "same" if diff <= SAME else "close" if diff <= CLOSE else "differs"


# -- part 1: the probe ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeCase:
    """One call of a helper of ``dygsched.engine.comm`` and the check of what it returned."""

    helper: str
    device: str  # cpu | cuda
    label: str
    call: Callable[[Any, Any], None]  # (comm, torch) -> None; raises when the result is wrong


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)


def _seconds() -> tuple[list[float], Callable[[Any], None]]:
    """A list and the ``into`` that appends to it: the seconds a timed call hands over (a number,
    or a timed region read here, which on CUDA waits for the region's end event)."""
    box: list[float] = []

    def into(value: Any) -> None:
        seconds = float(value.seconds) if hasattr(value, "seconds") else float(value)
        _expect(seconds >= 0, f"timed {seconds} s")
        box.append(seconds)

    return box, into


def probe_cases(rank: int, world_size: int, device: str) -> list[ProbeCase]:
    """The cases for one rank of ``world_size``; ``device`` is the tensor device of the CUDA cases'
    half (``cpu`` leaves them out). Rank ``r`` sends ``r + q`` rows to rank ``q`` (rank 0 sends
    none to itself: a zero-row split in every all-to-all), each row holding the sender's rank."""
    cases: list[ProbeCase] = []
    devices = ["cpu"] + (["cuda"] if device == "cuda" else [])

    def add(helper: str, on: str, label: str) -> Callable[[Callable[[Any, Any], None]], Callable[[Any, Any], None]]:
        def register(fn: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
            cases.append(ProbeCase(helper, on, label, fn))
            return fn

        return register

    for on in devices:

        def dev(torch: Any, on: str = on) -> Any:
            return torch.device("cuda", torch.cuda.current_device()) if on == "cuda" else torch.device("cpu")

        @add("all_reduce", on, "float32 sum, timed")
        def _all_reduce(comm: Any, torch: Any, dev: Callable = dev) -> None:
            seconds, into = _seconds()
            tensor = torch.full((4, 3), float(rank + 1), device=dev(torch))
            result = comm.all_reduce(tensor, into=into)
            expected = world_size * (world_size + 1) / 2
            _expect(
                result.device == tensor.device and bool((result == expected).all()),
                f"sum {result.flatten()[:3].tolist()} != {expected}",
            )
            _expect(len(seconds) == 1 and seconds[0] >= 0, f"timed {seconds}")

        @add("all_reduce", on, "int64 max")
        def _all_reduce_max(comm: Any, torch: Any, dev: Callable = dev) -> None:
            tensor = torch.tensor([rank, -rank], dtype=torch.int64, device=dev(torch))
            comm.all_reduce(tensor, op=comm.MAX)
            _expect(tensor.tolist() == [world_size - 1, 0], f"max {tensor.tolist()}")

        @add("all_reduce_async", on, "posted, then waited (timed)")
        def _all_reduce_async(comm: Any, torch: Any, dev: Callable = dev) -> None:
            seconds, into = _seconds()
            tensor = torch.ones(1000, device=dev(torch))
            result = comm.all_reduce_async(tensor).wait(into=into)
            _expect(bool((result == world_size).all()), f"sum {result[:3].tolist()}")
            _expect(len(seconds) == 1, f"timed {seconds}")

        @add("all_to_all", on, "uneven splits, zero rows from rank 0 to itself, timed")
        def _all_to_all(comm: Any, torch: Any, dev: Callable = dev) -> None:
            seconds, into = _seconds()
            sends = (lambda p, q: p + q) if world_size > 1 else (lambda p, q: 5)
            send_counts = [sends(rank, q) for q in range(world_size)]
            recv_counts = [sends(p, rank) for p in range(world_size)]
            send = torch.full((sum(send_counts), 3), float(rank), device=dev(torch))
            got = comm.all_to_all(send, send_counts, recv_counts, into=into)
            _expect(
                got.device == send.device and tuple(got.shape) == (sum(recv_counts), 3),
                f"shape {tuple(got.shape)} on {got.device}",
            )
            senders = torch.repeat_interleave(torch.arange(world_size), torch.tensor(recv_counts)).to(got)
            _expect(bool((got == senders[:, None]).all()), "rows from the wrong rank")
            _expect(len(seconds) == 1, f"timed {seconds}")

        @add("all_to_all", on, "nothing sent by anyone")
        def _all_to_all_empty(comm: Any, torch: Any, dev: Callable = dev) -> None:
            zeros = [0] * world_size
            got = comm.all_to_all(torch.empty((0, 4), device=dev(torch)), zeros, zeros)
            _expect(tuple(got.shape) == (0, 4), f"shape {tuple(got.shape)}")

        @add("all_to_all_async", on, "uneven splits, posted, then waited")
        def _all_to_all_async(comm: Any, torch: Any, dev: Callable = dev) -> None:
            send_counts = [q + 1 for q in range(world_size)]
            recv_counts = [rank + 1] * world_size
            send = torch.cat([torch.full((q + 1, 2), float(10 * rank + q)) for q in range(world_size)]).to(dev(torch))
            pending = comm.all_to_all_async(send, send_counts, recv_counts)
            got = pending.wait()
            expected = torch.cat([torch.full((rank + 1, 2), float(10 * p + rank)) for p in range(world_size)]).to(got)
            _expect(pending.is_completed() and torch.equal(got, expected), "rows out of place")

        if world_size > 1:

            @add("send/recv", on, "rank 0 and 1 swap 3 rows, timed")
            def _send_recv(comm: Any, torch: Any, dev: Callable = dev) -> None:
                if rank > 1:
                    return
                seconds, into = _seconds()
                mine = torch.full((3, 2), float(rank), device=dev(torch))
                other = torch.empty_like(mine)
                if rank == 0:
                    comm.send(mine, 1, into=into)
                    comm.recv(other, 1, into=into)
                else:
                    comm.recv(other, 0, into=into)
                    comm.send(mine, 0, into=into)
                _expect(bool((other == float(1 - rank)).all()) and other.device == mine.device, f"received {other.tolist()}")
                _expect(len(seconds) == 2, f"timed {seconds}")

    @add("exchange_counts", "cpu", "uneven counts with zeros")
    def _exchange_counts(comm: Any, torch: Any) -> None:
        got = comm.exchange_counts([rank * q for q in range(world_size)])
        _expect(got == [p * rank for p in range(world_size)], f"counts {got}")

    @add("broadcast_object", "cpu", "a dict with a CPU tensor")
    def _broadcast_object(comm: Any, torch: Any) -> None:
        got = comm.broadcast_object({"rank": rank, "rows": torch.arange(3)}, src=0)
        _expect(got["rank"] == 0 and got["rows"].tolist() == [0, 1, 2], f"got {got}")

    @add("all_gather_object", "cpu", "each rank's tuple")
    def _all_gather_object(comm: Any, torch: Any) -> None:
        got = comm.all_gather_object(("rank", rank))
        _expect(got == [("rank", r) for r in range(world_size)], f"got {got}")

    @add("gather_object", "cpu", "to rank 0")
    def _gather_object(comm: Any, torch: Any) -> None:
        got = comm.gather_object({"r": rank}, dst=0)
        _expect(got == [{"r": r} for r in range(world_size)] if rank == 0 else got is None, f"got {got}")

    @add("barrier", "cpu", "every rank")
    def _barrier(comm: Any, torch: Any) -> None:
        comm.barrier()

    return cases


# Helpers of comm that are not collectives (the group's description), checked by the "backend" case.
DESCRIBING = {
    "active",
    "rank",
    "world_size",
    "backend",
    "device_backends",
    "device_backend",
    "cuda_through_nccl",
    "stages_through_host",
}


def probe_rank(rank: int, world_size: int, port: int, backend: str, device: str, out: Path, timeout_s: float) -> int:
    """One probe rank (a child process): join the group, run every case, one JSON line per case."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    lines = open(out, "a", buffering=1)

    def record(**entry: Any) -> None:
        lines.write(json.dumps({"rank": rank, **entry}) + "\n")

    record(case="join", status="started")
    try:
        if device == "cuda":
            torch.cuda.set_device(0)
        dist.init_process_group(backend, rank=rank, world_size=world_size, timeout=timedelta(seconds=timeout_s))
    except Exception as exc:
        record(case="join", status="failed", reason=one_line(f"{type(exc).__name__}: {exc}"))
        return 1
    record(case="join", status="ok", backend=str(dist.get_backend()))
    try:
        from dygsched.engine import comm
    except Exception as exc:
        record(
            case="import",
            status="failed",
            reason=one_line(f"dygsched.engine.comm cannot be imported: {type(exc).__name__}: {exc}"),
        )
        return 1
    if world_size == 1:  # the helpers' one-rank shortcut off: each call goes through torch.distributed
        comm.active = lambda: True  # type: ignore[attr-defined]
    failed = 0
    cases = probe_cases(rank, world_size, device)
    known = {case.helper.split("/")[0] for case in cases} | {"send", "recv"} | DESCRIBING  # send/recv: at two ranks
    public = sorted(
        name
        for name, value in vars(comm).items()
        if callable(value)
        and not name.startswith("_")
        and getattr(value, "__module__", "") == comm.__name__
        and not isinstance(value, type)
    )
    for name in public:
        if name not in known:
            record(case=f"{name} (any)", status="unprobed", reason="a helper of comm the probe does not know how to call")
    backend_case = "backend: the group's description"
    record(case=backend_case, status="started")
    try:
        name = comm.backend()
        description = {"backend": name, "cpu": comm.device_backend("cpu"), "cuda": comm.device_backend("cuda")}
        _expect(name == str(dist.get_backend()), f"comm.backend() {name!r} != torch's {dist.get_backend()!r}")
        if backend == MIXED_BACKEND:
            _expect(
                description["cpu"] == "gloo" and description["cuda"] == "nccl" and comm.cuda_through_nccl(),
                f"described as {description}",
            )
        record(case=backend_case, status="ok", reason=json.dumps(description))
    except Exception as exc:
        failed += 1
        record(case=backend_case, status="failed", reason=one_line(f"{type(exc).__name__}: {exc}"))
    for case in cases:
        label = f"{case.helper} {case.device}: {case.label}"
        record(case=label, status="started")
        start = time.perf_counter()
        try:
            if not callable(getattr(comm, case.helper.split("/")[0], None)):
                raise AttributeError(f"dygsched.engine.comm has no {case.helper.split('/')[0]}")
            case.call(comm, torch)
            if case.device == "cuda":
                torch.cuda.synchronize()
            record(case=label, status="ok", wall_s=time.perf_counter() - start)
        except Exception as exc:
            failed += 1
            record(
                case=label, status="failed", wall_s=time.perf_counter() - start, reason=one_line(f"{type(exc).__name__}: {exc}")
            )
    try:
        dist.destroy_process_group()
    except Exception as exc:
        record(case="leave", status="failed", reason=one_line(f"{type(exc).__name__}: {exc}"))
    return 1 if failed else 0


def free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def probe(world_size: int, backend: str, device: str, folder: Path, timeout_s: float, clock: Clock) -> list[Row]:
    """Every probe case on ``world_size`` child ranks; one row per case (failed on any rank: failed)."""
    stem = f"probe-ws{world_size}-{backend.replace(':', '-').replace(',', '+')}"
    out = folder / f"{stem}.jsonl"
    out.unlink(missing_ok=True)
    port = free_port()
    command = [sys.executable, "-m", "dygsched.launch.gpu_check", "--probe-rank"]
    logs = [folder / f"{stem}-rank{rank}.log" for rank in range(world_size)]
    children = []
    for rank in range(world_size):
        with open(logs[rank], "w") as log:  # a file, not a pipe: a chatty rank cannot block on it
            children.append(
                subprocess.Popen(
                    [*command, str(rank), str(world_size), str(port), backend, device, str(out), str(timeout_s / 2)],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            )
    until = time.monotonic() + timeout_s
    ends: dict[int, str] = {}
    try:
        for rank, child in enumerate(children):
            try:
                child.wait(timeout=max(0.1, until - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
                ends[rank] = f"killed after the probe's {timeout_s:.0f} s"
    finally:  # the check stopped (SIGTERM, Ctrl-C) while they ran: they stop with it
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    outputs = {rank: logs[rank].read_text(errors="replace") for rank in range(world_size)}
    for rank, child in enumerate(children):
        if rank not in ends and child.returncode < 0:
            ends[rank] = f"died of {signal.Signals(-child.returncode).name}"
        elif rank not in ends and child.returncode not in (0, 1):
            ends[rank] = f"exited with code {child.returncode}"
    entries = [
        entry for line in (out.read_text().splitlines() if out.exists() else []) if (entry := _json_line(line)) is not None
    ]
    last_words = outputs.get(0, "").strip().splitlines()
    rows = probe_rows(entries, ends, world_size, device, backend, last_words[-1] if last_words else "")
    clock.say(f"probe at {world_size} rank(s), {backend}: {tally(rows)}")
    return rows


def _json_line(line: str) -> dict[str, Any] | None:
    """One line a probe rank wrote; None for a blank line or one cut short by the rank's death."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) and {"rank", "case", "status"} <= set(entry) else None


def probe_rows(
    entries: Sequence[dict[str, Any]], ends: dict[int, str], world_size: int, device: str, backend: str, last_words: str = ""
) -> list[Row]:
    """The probe's rows from what its ranks wrote (``entries``: one dict per line, a case ``started``
    then how it ended) and how ranks that did not exit on their own ended (``ends``): a case is ok
    when every rank finished it ok; else the first rank that did not, and why (its error, or that it
    died in the case or never reached it). ``last_words``: rank 0's last line of output, for a probe
    that wrote nothing."""
    cases: dict[str, dict[int, dict[str, Any]]] = {}
    group_backend = ""
    for entry in entries:
        cases.setdefault(entry["case"], {})[entry["rank"]] = entry  # the last line per rank wins: started, then how it ended
        group_backend = entry.get("backend", group_backend)
    rows = []
    for case, by_rank in cases.items():
        statuses = {r: e["status"] for r, e in by_rank.items()}
        every_rank_ok = all(s == "ok" for s in statuses.values()) and len(statuses) == world_size
        if case == "join" and every_rank_ok:
            continue  # the join is every other row's premise; it gets a row when it failed
        if every_rank_ok:
            status, reason = "ok", next(iter(by_rank.values())).get("reason", "") if case.startswith("backend") else ""
        elif any(s == "unprobed" for s in statuses.values()):
            status, reason = "unprobed", next(iter(by_rank.values())).get("reason", "")
        else:
            status = "failed"
            first = min(r for r in range(world_size) if statuses.get(r) != "ok")
            why = by_rank.get(first, {}).get("reason") or (
                f"it never finished there ({ends.get(first, 'no reason left')})"
                if statuses.get(first) == "started"
                else "it never got there"
            )
            reason = f"rank {first}: {why}" if world_size > 1 or first not in by_rank or statuses[first] == "started" else why
        wall = max((e.get("wall_s") or 0.0) for e in by_rank.values())
        rows.append(Row("probe", case, world_size, device, status, wall_s=wall, backend=group_backend or backend, reason=reason))
    if not rows:
        why = "; ".join(f"rank {r} {end}" for r, end in sorted(ends.items())) or "the probe wrote nothing"
        tail = one_line(last_words)
        rows.append(
            Row("probe", "join", world_size, device, "failed", backend=backend, reason=f"{why}{': ' + tail if tail else ''}")
        )
    elif ends:
        reason = "; ".join(f"rank {r} {end}" for r, end in sorted(ends.items()))
        rows.append(Row("probe", "probe ranks", world_size, device, "failed", backend=backend, reason=reason))
    return rows


# -- parts 2 and 3: the strategies ------------------------------------------------------------------


class RunTimedOut(Exception):
    """A run went past the check's deadline for one run."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise ``RunTimedOut`` in this (main) thread after ``seconds``; the launcher then stops its ranks."""

    def expire(signum: int, frame: Any) -> None:
        raise RunTimedOut(f"not finished after {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.01))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Outcome:
    """What one run gave: how it ended and its figures (None: not measured)."""

    status: str
    wall_s: float
    epoch_time_s: float | None = None
    final_loss: float | None = None
    gpu_peaks: dict[int, float] = field(default_factory=dict)  # rank -> MB
    backend: str = ""
    reason: str = ""


def run_overrides(
    variant: Variant, world_size: int, device: str, results: Path, dist_timeout_s: float, tag: str = ""
) -> list[str]:
    run_id = f"{variant.name}-ws{world_size}-{device}{tag}"
    return [
        *variant.overrides,
        *COMMON,
        f"world_size={world_size}",
        f"device={device}",
        f"dist_timeout_s={dist_timeout_s:g}",
        f"results_dir={results}",
        f"run_id={run_id}",
    ]


def gpu_peaks(run_dir: Path) -> dict[int, float]:
    """Each rank's largest GPU allocator peak over the epochs, in MB (empty off a GPU)."""
    import pandas as pd

    path = run_dir / "metrics.parquet"
    if not path.is_file():
        return {}
    metrics = pd.read_parquet(path, columns=["rank", "metric", "value"])
    peaks = metrics[(metrics.metric == "gpu_peak_allocated_bytes") & metrics.value.notna()]
    return {int(rank): float(value) / 2**20 for rank, value in peaks.groupby("rank")["value"].max().items()}


def run_backend(run_dir: Path, summary: dict[str, Any]) -> str:
    """The process-group backend the run recorded, wherever it wrote it (empty if it did not)."""
    for key in ("dist_backend", "backend"):
        if isinstance(summary.get(key), str):
            return summary[key]
    config = run_dir / "config.yaml"
    if config.is_file():
        for line in config.read_text().splitlines():
            if line.startswith("dist_backend:"):
                return line.split(":", 1)[1].strip().strip("'\"")
    return ""


def one_run(overrides: list[str], timeout_s: float) -> Outcome:
    """Compose, check and train one run as ``dygsched run`` would; every failure becomes the outcome."""
    start = time.monotonic()
    try:
        with deadline(timeout_s):
            from dygsched.launch.app import run
            from dygsched.launch.sweeps import checked_points

            ((point, cfg),) = checked_points([overrides])
            summary = run(cfg, overrides=point)
    except RunTimedOut as exc:
        return Outcome("timeout", time.monotonic() - start, reason=str(exc))
    except Terminated:  # the check itself is stopped: no further run
        raise
    except Exception as exc:  # the run's own one-line error (RunFailed, ConfigError), or anything else
        text = str(exc) if isinstance(exc, DygschedError) else f"{type(exc).__name__}: {exc}"
        return Outcome("failed", time.monotonic() - start, reason=one_line(text))
    wall = time.monotonic() - start
    if not summary:
        return Outcome("failed", wall, reason="the run returned no summary")
    run_dir = Path(str(summary.get("run_dir", "")))
    status = "ok" if summary.get("status") == "ok" else "failed"
    return Outcome(
        status,
        wall,
        summary.get("epoch_time_s"),
        summary.get("final_train_loss"),
        gpu_peaks(run_dir),
        run_backend(run_dir, summary),
        "" if status == "ok" else one_line(str(summary.get("reason", "not ok"))),
    )


def variant_row(
    part: str, variant: Variant, world_size: int, device: str, results: Path, args: argparse.Namespace, clock: Clock
) -> Row:
    """``variant`` at ``world_size`` on ``device``, then its CPU twin (unless ``--no-twins``)."""
    label = f"{part} {variant.name} on {device}"
    if clock.left() <= 0:
        return Row(
            part, variant.name, world_size, device, "skipped", reason=f"the check's budget of {args.budget_s:.0f} s ran out"
        )
    clock.say(f"{label} ...")  # a run started gets its whole deadline: the check ends within budget + one deadline
    outcome = one_run(run_overrides(variant, world_size, device, results, args.dist_timeout_s), args.run_timeout_s)
    clock.say(f"{label}: {outcome.status} in {outcome.wall_s:.1f} s" + (f" ({outcome.reason})" if outcome.reason else ""))
    row = Row(
        part,
        variant.name,
        world_size,
        device,
        outcome.status,
        wall_s=outcome.wall_s,
        epoch_time_s=outcome.epoch_time_s,
        gpu_peak_mb=" ".join(f"{outcome.gpu_peaks[r]:.1f}" for r in sorted(outcome.gpu_peaks)),
        final_loss=outcome.final_loss,
        backend=outcome.backend,
        reason=outcome.reason,
    )
    if not variant.comparable:
        row.loss_check = "no twin (timed plan)"
    if args.no_twins or outcome.status != "ok" or not variant.comparable:
        return row
    if clock.left() <= 0:
        row.cpu_status = "skipped"
        return row
    twin = one_run(run_overrides(variant, world_size, "cpu", results, args.dist_timeout_s, "-twin"), args.run_timeout_s)
    row.cpu_status, row.cpu_epoch_time_s, row.cpu_final_loss = twin.status, twin.epoch_time_s, twin.final_loss
    row.loss_rel_diff, row.loss_check = loss_check(row.final_loss, row.cpu_final_loss)
    if twin.status != "ok":
        row.reason = f"cpu run {twin.status}: {twin.reason}"
    clock.say(
        f"{label}: cpu twin {twin.status} in {twin.wall_s:.1f} s; final loss {_cell(row.final_loss)} vs {_cell(row.cpu_final_loss)} ({row.loss_check or 'n/a'})"
    )
    return row


# -- the check ------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m dygsched.launch.gpu_check",
        description="Check the communication module and every strategy on one GPU (a few minutes).",
    )
    parser.add_argument(
        "results", nargs="?", type=Path, default=DEFAULT_RESULTS, help="where the table and the runs go (default: %(default)s)"
    )
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: a rehearsal of the same code on CPU")
    parser.add_argument("--parts", default="probe,ws1,ws2", help="which parts, comma-separated (default: %(default)s)")
    parser.add_argument("--only", default="", help="only these variants, comma-separated (default: all)")
    parser.add_argument("--no-twins", action="store_true", help="skip the device=cpu run of each variant")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=390.0,
        help="start no run after this many seconds; the check ends within the budget and one run's deadline (default: %(default)s)",
    )
    parser.add_argument("--run-timeout-s", type=float, default=75.0, help="deadline of one run (default: %(default)s)")
    parser.add_argument("--dist-timeout-s", type=float, default=30.0, help="the runs' collective timeout (default: %(default)s)")
    parser.add_argument("--probe-timeout-s", type=float, default=60.0, help="deadline of each probe (default: %(default)s)")
    args = parser.parse_args(list(argv))
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = [p for p in args.parts if p not in ("probe", "ws1", "ws2")]
    if unknown:
        parser.error(f"unknown part {', '.join(unknown)}: choose from probe, ws1, ws2")
    names = [v.name for v in VARIANTS]
    args.only = [n.strip() for n in args.only.split(",") if n.strip()]
    missing = [n for n in args.only if n not in names]
    if missing:
        parser.error(f"unknown variant {', '.join(missing)}: choose from {', '.join(names)}")
    for name in ("budget_s", "run_timeout_s", "dist_timeout_s", "probe_timeout_s"):
        if not getattr(args, name) > 0:
            parser.error(f"--{name.replace('_', '-')} must be more than 0")
    return args


def cuda_visible() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def describe_machine(device: str) -> dict[str, Any]:
    """What the table was measured with (``check_gpu_machine.json``): Python, torch, CUDA, NCCL, the GPU."""
    import platform

    import torch

    machine: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__, "cpus": os.cpu_count()}
    if device == "cuda":
        try:
            nccl: Any = torch.cuda.nccl.version()
        except Exception:  # a build without NCCL: the probe's nccl rows say what that means
            nccl = None
        machine.update(
            cuda=torch.version.cuda,
            nccl=".".join(map(str, nccl)) if isinstance(nccl, tuple) else nccl,
            gpus=torch.cuda.device_count(),
            gpu=torch.cuda.get_device_name(0),
            gpu_memory_gib=round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1),
        )
    return machine


def main(argv: Sequence[str]) -> int:
    if argv[:1] == ["--probe-rank"]:
        rank, world_size, port, backend, device, out, timeout = argv[1:8]
        return probe_rank(int(rank), int(world_size), int(port), backend, device, Path(out), float(timeout))
    args = parse_args(argv)
    if args.device == "cuda" and not cuda_visible():
        print("check-gpu: no CUDA device is visible here (torch.cuda.is_available() is false): nothing checked", flush=True)
        return 0
    folder: Path = args.results
    folder.mkdir(parents=True, exist_ok=True)
    clock = Clock(args.budget_s)
    clock.say(f"check-gpu: device={args.device}, parts {', '.join(args.parts)}, table in {folder / TABLE}.csv and .md")
    machine = describe_machine(args.device)
    (folder / f"{TABLE}_machine.json").write_text(json.dumps(machine, indent=2) + "\n")
    clock.say(", ".join(f"{key} {value}" for key, value in machine.items()))
    rows: list[Row] = []
    signal.signal(signal.SIGTERM, _stop)  # a run in progress stops its ranks on it, as dygsched run does
    try:
        check(args, folder, clock, rows)
    except (Terminated, KeyboardInterrupt) as exc:
        write_table(rows, folder)
        clock.say(
            f"check-gpu: stopped ({getattr(exc, 'signal_name', 'interrupted')}) after {len(rows)} rows; table in {folder / TABLE}.csv"
        )
        return int(getattr(exc, "exit_code", 130))
    write_table(rows, folder)
    print(markdown(rows), flush=True)
    bad = [row for row in rows if row.status != "ok"]
    for row in bad:  # last, where a terminal's tail shows them
        print(
            f"not ok: {row.part} {row.name} at {row.world_size} rank(s) on {row.device} ({row.backend}): {row.status}: {row.reason}",
            flush=True,
        )
    clock.say(f"check-gpu: {tally(rows)}; table in {folder / TABLE}.csv")
    return 1 if bad else 0


def _stop(signum: int, frame: Any) -> None:
    signal.signal(signum, signal.SIG_IGN)  # once: writing the table must not be cut short
    raise Terminated(signum)


def check(args: argparse.Namespace, folder: Path, clock: Clock, rows: list[Row]) -> None:
    """The parts ``args`` asks for, each row added to ``rows`` and the table rewritten at once."""

    def keep(new: list[Row] | Row) -> None:
        rows.extend(new if isinstance(new, list) else [new])
        write_table(rows, folder)

    if "probe" in args.parts:
        one_rank_backend = MIXED_BACKEND if args.device == "cuda" else "gloo"
        keep(probe(1, one_rank_backend, args.device, folder, args.probe_timeout_s, clock))
        if args.device == "cuda":  # dist_backend=nccl alone: CPU tensors staged through the GPU
            keep(probe(1, "nccl", args.device, folder, args.probe_timeout_s, clock))
        keep(probe(2, SHARED_GPU_BACKEND, args.device, folder, args.probe_timeout_s, clock))
    # strategy by strategy, one rank then two: a check stopped by its budget misses the last strategies
    # (the repeats) at both world sizes rather than every strategy at two ranks
    for variant in (v for v in VARIANTS if not args.only or v.name in args.only):
        for part, world_size in (("ws1", 1), ("ws2", 2)):
            if part in args.parts and world_size in variant.world_sizes:
                keep(variant_row(part, variant, world_size, args.device, folder / "runs", args, clock))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
