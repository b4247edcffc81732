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

from dygsched.metrics.atomic import write_parquet

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


def append_run(results_dir: Path, summary: dict[str, Any]) -> Path:
    """Add the run's row, replacing an earlier row of the same ``run_id`` (a resume, a failure re-marked)."""
    path = Path(results_dir) / RUNS_TABLE
    path.parent.mkdir(parents=True, exist_ok=True)
    row = pd.DataFrame([flatten(summary)])
    with _locked(path):
        if path.exists():
            frame = pd.read_parquet(path)
            if "run_id" in frame.columns and "run_id" in row.columns:
                frame = frame[frame["run_id"] != row["run_id"].iloc[0]]
            row = pd.concat([frame, row], ignore_index=True) if not frame.empty else row
        write_parquet(path, row)
    return path


def read_runs(results_dir: Path) -> pd.DataFrame:
    path = Path(results_dir) / RUNS_TABLE
    return pd.read_parquet(path).rename(columns=LEGACY_COLUMNS) if path.exists() else pd.DataFrame()


def completed_runs(results: Path, who: str) -> list[tuple[dict, pd.DataFrame, dict]]:
    """Every finished run under ``results``: its summary, metrics table and config (unresolved).
    Exits with one line naming ``who`` when there is none (the sweep has not run)."""
    import json

    from omegaconf import OmegaConf

    found = []
    for summary_path in sorted(Path(results).glob("*/summary.json")):
        summary = json.loads(summary_path.read_text())
        if summary.get("status") == "ok":
            cfg = OmegaConf.to_container(OmegaConf.load(summary_path.parent / "config.yaml"), resolve=False)
            found.append((summary, pd.read_parquet(summary_path.parent / "metrics.parquet"), cfg))
    if not found:
        raise SystemExit(f"{who}: no completed runs under {results}: run the sweep first")
    return found
