"""A run's metrics table, made by hand for the benchmarks' tests."""

from __future__ import annotations

import pandas as pd


def metric_rows(run_id: str, rows: list[tuple[int, int, int, str, str, float]]) -> pd.DataFrame:
    """A run's metrics.parquet from (epoch, iteration, rank, phase, metric, value) rows."""
    frame = pd.DataFrame(rows, columns=["epoch", "iteration", "rank", "phase", "metric", "value"])
    return frame.assign(run_id=run_id)[["run_id", "epoch", "iteration", "rank", "phase", "metric", "value"]]
