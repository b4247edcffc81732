"""What the engine's benchmarks share: their report section and reading a run's epoch rows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dygsched.metrics.recorder import EPOCH_LEVEL
from dygsched.paper.target import Section

SECTION = Section(
    "engine",
    "Engine speed",
    "One rank against the loops users write by hand, what instrumentation costs, and how time and memory grow with the graph.",
)
ACCURACY_SECTION = Section(
    "accuracy",
    "Accuracy under published protocols",
    "What the models reach under DyGLib's, UTG's and TGB's protocols, beside the figures those benchmarks publish.",
)


__all__ = ["ACCURACY_SECTION", "EPOCH_LEVEL", "SECTION", "epoch_rows", "growth_exponent", "rounded", "training_curve"]


def epoch_rows(metrics: pd.DataFrame, phase: str, metric: str) -> pd.DataFrame:
    """One run's epoch-level rows of ``metric`` in ``phase`` (``train``, ``val``, ``test``)."""
    rows = metrics[(metrics["iteration"] == EPOCH_LEVEL) & (metrics["phase"] == phase) & (metrics["metric"] == metric)]
    return rows.sort_values("epoch")


def training_curve(metrics: pd.DataFrame, groups: int = 1) -> tuple[list[float], list[float]]:
    """Each training epoch's time (over ``groups``: per training group) and its mean training loss."""
    epoch_times = (epoch_rows(metrics, "train", "epoch_time_s")["value"] / groups).tolist()
    losses = metrics[(metrics["phase"] == "train") & (metrics["metric"] == "loss") & (metrics["iteration"] >= 0)]
    return epoch_times, losses.groupby("epoch")["value"].mean().tolist()


def growth_exponent(frame: pd.DataFrame, x: str, column: str) -> float:
    """The slope of log(column) against log(x) by least squares: 1.0 is linear growth."""
    ok = frame[column].notna() & (frame[column] > 0)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(frame.loc[ok, x].astype(float)), np.log(frame.loc[ok, column].astype(float)), 1)[0])


def rounded(values: list[float], digits: int) -> list[float]:
    return [round(value, digits) for value in values]
