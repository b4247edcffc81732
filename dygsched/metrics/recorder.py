"""Tidy metric rows: ``run_id, epoch, iteration, rank, phase, metric, value``.

A metric a strategy did not measure is a row whose value is NaN, and its reason is kept in
``missing`` (it reaches the summary): never a 0 that reads as a measurement.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

COLUMNS = ["run_id", "epoch", "iteration", "rank", "phase", "metric", "value"]
EPOCH_LEVEL = -1  # ``iteration`` of rows that describe a whole epoch
EVAL_TIME = "eval_time_s"  # val / test rows: the wall time of the phase's evaluation (rank 0's), not a task metric


Row = tuple[str, int, int, int, str, str, float]  # one row of ``COLUMNS``


@dataclass
class MetricRecorder:
    """Collects one rank's rows; ranks' recorders are gathered and concatenated on rank 0."""

    run_id: str
    rank: int
    rows: list[Row] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)  # metric -> why it was not measured

    def add(self, epoch: int, phase: str, metric: str, value: float, iteration: int = EPOCH_LEVEL) -> None:
        self.rows.append((self.run_id, epoch, iteration, self.rank, phase, metric, float(value)))

    def add_missing(self, epoch: int, phase: str, metric: str, reason: str, iteration: int = EPOCH_LEVEL) -> None:
        """A metric that was not measured: a NaN row, and ``reason`` in ``missing``."""
        self.rows.append((self.run_id, epoch, iteration, self.rank, phase, metric, float("nan")))
        self.missing[metric] = reason

    def take(self) -> list[Row]:
        """The rows recorded since the last ``take`` (rank 0 collects them at every epoch's end)."""
        rows, self.rows = self.rows, []
        return rows

    @staticmethod
    def frame(rows: list[Row]) -> pd.DataFrame:
        frame = pd.DataFrame(rows, columns=COLUMNS)
        return frame.astype({"epoch": "int32", "iteration": "int32", "rank": "int32", "value": "float64"})
