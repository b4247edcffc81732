"""Time to a target: how long training takes to first reach a validation MSE, from a run's per-epoch rows.

A convergence time (FlareDTDG's tables 8 and 9) compares variants at one accuracy, not per epoch:
each variant trains until its validation MSE first reaches a common target, and the figure is the
training wall time up to and including that epoch. ``epoch_curve`` reads a run's ``metrics.parquet``
into one row per epoch; ``time_to_target`` is the pure rule on that curve. A target never reached is
missing (NaN), never 0 and never the run's whole time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from dygsched.metrics.recorder import EPOCH_LEVEL


def epoch_curve(metrics: pd.DataFrame) -> pd.DataFrame:
    """One row per epoch, in order: ``epoch``, ``epoch_time_s`` (the slowest rank's training time of
    the epoch; evaluation is not in it) and ``val_mse`` (the validation MSE after the epoch)."""
    epochs = metrics[metrics["iteration"] == EPOCH_LEVEL]
    train = epochs[(epochs["phase"] == "train") & (epochs["metric"] == "epoch_time_s")].groupby("epoch")["value"].max()
    val = epochs[(epochs["phase"] == "val") & (epochs["metric"] == "mse")].groupby("epoch")["value"].first()
    curve = pd.DataFrame({"epoch_time_s": train, "val_mse": val}).rename_axis("epoch").reset_index()
    return curve.sort_values("epoch", ignore_index=True)


def target_mse(best: float, tolerance: float) -> float:
    """The common target: the best validation MSE of the reference variant, ``tolerance`` (relative) above it."""
    if tolerance < 0:
        raise ValueError(f"the tolerance is a relative margin above the best MSE, at least 0 (got {tolerance})")
    return best * (1.0 + tolerance)


@dataclass(frozen=True)
class TimeToTarget:
    reached: bool
    seconds: float  # training wall time through the first epoch at or below the target; NaN when not reached
    epochs: float  # epochs trained to reach it (the first epoch counts as 1); NaN when not reached
    epochs_run: int  # epochs the run trained in all

    @property
    def note(self) -> str:
        if self.reached:
            return f"reached in {int(self.epochs)} of {self.epochs_run} epochs"
        return f"not reached in {self.epochs_run} epochs"


def time_to_target(per_epoch: pd.DataFrame, target: float) -> TimeToTarget:
    """Stop at the FIRST epoch whose ``val_mse`` is at most ``target``: the cumulative ``epoch_time_s``
    through it, and how many epochs that was. A later, better epoch changes nothing; an epoch with no
    time recorded makes the time missing; a NaN target (no reference run) is never reached."""
    curve = per_epoch.sort_values("epoch", ignore_index=True)
    met = (curve["val_mse"] <= target).to_numpy()  # False for a NaN target or a NaN MSE
    if not met.any():
        return TimeToTarget(False, math.nan, math.nan, len(curve))
    epochs = int(met.argmax()) + 1
    seconds = float(curve["epoch_time_s"].iloc[:epochs].sum(min_count=epochs))  # NaN if an epoch's time is missing
    return TimeToTarget(True, seconds, float(epochs), len(curve))
