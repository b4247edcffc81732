"""The check's command line: its arguments, the machine it ran on, and the parts in order."""

from __future__ import annotations

import argparse
import json
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dygsched.arguments import CommandParser
from dygsched.commands.gpu_check.groups import Joined, RankGroups
from dygsched.commands.gpu_check.probing import probe, probe_rank, probe_settings
from dygsched.commands.gpu_check.runs import gpu_count, variant_row
from dygsched.commands.gpu_check.table import TABLE, Clock, Row, failure, markdown, tally, write_table
from dygsched.commands.gpu_check.variants import VARIANTS
from dygsched.errors import Terminated

DEFAULT_RESULTS = Path("results") / "check-gpu"


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = CommandParser(
        prog="python -m dygsched.commands.gpu_check",
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
        default=315.0,
        help="start no run after this many seconds; the check ends within the budget, one start of ranks and one "
        "run's deadline (default: %(default)s)",
    )
    parser.add_argument(
        "--run-timeout-s", type=float, default=45.0, help="deadline of one run on its ranks (default: %(default)s)"
    )
    parser.add_argument(
        "--start-timeout-s",
        type=float,
        default=60.0,
        help="deadline of a group of ranks' start: spawned, imported, joined (default: %(default)s)",
    )
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
    for name in ("budget_s", "run_timeout_s", "start_timeout_s", "dist_timeout_s", "probe_timeout_s"):
        if not getattr(args, name) > 0:
            parser.error(f"--{name.replace('_', '-')} must be more than 0")
    return args


def cuda_visible() -> bool:
    """Whether a CUDA device is visible, asked without initialising CUDA in this process (torch
    counts through NVML first): CUDA is initialised in the spawned ranks alone."""
    import torch

    return int(torch.cuda.device_count()) > 0


def describe_machine(device: str, gpu_details: bool = False) -> dict[str, Any]:
    """What the table was measured with (``check_gpu_machine.json``): Python, torch, CUDA, NCCL and
    the GPU count, read without initialising CUDA here; the check adds the GPU's name and memory
    when the first ranks on it joined (``add_gpu``). ``gpu_details``: read them here instead, which
    initialises CUDA in this process (bench-gpu, whose plain loop runs here anyway)."""
    import platform

    import torch

    machine: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__, "cpus": os.cpu_count()}
    if device == "cuda":
        try:
            nccl: Any = torch.cuda.nccl.version()  # the library's own version: no device touched
        except Exception:  # a build without NCCL: the probe's nccl rows say what that means
            nccl = None
        machine.update(
            cuda=torch.version.cuda,
            nccl=".".join(map(str, nccl)) if isinstance(nccl, tuple) else nccl,
            gpus=torch.cuda.device_count(),
        )
        if gpu_details:
            machine.update(
                gpu=torch.cuda.get_device_name(0),
                gpu_memory_gib=round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1),
            )
    return machine


def add_gpu(machine: dict[str, Any], joined: Sequence[Joined]) -> bool:
    """The GPU a group's rank 0 joined on, into ``machine`` (once); whether it was added."""
    first = joined[0] if joined else None
    if first is None or not first.gpu or "gpu" in machine:
        return False
    machine.update(gpu=first.gpu, gpu_memory_gib=first.gpu_memory_gib)
    return True


def main(argv: Sequence[str]) -> int:
    if argv[:1] == ["--probe-rank"]:
        rank, world_size, port, backend, device, out, timeout = argv[1:8]
        spread = argv[8:9] == ["spread"]
        return probe_rank(int(rank), int(world_size), int(port), backend, device, Path(out), float(timeout), spread)
    args = parse_args(argv)
    if args.device == "cuda" and not cuda_visible():
        print("check-gpu: no CUDA device is visible here (torch.cuda.is_available() is false): nothing checked", flush=True)
        return 0
    folder: Path = args.results
    folder.mkdir(parents=True, exist_ok=True)
    clock = Clock(args.budget_s)
    clock.say(f"check-gpu: device={args.device}, parts {', '.join(args.parts)}, table in {folder / TABLE}.csv and .md")
    machine = describe_machine(args.device)
    write_machine(folder, machine)
    clock.say(", ".join(f"{key} {value}" for key, value in machine.items()))
    rows: list[Row] = []
    signal.signal(signal.SIGTERM, _stop)  # a run in progress stops its ranks on it, as dygsched run does
    try:
        check(args, folder, clock, rows, machine)
    except (Terminated, KeyboardInterrupt) as exc:
        write_table(rows, folder)
        stopped_by = getattr(exc, "signal_name", "interrupted")
        clock.say(f"check-gpu: stopped ({stopped_by}) after {len(rows)} rows; table in {folder / TABLE}.csv")
        return int(getattr(exc, "exit_code", 130))
    write_table(rows, folder)
    print(markdown(rows), flush=True)
    bad = [(row, why) for row in rows if (why := failure(row)) is not None]
    skipped = [row for row in rows if row.status == "skipped" or row.cpu_status == "skipped"]
    if skipped:
        print(f"skipped by the budget of {args.budget_s:.0f} s: " + ", ".join(f"{r.part} {r.name}" for r in skipped), flush=True)
    for row, why in bad:  # last, where a terminal's tail shows them
        print(f"not ok: {row.part} {row.name} at {row.world_size} rank(s) on {row.device} ({row.backend}): {why}", flush=True)
    clock.say(f"check-gpu: {tally(rows)}; {'FAILED' if bad else 'passed'}; table in {folder / TABLE}.csv")
    return 1 if bad else 0


def _stop(signum: int, frame: Any) -> None:
    signal.signal(signum, signal.SIG_IGN)  # once: writing the table must not be cut short
    raise Terminated(signum)


def write_machine(folder: Path, machine: dict[str, Any]) -> None:
    (folder / f"{TABLE}_machine.json").write_text(json.dumps(machine, indent=2) + "\n")


def check(args: argparse.Namespace, folder: Path, clock: Clock, rows: list[Row], machine: dict[str, Any] | None = None) -> None:
    """The parts ``args`` asks for, each row added to ``rows`` and the table rewritten at once; the
    runs of parts 2 and 3 trained by groups of ranks started once per world size and device
    (``groups``), which leave at the end or stop with the check."""

    def keep(new: list[Row] | Row) -> None:
        rows.extend(new if isinstance(new, list) else [new])
        write_table(rows, folder)

    def joined(ranks: list[Joined]) -> None:
        if machine is not None and add_gpu(machine, ranks):
            write_machine(folder, machine)
            clock.say(f"gpu {machine['gpu']}, {machine['gpu_memory_gib']} GiB")

    if "probe" in args.parts:
        for setting in probe_settings(args.device, gpu_count(args.device)):
            keep(probe(setting.world_size, setting.backend, args.device, folder, args.probe_timeout_s, clock, setting.spread))
    groups = RankGroups(folder / "ranks", args.start_timeout_s, clock.say, joined)
    try:
        # strategy by strategy, one rank then two: a check stopped by its budget misses the last
        # strategies (the repeats) at both world sizes rather than every strategy at two ranks
        for variant in (v for v in VARIANTS if not args.only or v.name in args.only):
            for part, world_size in (("ws1", 1), ("ws2", 2)):
                if part in args.parts and world_size in variant.world_sizes:
                    keep(variant_row(part, variant, world_size, args.device, folder / "runs", args, clock, groups))
    except BaseException:
        groups.stop()
        raise
    groups.close()
