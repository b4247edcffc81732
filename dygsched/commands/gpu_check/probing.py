"""Part 1, the probe: the communication module on child ranks with a deadline, and their table rows."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dygsched.commands.gpu_check.probe_cases import DESCRIBING, expect, probe_cases
from dygsched.commands.gpu_check.table import Clock, Row, one_line, tally

MIXED_BACKEND = "cpu:gloo,cuda:nccl"
SHARED_GPU_BACKEND = "gloo"  # what two ranks on one GPU use (NCCL refuses two ranks on one device)


@dataclass(frozen=True)
class ProbeSetting:
    """One probe: its ranks, the backend they join, and whether each rank has a GPU of its own
    (``spread``: rank ``r`` on GPU ``r``) or all share GPU 0."""

    world_size: int
    backend: str
    spread: bool = False

    @property
    def gpus(self) -> int:
        return self.world_size if self.spread else 1


def probe_settings(device: str, gpu_count: int) -> list[ProbeSetting]:
    """The probes of a check on ``device`` with ``gpu_count`` GPUs visible, in order: one rank on the
    mixed backend and on NCCL alone; with two GPUs or more, two ranks on two GPUs under both (NCCL
    between GPUs: what a multi-GPU run's collectives take); two ranks sharing GPU 0 under gloo (what
    ``dist_backend=auto`` gives them). On CPU: one and two gloo ranks (a rehearsal)."""
    if device != "cuda":
        return [ProbeSetting(1, "gloo"), ProbeSetting(2, SHARED_GPU_BACKEND)]
    settings = [ProbeSetting(1, MIXED_BACKEND), ProbeSetting(1, "nccl")]
    if gpu_count >= 2:
        settings += [ProbeSetting(2, MIXED_BACKEND, spread=True), ProbeSetting(2, "nccl", spread=True)]
    return settings + [ProbeSetting(2, SHARED_GPU_BACKEND)]


def probe_rank(
    rank: int, world_size: int, port: int, backend: str, device: str, out: Path, timeout_s: float, spread: bool = False
) -> int:
    """One probe rank (a child process): join the group, run every case, one JSON line per case;
    ``spread``: on GPU ``rank`` (else every rank on GPU 0)."""
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
            torch.cuda.set_device(rank % torch.cuda.device_count() if spread else 0)
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
        comm.active = lambda: True
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
        described = comm.backend()
        description = {"backend": described, "cpu": comm.device_backend("cpu"), "cuda": comm.device_backend("cuda")}
        expect(described == str(dist.get_backend()), f"comm.backend() {described!r} != torch's {dist.get_backend()!r}")
        if backend == MIXED_BACKEND:
            expect(
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


def probe(
    world_size: int, backend: str, device: str, folder: Path, timeout_s: float, clock: Clock, spread: bool = False
) -> list[Row]:
    """Every probe case on ``world_size`` child ranks (``spread``: each on a GPU of its own); one row
    per case (failed on any rank: failed)."""
    stem = f"probe-ws{world_size}-{backend.replace(':', '-').replace(',', '+')}" + ("-gpus" if spread else "")
    out = folder / f"{stem}.jsonl"
    out.unlink(missing_ok=True)
    port = free_port()
    command = [sys.executable, "-m", "dygsched.commands.gpu_check", "--probe-rank"]
    logs = [folder / f"{stem}-rank{rank}.log" for rank in range(world_size)]
    children = []
    for rank in range(world_size):
        with open(logs[rank], "w") as log:  # a file, not a pipe: a chatty rank cannot block on it
            children.append(
                subprocess.Popen(
                    [*command, str(rank), str(world_size), str(port), backend, device, str(out), str(timeout_s / 2)]
                    + (["spread"] if spread else []),
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
    for row in rows:
        row.gpus = (world_size if spread else 1) if device == "cuda" else None
    on = f" on {world_size} GPUs" if spread else ""
    clock.say(f"probe at {world_size} rank(s){on}, {backend}: {tally(rows)}")
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
