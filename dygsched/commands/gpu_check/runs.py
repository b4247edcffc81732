"""Parts 2 and 3: one strategy's run, prepared here and trained by the check's ranks, then its CPU twin."""

from __future__ import annotations

import argparse
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dygsched.commands.gpu_check.groups import GroupKey, Job, RankGroups
from dygsched.commands.gpu_check.table import Clock, Row, cell, loss_check, one_line
from dygsched.commands.gpu_check.variants import COMMON, Variant
from dygsched.errors import DygschedError, Terminated


def gpu_count(device: str) -> int:
    """The GPUs this process sees (0 for a CPU rehearsal), counted without initialising CUDA here
    (torch asks NVML first): the ranks alone initialise it."""
    import torch

    return int(torch.cuda.device_count()) if device == "cuda" else 0


class RunTimedOut(Exception):
    """A run went past its deadline (``deadline``)."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise ``RunTimedOut`` in this (main) thread after ``seconds``; a launcher then stops its ranks.
    For runs trained in this process's own launcher (bench-gpu's sides); the check's runs are timed
    by the groups that train them."""

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


def one_run(overrides: list[str], groups: RankGroups, timeout_s: float) -> Outcome:
    """Compose, check and prepare one run as ``dygsched run`` does before its launcher starts the
    ranks (``launch.app.claim_run``), then train it on the check's ranks of its world size and
    device (``groups``) within ``timeout_s``; every failure becomes the outcome, and a run that did
    not end ok is marked failed in its folder as ``dygsched run`` marks it."""
    import torch

    from dygsched.engine.checkpoint import mark_failed
    from dygsched.launch.app import claim_run
    from dygsched.launch.checks import check_point
    from dygsched.launch.compose import compose_run
    from dygsched.launch.local import DATA_FILE
    from dygsched.metrics.atomic import write_with

    start = time.monotonic()
    try:
        checked, world_size = check_point(compose_run(overrides))
        claimed = claim_run(checked, world_size)
    except Terminated:  # the check itself is stopped: no further run
        raise
    except Exception as exc:  # the run's own one-line refusal (ConfigError, DataError), or anything else
        return Outcome("failed", time.monotonic() - start, reason=_reason(exc))
    run, folder = claimed.run, claimed.folder
    key = GroupKey(world_size, str(run.device), str(run.dist_backend or "auto"), float(run.dist_timeout_s))
    data_path = folder.path / DATA_FILE
    try:
        folder.path.mkdir(parents=True, exist_ok=True)
        write_with(data_path, lambda tmp: torch.save(claimed.data, tmp))  # as the local launcher leaves it
        end = groups.train(key, Job(run, str(folder.path)), timeout_s)
    except OSError as exc:  # its folder cannot be written
        return Outcome("failed", time.monotonic() - start, reason=_reason(exc))
    except BaseException as exc:  # the check stopped (SIGTERM, Ctrl-C) while the ranks trained it
        _mark(mark_failed, folder, run.identity(folder.run_id, world_size), str(exc) or "interrupted")
        raise
    finally:
        data_path.unlink(missing_ok=True)
    wall = time.monotonic() - start - end.start_s  # the run's own seconds: its group's start is a line of its own
    if end.status != "ok":
        _mark(mark_failed, folder, run.identity(folder.run_id, world_size), f"{end.status} in the GPU check: {end.reason}")
        return Outcome(end.status, wall, reason=one_line(end.reason))
    summary: dict[str, Any] = {**folder.read_summary(), "run_dir": str(folder.path)}
    status = "ok" if summary.get("status") == "ok" else "failed"
    return Outcome(
        status,
        wall,
        summary.get("epoch_time_s"),
        summary.get("final_train_loss"),
        gpu_peaks(folder.path),
        run_backend(folder.path, summary),
        "" if status == "ok" else one_line(str(summary.get("reason", "not ok"))),
    )


def _reason(exc: BaseException) -> str:
    return one_line(str(exc) if isinstance(exc, DygschedError) else f"{type(exc).__name__}: {exc}")


def _mark(mark_failed: Any, folder: Any, identity: dict[str, Any], reason: str) -> None:
    """The run's folder marked failed with ``reason`` (as ``dygsched run`` marks a failed launch); a
    folder that cannot be written keeps what it has (the row says why the run failed)."""
    try:
        mark_failed(folder, identity, reason)
    except OSError:
        pass


def variant_row(
    part: str,
    variant: Variant,
    world_size: int,
    device: str,
    results: Path,
    args: argparse.Namespace,
    clock: Clock,
    groups: RankGroups,
) -> Row:
    """``variant`` at ``world_size`` on ``device``, then its CPU twin (unless ``--no-twins``)."""
    label = f"{part} {variant.name} on {device}"
    if clock.left() <= 0:
        return Row(
            part, variant.name, world_size, device, "skipped", reason=f"the check's budget of {args.budget_s:.0f} s ran out"
        )
    clock.say(f"{label} ...")  # a run started gets its whole deadline (and its ranks' start theirs)
    outcome = one_run(run_overrides(variant, world_size, device, results, args.dist_timeout_s), groups, args.run_timeout_s)
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
    twin_overrides = run_overrides(variant, world_size, "cpu", results, args.dist_timeout_s, "-twin")
    twin = one_run(twin_overrides, groups, args.run_timeout_s)
    row.cpu_status, row.cpu_epoch_time_s, row.cpu_final_loss = twin.status, twin.epoch_time_s, twin.final_loss
    row.loss_rel_diff, row.loss_check = loss_check(row.final_loss, row.cpu_final_loss)
    if twin.status != "ok":
        row.reason = f"cpu run {twin.status}: {twin.reason}"
    clock.say(
        f"{label}: cpu twin {twin.status} in {twin.wall_s:.1f} s; "
        f"final loss {cell(row.final_loss)} vs {cell(row.cpu_final_loss)} ({row.loss_check or 'n/a'})"
    )
    return row
