"""Early stopping on a validation metric, and model selection at the best validation epoch.

``early_stop.metric=val.ap early_stop.patience=N`` stops a run once the validation metric has not
improved for ``N`` epochs in a row, and the run then reports the test metrics of its best
validation epoch (DyGLib's and TGB's protocol). ``early_stop.mode`` says which way is better
(``max`` or ``min``; unset: ``min`` for ``loss``, ``mse`` and ``mae``, ``max`` otherwise).

An epoch improves on the best only when its value is strictly better, so ties keep the earlier
epoch (as ``idxmax`` does). A value that is missing or NaN never improves: it counts as an epoch
without improvement. ``EarlyStopping`` is plain Python, decided on rank 0 and broadcast by the
worker; its state is a small dict a checkpoint keeps, so a resumed run stops where the uninterrupted
run would have. ``best_epoch`` selects an epoch from a run's metric rows (the paper targets' model
selection).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dygsched.errors import ConfigError
from dygsched.metrics.recorder import EPOCH_LEVEL

LOWER_IS_BETTER = ("loss", "mse", "mae")
PHASE = "val"


def parse_metric(name: str) -> str:
    """``val.ap`` -> ``ap``: the validation metric an early stop watches (one ``ConfigError`` line otherwise)."""
    phase, dot, metric = str(name).partition(".")
    if not dot or phase != PHASE or not metric:
        raise ConfigError(f"early_stop.metric names a validation metric as val.<metric> (e.g. val.ap, val.loss), got {name!r}")
    return metric


def watched_metric(name: str, recorded: Collection[str]) -> str:
    """The recorded validation metric ``early_stop.metric`` watches: the name itself, or, where
    several samplers label every metric (``eval.negatives=[random,historical]``: ``ap[historical]``),
    the plain name read under the random sampler, the one DyGLib and TGL select on (``val.ap`` ->
    ``ap[random-destinations]``). Any other miss is one ``ConfigError`` line listing what is recorded,
    each bracketed name with the quoting a shell and Hydra need."""
    metric = parse_metric(name)
    if metric in recorded:
        return metric
    random = [r for r in recorded if r.startswith(f"{metric}[random")]
    if "[" not in metric and len(random) == 1:
        return random[0]
    shown = ", ".join(f"val.{r}" for r in sorted(recorded))
    labelled = sorted(r for r in recorded if "[" in r and r.startswith(f"{metric.split('[')[0]}["))
    example = labelled[0] if labelled else next((r for r in sorted(recorded) if "[" in r), None)
    spelling = f"; a bracketed name goes quoted: \"early_stop.metric='val.{example}'\"" if example else ""
    raise ConfigError(f"early_stop.metric={name}: the run does not record it (it records {shown}){spelling}")


def default_mode(metric: str) -> str:
    return "min" if metric.split("[")[0] in LOWER_IS_BETTER else "max"  # loss[historical] is a loss too


@dataclass
class EarlyStopping:
    """The best validation value so far, its epoch, and the epochs since it improved."""

    metric: str  # as configured, e.g. val.ap
    patience: int
    mode: str = "max"
    best_epoch: int | None = None
    best_value: float | None = None
    epochs_without_improvement: int = 0
    stopped_epoch: int | None = None  # the epoch after which the run stopped, if it stopped early

    def observe(self, epoch: int, value: float | None) -> bool:
        """Record ``epoch``'s validation value; true when the run stops after this epoch."""
        measured = float("nan") if value is None else float(value)
        if not math.isnan(measured) and (self.best_value is None or self._better(measured, self.best_value)):
            self.best_epoch, self.best_value = epoch, measured
            self.epochs_without_improvement = 0
        else:
            self.epochs_without_improvement += 1
        if self.epochs_without_improvement >= self.patience:
            self.stopped_epoch = epoch
        return self.stopped

    def _better(self, value: float, best: float) -> bool:
        return value > best if self.mode == "max" else value < best

    @property
    def stopped(self) -> bool:
        return self.stopped_epoch is not None

    def reason(self) -> str | None:
        if not self.stopped:
            return None
        if self.best_epoch is None:
            return f"{self.metric} was never measured in {self.patience} epochs"
        return (
            f"{self.metric} did not improve on epoch {self.best_epoch + 1}'s {self.best_value:.6g} "
            f"for {self.patience} epoch(s) (mode={self.mode})"
        )

    def state_dict(self) -> dict[str, Any]:
        return {
            "best_epoch": self.best_epoch,
            "best_value": self.best_value,
            "epochs_without_improvement": self.epochs_without_improvement,
            "stopped_epoch": self.stopped_epoch,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best_epoch = state.get("best_epoch")
        self.best_value = state.get("best_value")
        self.epochs_without_improvement = int(state.get("epochs_without_improvement", 0))
        self.stopped_epoch = state.get("stopped_epoch")

    def describe(self) -> dict[str, Any]:
        """The summary's ``early_stop`` block (flattened into the runs table as ``early_stop.*``),
        its epochs counted from 1 as the log counts them (the state, like the metric rows, from 0)."""
        return {
            "metric": self.metric,
            "mode": self.mode,
            "patience": self.patience,
            "best_epoch": None if self.best_epoch is None else self.best_epoch + 1,
            "best_value": self.best_value,
            "stopped_early": self.stopped,
            "stopped_epoch": None if self.stopped_epoch is None else self.stopped_epoch + 1,
            "reason": self.reason(),
        }


def best_epoch(metrics: pd.DataFrame, metric: str, mode: str = "max", phase: str = PHASE) -> int | None:
    """The first epoch whose ``phase`` ``metric`` is the best (``mode``) among a run's epoch-level
    rows (NaN rows skipped); ``None`` when no epoch measured it."""
    rows = metrics[(metrics["iteration"] == EPOCH_LEVEL) & (metrics["phase"] == phase) & (metrics["metric"] == metric)]
    values = rows.groupby("epoch")["value"].first().dropna()
    if values.empty:
        return None
    return int(values.idxmax() if mode == "max" else values.idxmin())


def all_metrics_selection(values: pd.DataFrame, patience: int, planned_epochs: int) -> int | None:
    """The epoch DyGLib's early stopping selects from a run's validation figures (``values``: one row
    per epoch, in order, one column per metric, higher better): an epoch is better when every metric
    is at least its best so far (a tie counts, so it selects the later epoch), and the run stops after
    ``patience`` epochs that are not. ``None`` where that rule would still be training after the
    epochs recorded (the run stopped sooner under another rule, short of ``planned_epochs``)."""
    best: pd.Series | None = None
    selected, waited = None, 0
    for epoch, row in values.iterrows():
        if row.isna().any():
            waited += 1
        elif best is None or bool((row >= best).all()):
            best, selected, waited = row, int(epoch), 0
        else:
            waited += 1
        if waited >= patience:
            return selected
    return selected if len(values) >= planned_epochs else None
