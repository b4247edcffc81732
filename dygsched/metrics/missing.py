"""A metric's value: a number, or ``Missing(reason)`` for what a run does not measure (a NaN row
in the metrics table, its reason in the summary's ``missing``; never a 0 that reads as a measurement)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Missing:
    """A metric a strategy does not measure, and why (recorded as NaN with this reason)."""

    reason: str


MetricValue = float | int | Missing
