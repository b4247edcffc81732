"""Per-epoch checkpoints, and finding the run a ``resume=...`` continues.

At the end of every epoch rank 0 writes ``checkpoint.pt`` into the run folder, atomically (a
temporary name, then a rename): the model and optimizer states (identical on every rank after
the gradient all-reduce, so rank 0's copy serves all), the last completed epoch, the strategy's
state (``Strategy.state_dict``: for snapshot groups, the plan being trained and whether it already
replaced the profiling plan; for the node-memory strategies, the node state their validation started
from, gathered to rank 0 by ``Strategy.collect_for_checkpoint`` on every rank, which resuming does
not read), the metrics not measured and why, and every rank's random
number generator states (torch, numpy, random and, on GPU, CUDA; gathered to rank 0). Only plain
containers and tensors are stored, so it loads with ``weights_only=True``. The metric rows are not
in it: each epoch's rows are written beside it (``RunFolder.save_epoch_rows``) before it, and its
own ``checkpoint_s``/``checkpoint_bytes`` rows after it, so the checkpoint stays the size of the
model however long the run.

Resuming loads it on rank 0, which hands every rank the model, the optimizer and its own RNG
states; training continues at the next epoch exactly as if it had never stopped. What it resumes
is found by ``find_resume``: the run folder's ``config.yaml``, read back as a typed ``RunConfig``,
must equal the run's own, setting by setting, but for those a resumed run may change
(``resumable.RESUMABLE_CHANGES``). ``resume=true`` with no such run refuses to start (a requeued or retyped
command would otherwise train a new run of the full length unnoticed); ``resume=auto`` starts one.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dygsched.engine.resumable import (
    CHECKPOINT_FILE,
    NEW_IF_NONE,
    checkpoint_path,
    config_differences,
    latest_resumable,
    nothing_to_resume,
    require_checkpoint,
    resume_folder,
    saved_config,
)
from dygsched.engine.run_config import RunConfig
from dygsched.errors import ConfigError
from dygsched.metrics.atomic import write_with
from dygsched.metrics.recorder import MetricRecorder
from dygsched.metrics.run_folder import RunFolder

FORMAT_VERSION = 3  # 3: metric rows in the run folder's metrics.epochs; 2 held them under "rows"
READABLE_FORMATS = (2, FORMAT_VERSION)  # a format-2 checkpoint resumes with the rows it carries


def capture_rng(device: torch.device) -> dict[str, Any]:
    """This process's RNG states as plain values (numpy's key array as a list)."""
    name, keys, pos, has_gauss, cached = np.random.get_state()
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": (str(name), [int(k) for k in keys], int(pos), int(has_gauss), float(cached)),
        "random": random.getstate(),
    }
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def restore_rng(state: Mapping[str, Any], device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))
    version, internal, gauss = state["random"]
    random.setstate((version, tuple(internal), gauss))
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def save_checkpoint(run_dir: Path, state: Mapping[str, Any]) -> int:
    """Write ``state`` (with the format version) atomically; returns its size in bytes."""
    path = checkpoint_path(run_dir)
    write_with(path, lambda tmp: torch.save({"format": FORMAT_VERSION, **state}, tmp))
    return path.stat().st_size


def load_checkpoint(run_dir: Path) -> dict[str, Any]:
    path = checkpoint_path(run_dir)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise ConfigError(f"cannot resume: {Path(run_dir)} has no {CHECKPOINT_FILE}") from None
    except Exception as exc:  # truncated by hand, another format, not a checkpoint at all
        raise ConfigError(f"cannot resume: {path} is not a readable checkpoint ({str(exc).strip().splitlines()[0]})") from None
    if not isinstance(state, dict) or state.get("format") not in READABLE_FORMATS:
        raise ConfigError(f"cannot resume: {path} is not a dygsched checkpoint of format {FORMAT_VERSION}")
    return state


def mark_failed(folder: RunFolder, run_info: dict[str, Any], reason: str) -> dict[str, Any]:
    """Mark the run failed with ``reason``, keeping the metrics of its completed epochs."""
    frame = folder.epoch_rows()
    if frame is None:  # a run folder of format 2 keeps its rows in the checkpoint
        try:
            rows = load_checkpoint(folder.path).get("rows")
            frame = MetricRecorder.frame([tuple(row) for row in rows]) if rows else None
        except ConfigError:  # no checkpoint either: failed in its first epoch
            pass
    return folder.fail(run_info, reason, frame)


def resumed_rows(folder: RunFolder, state: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """The metric rows of the epochs a checkpoint completed, from the run folder (or, for a
    format-2 checkpoint, from the checkpoint itself); a later epoch's rows are dropped."""
    if "rows" in state:
        return [tuple(row) for row in state["rows"]]
    frame = folder.resume_epoch_rows(through_epoch=int(state["epoch"]))
    return [] if frame is None else list(frame.itertuples(index=False, name=None))


def check_resumable(run_dir: Path, run: RunConfig) -> None:
    """Raise ``ConfigError`` unless ``run_dir`` has a checkpoint written under the same settings."""
    require_checkpoint(run_dir)
    changed = config_differences(saved_config(run_dir), run)
    if changed:
        raise ConfigError(f"cannot resume {Path(run_dir).name}: its settings differ: {'; '.join(changed[:6])}")


def find_resume(run: RunConfig) -> Path | None:
    """The run folder ``run.resume`` names, checked; ``None`` when there is nothing to resume.

    ``resume=<folder>`` must hold a checkpoint of a run with the same settings (``epochs`` and the
    runtime settings in ``RESUMABLE_CHANGES`` may differ). ``resume=true`` takes the most recently
    checkpointed run in ``results_dir`` (or the ``run_id`` given) with the same settings, and is
    refused when there is none; ``resume=auto`` then starts a new run.
    """
    resume = run.resume
    if resume is None or resume is False:
        return None
    if resume is True or resume == NEW_IF_NONE:
        found = latest_resumable(run)
        if found is None and resume is True:
            raise ConfigError(nothing_to_resume(run))
        if found is not None:
            check_epochs_left(found, run)
        return found
    folder = resume_folder(resume)
    check_resumable(folder, run)
    check_epochs_left(folder, run)
    return folder


def check_epochs_left(folder: Path, run: RunConfig) -> None:
    """Refuse ``epochs`` below what the run already completed: its summary would contradict itself."""
    completed = int(load_checkpoint(folder)["epoch"]) + 1
    if run.epochs < completed:
        raise ConfigError(
            f"cannot resume {folder.name} with epochs={run.epochs}: it has completed {completed} epochs already "
            f"(give epochs={completed} or more)"
        )
