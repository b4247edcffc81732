"""The shared runs table: one row per run, appended under a lock so concurrent runs never corrupt it."""

from __future__ import annotations

import fcntl
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from dygsched.metrics.atomic import write_parquet

RUNS_TABLE = "runs.parquet"


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


def append_run(results_dir: Path, summary: dict[str, Any]) -> Path:
    path = Path(results_dir) / RUNS_TABLE
    row = pd.DataFrame([flatten(summary)])
    with _locked(path):
        frame = pd.concat([pd.read_parquet(path), row], ignore_index=True) if path.exists() else row
        write_parquet(path, frame)
    return path


def read_runs(results_dir: Path) -> pd.DataFrame:
    path = Path(results_dir) / RUNS_TABLE
    return pd.read_parquet(path) if path.exists() else pd.DataFrame()
