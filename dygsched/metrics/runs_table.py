"""The shared runs table: one row per run, written under a lock so concurrent runs never corrupt it.

Every update reads the table, replaces the run's row (a resumed or re-marked run keeps one row)
and writes the whole table to a temporary name that is then renamed over it: a reader sees the
table before or after an update, never half of one, and a writer killed mid-update leaves the
previous table intact.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from dygsched.errors import DataError
from dygsched.metrics.atomic import write_parquet
from dygsched.metrics.summary import EPOCH_FIELDS, EPOCHS_COUNTED_FROM

RUNS_TABLE = "runs.parquet"
# Older runs wrote one `peak_mem_bytes` for two measures (the GPU allocator's peak on a GPU, the peak
# resident set on a CPU); a reader shows it under a name that says it is either, never as one of them.
LEGACY_COLUMNS = {"peak_mem_bytes": "peak_mem_bytes_gpu_or_rss"}


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def flatten(summary: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested summary -> flat columns (``eval.metric``, ``comm_bytes_per_epoch.allreduce``...)."""
    flat: dict[str, Any] = {}
    for key, value in summary.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def _read_table(path: Path) -> pd.DataFrame:
    """The runs table at ``path``; one ``DataError`` line naming the file if it cannot be read."""
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several kinds for a damaged file
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(
            f"the runs table {path} cannot be read ({reason}); move it aside: every run's folder keeps its summary.json"
        ) from None


def check_runs_table(results_dir: Path) -> None:
    """Before a run trains: the table its row will be appended to must be readable (or absent)."""
    path = Path(results_dir) / RUNS_TABLE
    if path.exists():
        _read_table(path)


def append_run(results_dir: Path, summary: dict[str, Any]) -> Path:
    """Add the run's row, replacing an earlier row of the same ``run_id`` (a resume, a failure re-marked)."""
    path = Path(results_dir) / RUNS_TABLE
    path.parent.mkdir(parents=True, exist_ok=True)
    row = pd.DataFrame([flatten(summary)])
    with _locked(path):
        if path.exists():
            frame = _read_table(path)
            if "run_id" in frame.columns and "run_id" in row.columns:
                frame = frame[frame["run_id"] != row["run_id"].iloc[0]]
            row = pd.concat([frame, row], ignore_index=True) if not frame.empty else row
        write_parquet(path, row)
    return path


def keep_runs(results_dir: Path, run_ids: set[str]) -> None:
    """Drop every row whose ``run_id`` is not one of ``run_ids`` (an interrupted sweep's unfinished runs)."""
    path = Path(results_dir) / RUNS_TABLE
    if not path.exists():
        return
    with _locked(path):
        frame = _read_table(path)
        write_parquet(path, frame[frame["run_id"].isin(run_ids)].reset_index(drop=True))


def read_runs(results_dir: Path) -> pd.DataFrame:
    path = Path(results_dir) / RUNS_TABLE
    return epochs_from_one(_read_table(path).rename(columns=LEGACY_COLUMNS)) if path.exists() else pd.DataFrame()


def epochs_from_one(frame: pd.DataFrame) -> pd.DataFrame:
    """Runs-table rows with every epoch number counted from 1; rows written before that rule
    (no ``epochs_counted_from``) counted from 0 and are shifted (``summary.EPOCHS_COUNTED_FROM``)."""
    if frame.empty:
        return frame
    old = frame["epochs_counted_from"].isna() if "epochs_counted_from" in frame.columns else pd.Series(True, index=frame.index)
    if not old.any():
        return frame
    frame = frame.copy()
    for column in EPOCH_FIELDS:
        if column in frame.columns:
            frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
            frame.loc[old, column] = frame.loc[old, column] + 1
    frame["epochs_counted_from"] = EPOCHS_COUNTED_FROM
    return frame


def runs_from_folders(results_dir: Path) -> pd.DataFrame:
    """The rows the table would hold, rebuilt from the run folders' ``summary.json`` (unreadable ones skipped)."""
    import json

    rows = []
    for summary_path in sorted(Path(results_dir).glob("*/summary.json")):
        try:
            rows.append(flatten(json.loads(summary_path.read_text())))
        except (OSError, ValueError):
            continue
    return epochs_from_one(pd.DataFrame(rows).rename(columns=LEGACY_COLUMNS))
