"""bench-gpu's command line: its arguments, the machine it ran on, the pairs in order, the table."""

from __future__ import annotations

import argparse
import csv
import json
import math
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dygsched.arguments import CommandParser
from dygsched.commands.gpu_check.cli import describe_machine
from dygsched.commands.gpu_check.table import Clock
from dygsched.errors import Terminated
from dygsched.paper.bench.gpu.pairs import PAIRS, SIZES, Setting, run_pair

DEFAULT_RESULTS = Path("results") / "bench-gpu"
TABLE = "bench_gpu"
COLUMNS = [
    "pair",
    "a",
    "b",
    "measure",
    "a_value",
    "b_value",
    "ratio",
    "ratio_low",
    "ratio_high",
    "spread_over",
    "rounds",
    "a_syncs_per_step",
    "b_syncs_per_step",
    "a_final_loss",
    "b_final_loss",
    "status",
    "reason",
    "wall_s",
]


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = CommandParser(
        prog="python -m dygsched.paper.bench.gpu",
        description="Five comparisons on one GPU, A and B alternated: each ratio with its spread and the syncs per step.",
    )
    parser.add_argument(
        "results", nargs="?", type=Path, default=DEFAULT_RESULTS, help="where the table and the runs go (default: %(default)s)"
    )
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: a rehearsal of the same code on CPU")
    parser.add_argument("--size", choices=sorted(SIZES), default="full", help="the workloads (tiny: the tests')")
    parser.add_argument("--pairs", default=",".join(PAIRS), help="which pairs, comma-separated, in order (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="A B rounds per pair (default: %(default)s)")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=240.0,
        help="start no pair or round after this many seconds; the bench ends within it and one run's deadline "
        "(default: %(default)s)",
    )
    parser.add_argument("--run-timeout-s", type=float, default=90.0, help="deadline of one side's run (default: %(default)s)")
    args = parser.parse_args(list(argv))
    args.pairs = [p.strip() for p in args.pairs.split(",") if p.strip()]
    unknown = [p for p in args.pairs if p not in PAIRS]
    if unknown:
        parser.error(f"unknown pair {', '.join(unknown)}: choose from {', '.join(PAIRS)}")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    for name in ("budget_s", "run_timeout_s"):
        if not getattr(args, name) > 0:
            parser.error(f"--{name.replace('_', '-')} must be more than 0")
    return args


def cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value).replace("|", "/").replace("\n", " ")


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(row.get(c)) for c in COLUMNS) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_table(rows: Sequence[dict[str, Any]], folder: Path) -> None:
    """``bench_gpu.csv`` and ``bench_gpu.md``, each replaced whole."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"{TABLE}.csv.tmp"
    with open(tmp, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({c: "" if row.get(c) is None else row.get(c) for c in COLUMNS})
    tmp.replace(folder / f"{TABLE}.csv")
    tmp = folder / f"{TABLE}.md.tmp"
    tmp.write_text(markdown(rows))
    tmp.replace(folder / f"{TABLE}.md")


def summary_line(row: dict[str, Any]) -> str:
    """One printed line per pair: the ratio, its spread, and each side's syncs per step."""
    if row["status"] != "ok":
        return f"{row['pair']}: {row['status']}: {row['reason']}"
    unit = "peak memory" if row["measure"] == "peak_mb" else "epoch time"
    spread = f" ({cell(row['ratio_low'])} to {cell(row['ratio_high'])} over {row['spread_over']})" if row.get("rounds") else ""
    syncs = f"syncs/step {cell(row['a_syncs_per_step']) or '-'} vs {cell(row['b_syncs_per_step']) or '-'}"
    note = f"; {row['reason']}" if row["reason"] else ""
    return f"{row['pair']}: {unit} {row['a']} / {row['b']} = {cell(row['ratio'])}x{spread}, {syncs}{note}"


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print("bench-gpu: no CUDA device is visible here (torch.cuda.is_available() is false): nothing measured", flush=True)
            return 0
    folder: Path = args.results
    folder.mkdir(parents=True, exist_ok=True)
    clock = Clock(args.budget_s)
    clock.say(f"bench-gpu: device={args.device}, size {args.size}, pairs {', '.join(args.pairs)}, table in {folder / TABLE}.csv")
    machine = describe_machine(args.device, gpu_details=True)
    (folder / f"{TABLE}_machine.json").write_text(json.dumps(machine, indent=2) + "\n")
    clock.say(", ".join(f"{key} {value}" for key, value in machine.items()))
    setting = Setting(args.device, folder, args.size, args.rounds, args.run_timeout_s, clock)
    rows: list[dict[str, Any]] = []
    signal.signal(signal.SIGTERM, _stop)
    try:
        for pair in args.pairs:
            if clock.left() <= 0:
                rows.append({"pair": pair, "status": "skipped", "reason": f"the budget of {args.budget_s:.0f} s ran out"})
            else:
                rows.append(run_pair(pair, setting))
            clock.say(summary_line(rows[-1]))
            write_table(rows, folder)
    except (Terminated, KeyboardInterrupt) as exc:
        write_table(rows, folder)
        clock.say(f"bench-gpu: stopped ({getattr(exc, 'signal_name', 'interrupted')}) after {len(rows)} pairs")
        return int(getattr(exc, "exit_code", 130))
    print(markdown(rows), flush=True)
    for row in rows:
        print(summary_line(row), flush=True)
    failed = [row for row in rows if row["status"] == "failed"]
    clock.say(f"bench-gpu: {len(rows) - len(failed)} of {len(rows)} pairs measured; table in {folder / TABLE}.csv")
    return 1 if failed else 0


def _stop(signum: int, frame: Any) -> None:
    signal.signal(signum, signal.SIG_IGN)
    raise Terminated(signum)
