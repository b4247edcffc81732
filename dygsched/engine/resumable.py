"""What a resume may change and which run folder it names, without torch: ``dygsched run
resume=<run folder>`` reads the run's own configuration (``launch/resume.py``) before the command
imports torch, and ``checkpoint.find_resume`` checks the run against it with the same rules."""

from __future__ import annotations

from pathlib import Path

from dygsched.engine.run_config import RunConfig, saved_run
from dygsched.errors import ConfigError
from dygsched.typed_config import differences

CHECKPOINT_FILE = "checkpoint.pt"
NEW_IF_NONE = "auto"  # resume=auto: the latest checkpointed run with these settings, else a new run

# Settings a resumed run may change: they do not alter what is trained or how.
RESUMABLE_CHANGES = (
    "epochs",
    "progress",
    "dist_timeout_s",
    "dist_backend",  # how the ranks talk, not what they compute
    "results_dir",
    "run_id",
    "resume",
    "launcher",
    "checkpoint",
    "device",
    "metrics",  # what is counted, not what is trained
    "grad_sync",  # bucket sizes and overlap: the same sums, element by element
)


def checkpoint_path(run_dir: Path) -> Path:
    return Path(run_dir) / CHECKPOINT_FILE


def config_differences(saved: RunConfig, current: RunConfig) -> list[str]:
    """``setting (saved -> current)`` for every setting that differs, except the resumable ones."""
    return sorted(differences(saved, current, skip=RESUMABLE_CHANGES))


def saved_config(run_dir: Path) -> RunConfig:
    """The typed configuration a run folder's ``config.yaml`` holds (``saved_run``)."""
    try:
        return saved_run(run_dir)
    except ConfigError as exc:
        raise ConfigError(f"cannot resume: {exc}") from None


def require_checkpoint(run_dir: Path) -> None:
    if not checkpoint_path(run_dir).is_file():
        raise ConfigError(f"cannot resume: {run_dir} has no {CHECKPOINT_FILE} (not a run folder, or no epoch completed)")


def resume_folder(resume: str) -> Path:
    """The run folder ``resume=<folder>`` names (its ``checkpoint.pt`` named instead is its folder)."""
    folder = Path(resume).expanduser()
    if folder.name == CHECKPOINT_FILE:
        folder = folder.parent
    if not folder.is_dir():
        raise ConfigError(f"cannot resume: no run folder {folder}")
    return folder


def latest_resumable(run: RunConfig) -> Path | None:
    """The most recently checkpointed run in ``results_dir`` (or the ``run_id`` given) with ``run``'s settings."""
    results = Path(run.results_dir)
    if run.run_id:
        folder = results / run.run_id
        return folder if checkpoint_path(folder).is_file() and not _differs(folder, run) else None
    candidates = [p.parent for p in results.glob(f"*/{CHECKPOINT_FILE}") if not _differs(p.parent, run)]
    return max(candidates, key=lambda p: checkpoint_path(p).stat().st_mtime, default=None)


def nothing_to_resume(run: RunConfig) -> str:
    """``resume=true`` found no run to continue: where it looked, why the runs there did not match,
    and the two ways on."""
    results = Path(run.results_dir)
    if run.run_id:
        folder = results / run.run_id
        if not checkpoint_path(folder).is_file():
            why = f"{folder} holds no checkpointed run"
        else:
            changed = _changes(folder, run)
            why = f"{folder} ran with other settings: {'; '.join(changed[:6]) or 'its config.yaml cannot be read'}"
    else:
        others = len(list(results.glob(f"*/{CHECKPOINT_FILE}")))
        why = f"{results} holds no checkpointed run with these settings" + (f" ({others} with other settings)" if others else "")
    ways = "resume=auto starts a new run when there is none, resume=<run folder> names one"
    return f"resume=true: nothing to resume: {why}; {ways}"


def _differs(folder: Path, run: RunConfig) -> bool:
    try:
        return bool(config_differences(saved_config(folder), run))
    except ConfigError:
        return True


def _changes(folder: Path, run: RunConfig) -> list[str]:
    try:
        return config_differences(saved_config(folder), run)
    except ConfigError:
        return []
