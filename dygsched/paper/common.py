"""What several paper modules use: reading a sweep's runs, writing a table, and the words and
numbers their readings and headlines are made of."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from dygsched.errors import DygschedError
from dygsched.metrics.atomic import write_with
from dygsched.paper.target import Tables

if TYPE_CHECKING:
    from dygsched.engine.run_config import RunConfig


def completed_runs(folder: Path) -> pd.DataFrame:
    """The ``ok`` rows of a sweep folder's ``runs.parquet``; one clear error when there is none."""
    path = Path(folder) / "runs.parquet"
    if not path.is_file():
        raise DygschedError(f"no runs table at {path}: run the target's sweep first")
    runs = pd.read_parquet(path)
    return runs[runs["status"] == "ok"].reset_index(drop=True)


def finished_runs(folder: Path) -> list[tuple[dict[str, Any], pd.DataFrame, RunConfig]]:
    """Every finished run under a sweep: its summary, metrics table and typed configuration."""
    from dygsched.engine.run_config import saved_run

    found = []
    for summary_path in sorted(Path(folder).glob("*/summary.json")):
        summary = json.loads(summary_path.read_text())
        if summary.get("status") == "ok":
            run = saved_run(summary_path.parent)
            found.append((summary, pd.read_parquet(summary_path.parent / "metrics.parquet"), run))
    if not found:
        raise DygschedError(f"no finished runs under {folder}: run the target's sweep first")
    return found


def write_table(frame: pd.DataFrame, path: Path, *notes: str) -> Path:
    """Write ``frame`` as CSV whole (a temporary file renamed into place) and print it with ``notes``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_with(path, lambda temporary: frame.to_csv(temporary, index=False))
    with pd.option_context("display.width", 200, "display.max_columns", 40, "display.float_format", "{:.4g}".format):
        print(frame.to_string(index=False))
    for note in notes:
        print(note)
    print(f"written: {path}")
    return path


def table_named(tables: Tables, name: str = "") -> pd.DataFrame:
    """The table whose path ends with ``name`` (the only one when ``name`` is empty)."""
    for path, frame in tables.items():
        if path.endswith(name):
            return frame
    raise KeyError(f"no table {name!r}")


def times(value: float) -> str:
    return f"{value:.2f}x"


def percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def span(values: pd.Series, form: Callable[[float], str] = lambda v: f"{v:.3g}") -> str:
    low, high = values.min(), values.max()
    return form(low) if form(low) == form(high) else f"{form(low)} to {form(high)}"


def holds(count: int, total: int) -> str:
    return "holds on every row" if count == total else f"holds on {count} of {total} rows"


def geometric_mean(values: list[float] | pd.Series) -> float | None:
    """Of the finite, positive values; ``None`` when there are none (missing, never 0)."""
    kept = [float(v) for v in values if v is not None and v == v and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in kept) / len(kept)) if kept else None


def published_value(published: pd.DataFrame, row: str, column: str) -> float:
    """One number the paper states, by its row and column labels (exactly one must match)."""
    match = published[(published.row == row) & (published.column == column)]
    if len(match) != 1:
        raise KeyError(f"{len(match)} published rows for ({row!r}, {column!r})")
    return float(match.value.iloc[0])


def speedup_of_reductions(published: pd.DataFrame, row: str, low: str, high: str) -> float:
    """A stated range of time reductions (``low``-``high`` %) as one speedup: the geometric mean of
    the range's two ends, each as old time over new time."""
    ends = [1 / (1 - published_value(published, row, column) / 100) for column in (low, high)]
    return math.sqrt(ends[0] * ends[1])
