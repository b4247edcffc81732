"""Parts 2 and 3: one strategy's run composed and trained as ``dygsched run`` would, then its CPU twin."""

from __future__ import annotations

import argparse
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dygsched.commands.gpu_check.table import Clock, Row, cell, loss_check, one_line
from dygsched.commands.gpu_check.variants import COMMON, Variant
from dygsched.errors import DygschedError, Terminated


def gpu_count(device: str) -> int:
    """The GPUs this process sees (0 for a CPU rehearsal)."""
    import torch

    return int(torch.cuda.device_count()) if device == "cuda" else 0


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
        gpus=min(world_size, gpu_count(device)) if device == "cuda" else None,
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
        f"{label}: cpu twin {twin.status} in {twin.wall_s:.1f} s; "
        f"final loss {cell(row.final_loss)} vs {cell(row.cpu_final_loss)} ({row.loss_check or 'n/a'})"
    )
    return row
