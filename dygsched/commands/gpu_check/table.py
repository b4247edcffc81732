"""The check's table: its rows, progress lines, and ``check_gpu.csv`` and ``check_gpu.md``."""

from __future__ import annotations

import csv
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

TABLE = "check_gpu"

# A loss on the GPU within this relative distance of the CPU twin's reads "same"; within CLOSE, "close".
SAME, CLOSE = 1e-5, 1e-3


@dataclass
class Row:
    """One line of the table: a probe case, or a strategy's run on the device with its CPU twin."""

    part: str  # probe | ws1 | ws2
    name: str  # the probe case, or the variant
    world_size: int
    device: str
    status: str  # ok | failed | timeout | skipped | unprobed
    gpus: int | None = None  # the distinct GPUs the ranks ran on (None on CPU)
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


def cell(value: Any) -> str:
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
    lines += ["| " + " | ".join(cell(getattr(row, c)) for c in COLUMNS) + " |" for row in rows]
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


def failure(row: Row) -> str | None:
    """Why ``row`` fails the check (None: it does not): a run or probe case that did not end ``ok``,
    a final loss that differs from the CPU twin's beyond ``CLOSE``, or a twin that failed. A row
    the budget skipped fails nothing (``tally`` counts it)."""
    if row.status not in ("ok", "skipped"):
        return f"{row.status}: {row.reason}"
    if row.cpu_status in ("failed", "timeout"):
        return f"its CPU twin {row.cpu_status}: {row.reason}"
    if row.loss_check == "differs":
        return (
            f"final loss {cell(row.final_loss)} against the CPU twin's {cell(row.cpu_final_loss)}: "
            f"relative difference {cell(row.loss_rel_diff)}, beyond the twins' tolerance {CLOSE:g}"
        )
    return None


def tally(rows: Sequence[Row]) -> str:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    differs = sum(row.loss_check == "differs" for row in rows)
    twins = sum(row.cpu_status in ("failed", "timeout") for row in rows)
    text = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    text += f"; {differs} with a final loss that differs from the CPU run's" if differs else ""
    return text + (f"; {twins} whose CPU twin failed" if twins else "")


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
